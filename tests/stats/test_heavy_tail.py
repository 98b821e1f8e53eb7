"""The heavy-tail rule's mechanics on synthetic samples whose tail index is known: Hill's
estimate and its interval on Pareto samples, the switch between the interval rule and the
predictive verdict, and the predictive verdict itself (a value drawn from the law it is judged
against is consistent; one far outside is not)."""

import math

import numpy as np
import pandas as pd
import pytest

from matcond.claims.evaluate import evaluate
from matcond.stats import heavy_tail
from matcond.stats.heavy_tail import (
    ALPHA,
    THRESHOLD,
    accepted_range,
    accepted_values,
    far_tail,
    hill,
    moment_exists,
    predictive,
    predictive_verdict,
    tail_probability,
)


def pareto(alpha: float, size, rng) -> np.ndarray:
    """Pareto(alpha) on [1, inf): P(X > x) = x^-alpha."""
    return rng.uniform(size=size) ** (-1 / alpha)


@pytest.mark.parametrize("alpha", [0.8, 1.5, 3.0, 6.0])
def test_hill_recovers_a_known_tail_index(alpha):
    tail = hill(pareto(alpha, 2000, np.random.default_rng(1)))
    assert tail.k == 200
    assert tail.low < alpha < tail.high
    assert tail.estimate == pytest.approx(alpha, rel=0.25)  # 3.5 standard errors at k = 200


def test_hill_interval_covers_at_its_nominal_rate():
    """Under an exact Pareto tail the interval is exact: 95 % coverage (400 samples of 200;
    the coverage's own standard error is 1.1 %)."""
    rng = np.random.default_rng(2)
    covered = [hill(pareto(1.0, 200, rng)) for _ in range(400)]
    rate = np.mean([t.low < 1.0 < t.high for t in covered])
    assert 0.91 <= rate <= 0.98


def test_the_switch_between_the_rules():
    """A tail index of 0.8 or 1.5 leaves the mean without a trusted interval; 6 keeps the mean's
    and the std's; a light, concentrated sample (norm errors) keeps both."""
    rng = np.random.default_rng(3)
    assert not moment_exists(hill(pareto(0.8, 2000, rng)), "mean")
    assert not moment_exists(hill(pareto(1.5, 2000, rng)), "mean")
    six = hill(pareto(6.0, 2000, rng))
    assert moment_exists(six, "mean") and moment_exists(six, "std")
    norms = hill(0.133 + 0.002 * rng.standard_normal(200))
    assert norms.low > 20 and moment_exists(norms, "std")
    assert THRESHOLD == {"mean": 2.0, "std": 4.0}


def test_hill_edge_cases():
    """Too few values: NaN (never trusted); a point mass at 0 under the tail: index 0; the
    largest values all equal: no tail (infinite index); infinite values are left out."""
    assert math.isnan(hill(np.arange(1.0, 11.0)).low)
    assert not moment_exists(hill(np.arange(1.0, 11.0)), "mean")
    assert hill(np.r_[np.zeros(30), np.ones(3)]).estimate == 0.0
    assert hill(np.r_[np.ones(20), np.zeros(5)]).estimate == math.inf
    with_inf = hill(np.r_[pareto(2.0, 100, np.random.default_rng(4)), np.inf])
    assert with_inf.k == 10 and math.isfinite(with_inf.estimate)


def test_tail_probability_of_a_value_and_of_a_range():
    draws = np.arange(1.0, 101.0)
    assert tail_probability(draws, 3.0) == pytest.approx(0.06)  # 2 x P(T <= 3)
    assert tail_probability(draws, 50.0) == 1.0
    assert tail_probability(draws, 200.0, 300.0) == 0.0
    assert tail_probability(draws, -5.0, 2.0) == pytest.approx(0.04)  # nearest point 2
    assert tail_probability(draws, 40.0, 60.0) == 1.0  # the range holds the middle


def test_the_accepted_range_holds_the_values_the_verdict_calls_consistent():
    """What a figure draws beside the paper's mean is what the verdict accepts: values on a
    grid across it, judged one by one (the verdict's own path, :func:`predictive`), are
    consistent inside it and not consistent 5 % beyond either end; it is the range
    predictive reports, and a constant pool accepts its constant only."""
    pool = pareto(1.2, 300, np.random.default_rng(2))
    low, high = accepted_values([pool], np.mean, 15)
    assert 1.0 < low < high < pool.max()
    for value in np.linspace(low, high, 6):
        result = predictive([pool], np.mean, 15, value)
        assert predictive_verdict(result) == "consistent"
        assert (result.accepted_low, result.accepted_high) == (low, high)
    for value in (0.95 * low, 1.05 * high):
        assert predictive_verdict(predictive([pool], np.mean, 15, value)) != "consistent"
    assert accepted_values([np.full(50, 2.0)], np.mean, 10) == (2.0, 2.0)


@pytest.mark.parametrize(
    "pool",
    [
        pareto(1.2, 300, np.random.default_rng(3)),  # accepted values a few chunks in
        np.r_[pareto(2.0, 40, np.random.default_rng(6)), np.full(40, np.nan)],  # NaN trials
        np.r_[np.ones(99), 1e6],  # draws with few distinct values: one chunk holds them
    ],
)
def test_the_accepted_range_is_what_judging_every_value_finds(pool):
    """accepted_range judges the draws' values from each end inwards, a chunk at a time, and
    stops at the first accepted one: it must find the ends that judging every value at once
    finds (the verdict's rule, written out here), for any chunk size."""
    draws, resampled = heavy_tail._sampling([pool], np.mean, 15)
    values = np.unique(draws[~np.isnan(draws)])
    p = heavy_tail._tail_probabilities(draws, values)
    p_low, _ = heavy_tail._p_interval(
        p, [heavy_tail._tail_probabilities(r, values) for r in resampled]
    )
    every = values[p_low >= ALPHA]
    expected = (every[0], every[-1]) if every.size else (math.nan, math.nan)
    for chunk in (1, 7, heavy_tail.ACCEPT_CHUNK):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(heavy_tail, "ACCEPT_CHUNK", chunk)
            found = accepted_range(draws, resampled)
        assert found == expected or all(map(math.isnan, (*found, *expected)))


def test_nothing_accepted_when_no_resampled_pool_has_a_finite_statistic():
    """Every resampled statistic NaN: the tail probability's interval is NaN, so no value is
    accepted (NaN, NaN), by the chunked scan as by the verdict."""
    draws = np.arange(1.0, 101.0)
    assert all(map(math.isnan, accepted_range(draws, [np.full(50, np.nan)] * 3)))


def test_predictive_of_one_trial_is_the_pool_itself():
    """n = 1: the draws are the pool's values, so the tail probability is the value's rank."""
    result = predictive([np.arange(1.0, 101.0)], np.mean, 1, 3.0)
    assert result.p == pytest.approx(0.06, abs=0.01)
    # accepted: the values whose tail probability stays at or above 0.05 in 97.5 % of
    # resampled pools, inside the pool's central 95 % (3.5 to 98)
    assert 3.5 <= result.accepted_low < 10 and 91 < result.accepted_high <= 98
    assert result.pool == 100 and result.n == 1


def test_a_mean_drawn_from_the_pool_law_is_consistent_and_one_far_off_is_not():
    """The paper's statistic is a 15-trial mean from the law of a 2,000-trial pool (tail
    index 1: the mean exists barely, its bootstrap fails): judged consistent (not refuted)
    nearly always. A value no 15-trial mean of the pool reaches (above its largest trial, or
    at the law's lower end) is refuted; one that only the pool's few largest trials reach is
    not resolved below a tail probability of about n / pool, which its interval shows."""
    rng = np.random.default_rng(5)
    pool = pareto(1.0, 2000, rng)
    refuted = 0
    for _ in range(30):
        value = pareto(1.0, 15, rng).mean()
        result = predictive([pool], np.mean, 15, value)
        refuted += predictive_verdict(result) == "not reproduced"
        assert result.p_low <= result.p <= result.p_high
    assert refuted <= 3  # expected about 1 in 30 (p < 0.05 with its interval)
    for value in (2 * pool.max(), 1.0):
        far = predictive([pool], np.mean, 15, value)
        assert predictive_verdict(far) == "not reproduced" and far.p_high < ALPHA


@pytest.mark.parametrize("seed", range(5))
def test_a_pareto_tail_reaches_what_the_pool_cannot(seed):
    """Pools of 200 trials of a Pareto law of index 1.2, a 15-trial mean judged: the pool
    alone puts the tail probability of a mean of 15 or 40 at 0-0.11 whatever its true value
    (0.062, 0.015); with its largest 10 % replaced by a Pareto tail the range over the tail
    index's interval holds the true value in every pool, and keeps a mean of 10,000 (true
    probability about 1e-6) below 0.05."""
    truth = pareto(1.2, (200_000, 15), np.random.default_rng(99)).mean(axis=1)
    pool = pareto(1.2, 200, np.random.default_rng(seed))
    for value in (15.0, 40.0):
        far = far_tail([pool], np.mean, 15, value)
        true_p = 2 * np.mean(truth >= value)
        assert far.p_light <= true_p <= far.p_heavy
        assert far.p_light <= far.p_estimate <= far.p_heavy and far.share == 0.1
    assert far_tail([pool], np.mean, 15, 1e4).p_heavy < ALPHA
    assert far_tail([np.r_[pool, -1.0]], np.mean, 15, 40.0) is None  # a negative value


def ratio_of_means(a, b, axis=-1):
    """The ratio of two arms' means, as a claim of kind ``ratio`` measures it."""
    return a.mean(axis) / b.mean(axis)


@pytest.mark.parametrize("seed", range(5))
def test_a_ratios_far_tail_is_modelled_on_the_arm_that_reaches_it(seed):
    """Two paired arms of 200 trials, one Pareto of index 1.2, the other uniform on [1, 2]: a
    15-trial ratio of means far above (heavy numerator) or below (heavy baseline) what the
    pool reaches (true tail probability 0.062 and 0.017, or 0.062 and 0.029; judged where the
    pool alone would refute it, as the claims do) gets a range over the tail index's interval
    that holds its true tail probability, from the heavy arm's modelled tail. A ratio out of
    reach of any tail stays below 0.05."""
    rng = np.random.default_rng(seed)
    heavy, light = pareto(1.2, 200, rng), rng.uniform(1, 2, 200)
    truth_rng = np.random.default_rng(99)
    truth_heavy = pareto(1.2, (200_000, 15), truth_rng).mean(axis=1)
    truth_light = truth_rng.uniform(1, 2, (200_000, 15)).mean(axis=1)
    for pool, truth, value in (
        ([heavy, light], truth_heavy / truth_light, 10.0),
        ([heavy, light], truth_heavy / truth_light, 25.0),
        ([light, heavy], truth_light / truth_heavy, 0.1),
        ([light, heavy], truth_light / truth_heavy, 0.06),
    ):
        above = value > np.median(truth)
        true_p = 2 * np.mean(truth >= value if above else truth <= value)
        beyond = predictive(pool, ratio_of_means, 15, value).p_high < ALPHA
        assert beyond or value != 25.0  # 25 is beyond every one of these pools' reach
        if beyond:  # where the claims call far_tail: the heavy arm's tail reaches the value
            far = far_tail(pool, ratio_of_means, 15, value)
            assert far.p_light <= true_p <= far.p_heavy
            assert far.arm == (0 if above else 1) and far.share == 0.1
    assert far_tail([heavy, light], ratio_of_means, 15, 1e4).p_heavy < ALPHA
    assert far_tail([light, heavy], ratio_of_means, 15, 1e-4).p_heavy < ALPHA


def test_a_claim_beyond_its_pools_reach_is_inconclusive_unless_its_tail_rules_it_out():
    """The pool (300 trials of 0.01 times a Pareto law of index 1) never reaches a 15-trial
    mean of 0.5 (true tail probability about 0.04), yet its fitted tail does: inconclusive,
    not refuted. A mean of 1,000 is out of reach of the tail too."""
    pool = pd.DataFrame(rows_of(0.01 * pareto(1.0, 300, np.random.default_rng(10)), dim=32))
    claims = {
        "heavy_tail": {"exp": {"pool": "exp", "paper_n": 15}},
        "claims": [
            {"claim_id": str(value), "where": "§", "statement": "s", "paper_value": value}
            | {"table": "exp", "filter": {"component": "condition_number", "dim": 32}}
            for value in (0.5, 1000.0)
        ],
    }
    table = evaluate(claims, {"exp": pool}).set_index("claim_id")
    assert table.loc["0.5", "p_high"] < ALPHA  # the pool alone would refute it
    assert table.loc["0.5", "verdict"] == "inconclusive"
    assert "with a Pareto tail above the pool's largest 10 %," in table.loc["0.5", "note"]
    assert table.loc["1000.0", "verdict"] == "not reproduced"


def test_a_ratio_beyond_its_pools_reach_is_judged_with_its_arms_tails():
    """The same pool as the arm d = 512 of a ratio claim over a baseline d = 32 whose 300
    trials are all 1 (no tail to model): the ratio of 15-trial means is the mean itself, so
    0.5 is inconclusive with the first arm's tail and 1,000 is not reproduced."""
    heavy = 0.01 * pareto(1.0, 300, np.random.default_rng(10))
    pool = pd.DataFrame(rows_of(heavy, dim=512) + rows_of(np.ones(300), dim=32))
    claims = {
        "heavy_tail": {"exp": {"pool": "exp", "paper_n": 15}},
        "claims": [
            {"claim_id": str(value), "where": "§", "statement": "s", "paper_value": value}
            | {"table": "exp", "kind": "ratio"}
            | {"baseline": {"component": "condition_number", "dim": 32}}
            | {"filter": {"component": "condition_number", "dim": 512}}
            for value in (0.5, 1000.0)
        ],
    }
    table = evaluate(claims, {"exp": pool}).set_index("claim_id")
    assert table.loc["0.5", "p_high"] < ALPHA  # the pool alone would refute it
    assert table.loc["0.5", "verdict"] == "inconclusive"
    assert "above the largest 10 % of the pool's arm 1 of 2," in table.loc["0.5", "note"]
    assert table.loc["1000.0", "verdict"] == "not reproduced"


def test_predictive_pairs_the_arms():
    """Two arms of one pool: a ratio of means drawn from the same trials of each. Arms equal
    up to a factor 3 give the ratio 3 in every draw."""
    arm = pareto(1.2, 500, np.random.default_rng(6))
    result = predictive([3 * arm, arm], lambda a, b, axis: a.mean(axis) / b.mean(axis), 10, 3.0)
    assert (result.accepted_low, result.accepted_high) == pytest.approx((3.0, 3.0))
    assert result.p == 1.0 and predictive_verdict(result) == "consistent"


def rows_of(errors, **settings):
    """A per-trial table's rows: the settings, the seed, then the result columns."""
    return [
        {**settings, "seed": seed, "matrix": "product", "epoch": 200}
        | {"component": "condition_number", "error": e, "trained": 1.0, "target": 1.0}
        | {"diverged": False}
        for seed, e in enumerate(errors)
    ]


def test_a_heavy_tailed_claim_is_judged_predictively_on_its_pool():
    """A paper's 15-trial mean against 15 trials of ours and a 300-trial pool with the same
    cell: the heavy tail (index 1) sends it to the predictive verdict, drawn from the pool;
    the bootstrap interval of the mean is not reported; the light one keeps the interval."""
    rng = np.random.default_rng(7)
    heavy = 0.01 * pareto(1.0, 300, rng)
    light = 0.13 + 0.001 * rng.standard_normal(300)
    pool = pd.DataFrame(rows_of(heavy, dim=32) + rows_of(light, dim=64))
    exp = pool[pool["seed"] < 15]
    typical = float(np.median(rng.choice(heavy, (2000, 15)).mean(axis=1)))
    claims = {
        "default_tolerance": 0.25,
        "heavy_tail": {"exp": {"pool": "pool", "paper_n": 15}},
        "claims": [
            {"claim_id": "typical", "where": "§", "statement": "s", "paper_value": 0.04}
            | {"table": "exp", "filter": {"component": "condition_number", "dim": 32}},
            {"claim_id": "far", "where": "§", "statement": "s", "paper_value": 0.005}
            | {"table": "exp", "filter": {"component": "condition_number", "dim": 32}},
            {"claim_id": "light", "where": "§", "statement": "s", "paper_value": 0.13}
            | {"table": "exp", "filter": {"component": "condition_number", "dim": 64}},
        ],
    }
    assert 0.03 < typical < 0.05  # the paper's value 0.04 is a typical 15-trial mean
    table = evaluate(claims, {"exp": exp, "pool": pool}).set_index("claim_id")
    assert table.loc["typical", "rule"] == "predictive"
    assert table.loc["typical", "verdict"] == "consistent"
    assert table.loc["typical", ["paper_n", "pool_n"]].tolist() == [15, 300]
    assert math.isnan(table.loc["typical", "ci_low"])
    assert table.loc["typical", "tail_index_low"] < 2
    assert "300 trials of pool" in table.loc["typical", "note"]
    assert table.loc["far", "verdict"] == "not reproduced"
    assert table.loc["far", "p_high"] < ALPHA
    assert table.loc["light", "rule"] == "interval"
    assert table.loc["light", "verdict"] == "reproduced"
    assert table.loc["light", "tail_index_low"] > 4


def test_without_a_pool_the_claims_own_trials_are_drawn():
    """No pool configured: the claim's own 15 trials are the pool, and the note says so."""
    errors = 0.01 * pareto(1.0, 15, np.random.default_rng(8))
    claims = {
        "claims": [
            {"claim_id": "c", "where": "§", "statement": "s", "paper_value": 0.02}
            | {"table": "exp", "filter": {"component": "condition_number"}}
        ]
    }
    row = evaluate(claims, {"exp": pd.DataFrame(rows_of(errors))}).iloc[0]
    assert row["rule"] == "predictive" and row["pool_n"] == 15 and row["paper_n"] == 15
    assert "15 trials of exp" in row["note"]


def test_a_pool_with_other_settings_is_not_drawn_from():
    """A pool whose trials at the claim's d ran at another learning rate holds other trials:
    the claim draws from its own instead, and its note says so."""
    rng = np.random.default_rng(9)
    exp = pd.DataFrame(rows_of(0.01 * pareto(1.0, 15, rng), dim=32, lr=0.01))
    pool = pd.DataFrame(rows_of(0.01 * pareto(1.0, 300, rng), dim=32, lr=0.02))
    claims = {
        "heavy_tail": {"exp": {"pool": "pool", "paper_n": 15}},
        "claims": [
            {"claim_id": "c", "where": "§", "statement": "s", "paper_value": 0.02}
            | {"table": "exp", "filter": {"component": "condition_number", "dim": 32}}
        ],
    }
    row = evaluate(claims, {"exp": exp, "pool": pool}).iloc[0]
    assert row["pool_n"] == 15 and "15 trials of exp" in row["note"]
