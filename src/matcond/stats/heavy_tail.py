"""Heavy tails: a claim's tail index and its predictive verdict.

A mean over trials of a quantity whose tail index alpha is at most 2 has no normal limit, and
the bootstrap of such a mean is inconsistent (Athreya 1987; Gine and Zinn 1989): a 15-trial
mean is set by its largest trial, its bootstrap interval does not cover, and a population mean
may not even exist (alpha <= 1). A standard deviation needs alpha > 4 for the same reasons. So
a claim on a mean or a std (or a ratio of means) is judged by its interval only where the tail
index is *known* to be above that threshold; otherwise it is judged by asking whether the
paper's value is a plausible draw of the same statistic, over the paper's number of trials,
from a large pool of our trials (its sampling distribution; docs/statistics-and-verdicts.md,
"Heavy tails").

- :func:`hill`: Hill's estimate of the tail index from the k largest of N values,
  k = max(10, N // 10) (at most N - 1), with its exact 95 % interval under a Pareto tail: the
  k log-excesses over the (k+1)-th largest value are then i.i.d. exponential with rate alpha,
  so alpha * k / alpha_hat ~ Gamma(k, 1).
- :func:`predictive`: the sampling distribution of ``measure`` over ``n`` trials drawn with
  replacement from the pool and the two-sided tail probability of the paper's value under
  it, with that probability's own 95 % interval from resampling the pool (the pool is a
  finite sample too), widened to hold the probability itself; and the range of values the
  verdict accepts (:func:`accepted_range`).
- :func:`far_tail`: the same tail probability where one arm's largest trials are replaced
  by a Pareto tail (fitted as :func:`hill` fits it), at each end of the tail index's
  interval, each arm in turn: for a paper value beyond what the pool's own trials can reach.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

CONFIDENCE = 0.95
ALPHA = 1 - CONFIDENCE  # a paper value whose tail probability is below this is implausible
HILL_MIN_K = 10
HILL_FRACTION = 0.1
# The statistic's moment condition: below this tail index its bootstrap interval fails.
THRESHOLD = {"mean": 2.0, "std": 4.0}
DRAWS = 20_000  # n-trial statistics drawn from the pool
POOL_RESAMPLES = 200  # resamples of the pool for the tail probability's interval
INNER_DRAWS = 2_000  # n-trial statistics drawn from each resampled pool
SEED = 0


@dataclass(frozen=True)
class TailIndex:
    """Hill's estimate of a tail index with its 95 % interval, from the ``k`` largest values
    (NaN with fewer than 11 values; 0 where the threshold value is 0)."""

    estimate: float
    low: float
    high: float
    k: int


def _hill_k(size: int) -> int:
    """How many of ``size`` values Hill's estimate uses: max(10, size // 10), at most
    size - 1."""
    return min(max(HILL_MIN_K, int(HILL_FRACTION * size)), size - 1)


def hill(values: np.ndarray) -> TailIndex:
    """Hill's estimate of the tail index of ``|values|`` (finite ones), with its exact 95 %
    interval under a Pareto tail (see the module docstring)."""
    x = np.abs(np.asarray(values, dtype=float))
    x = np.sort(x[np.isfinite(x)])[::-1]
    if x.size <= HILL_MIN_K:
        return TailIndex(math.nan, math.nan, math.nan, 0)
    k = _hill_k(x.size)
    threshold = x[k]
    if threshold <= 0:  # a point mass at 0 under the tail: no tail index to speak of
        return TailIndex(0.0, 0.0, 0.0, k)
    total = float(np.sum(np.log(x[:k] / threshold)))
    if total == 0:  # the k largest are equal: bounded, no tail
        return TailIndex(math.inf, math.inf, math.inf, k)
    half = (1 - CONFIDENCE) / 2
    low, high = stats.gamma.ppf([half, 1 - half], k)
    return TailIndex(k / total, float(low) / total, float(high) / total, k)


def moment_exists(tail: TailIndex, statistic: str) -> bool:
    """Whether the 95 % interval of the tail index lies above ``statistic``'s threshold
    (:data:`THRESHOLD`): only then is its bootstrap interval trusted."""
    return tail.low > THRESHOLD[statistic]


def tail_probability(draws: np.ndarray, low: float, high: float | None = None) -> float:
    """Two-sided tail probability of the value ``low`` (or of the nearest point of the range
    [``low``, ``high``]) under the empirical law of ``draws``: 2 min(P(T <= high),
    P(T >= low)), at most 1 (NaN draws left out)."""
    high = low if high is None else high
    draws = draws[~np.isnan(draws)]
    if draws.size == 0:
        return math.nan
    below, above = np.mean(draws <= high), np.mean(draws >= low)
    return float(min(1.0, 2 * min(below, above)))


@dataclass(frozen=True)
class Predictive:
    """The sampling distribution of an ``n``-trial statistic from a ``pool``-trial pool:
    the range of values its verdict accepts (``accepted_low``, ``accepted_high``:
    :func:`accepted_range`) and the paper value's tail probability ``p`` with its 95 %
    interval (``p_low``, ``p_high``)."""

    accepted_low: float
    accepted_high: float
    p: float
    p_low: float
    p_high: float
    n: int
    pool: int


def _statistics(pool: list[np.ndarray], measure: Callable, index: np.ndarray) -> np.ndarray:
    """``measure`` of the pool's trials ``index`` (one draw per row), paired across arms."""
    with np.errstate(all="ignore"):
        return np.asarray(measure(*(s[index] for s in pool), axis=-1), dtype=float)


def _sampling(
    pool: Sequence[np.ndarray], measure: Callable[..., np.ndarray], n: int
) -> tuple[np.ndarray, list[np.ndarray]]:
    """``measure`` over ``n`` trials drawn from ``pool`` (one array per arm, paired: a draw
    takes the same trials from each arm), :data:`DRAWS` times; and the same from each of
    :data:`POOL_RESAMPLES` resamples of the pool, :data:`INNER_DRAWS` times (fixed seed)."""
    pool = [np.asarray(s, dtype=float) for s in pool]
    size = pool[0].size
    rng = np.random.default_rng(SEED)
    draws = _statistics(pool, measure, rng.integers(0, size, size=(DRAWS, n)))
    resampled = []
    for _ in range(POOL_RESAMPLES):
        members = rng.integers(0, size, size=size)
        inner = members[rng.integers(0, size, size=(INNER_DRAWS, n))]
        resampled.append(_statistics(pool, measure, inner))
    return draws, resampled


def _tail_probabilities(draws: np.ndarray, values: np.ndarray) -> np.ndarray:
    """:func:`tail_probability` of each of ``values`` under ``draws``, at once."""
    return _ordered_tail_probabilities(np.sort(draws[~np.isnan(draws)]), values)


def _ordered_tail_probabilities(ordered: np.ndarray, values: np.ndarray) -> np.ndarray:
    """:func:`_tail_probabilities` under draws already sorted, NaN left out (``ordered``)."""
    if not ordered.size:
        return np.full(values.shape, math.nan)
    below = np.searchsorted(ordered, values, "right") / ordered.size
    above = 1 - np.searchsorted(ordered, values, "left") / ordered.size
    return np.minimum(1.0, 2 * np.minimum(below, above))


def _p_interval(p, resampled_p) -> tuple:
    """The 95 % interval of a tail probability ``p`` (or of each of an array of them) from
    its values under the resampled pools, widened to hold ``p`` (a percentile interval can
    miss its own estimate: p is capped at 1, which a resampled pool seldom reaches)."""
    half = (1 - CONFIDENCE) / 2
    resampled_p = np.asarray(resampled_p, dtype=float)
    # a resampled pool with no finite statistic gives NaN for every value: its row is left
    # out (what nanquantile does, at a fortieth of its cost)
    finite = resampled_p[~np.isnan(resampled_p.reshape(len(resampled_p), -1)).any(axis=1)]
    if not finite.size:
        return np.minimum(math.nan, p), np.maximum(math.nan, p)
    low, high = np.quantile(finite, [half, 1 - half], axis=0)
    return np.minimum(low, p), np.maximum(high, p)


ACCEPT_CHUNK = 1024  # values judged at once by accepted_range, from each end inwards


def accepted_range(draws: np.ndarray, resampled: list[np.ndarray]) -> tuple[float, float]:
    """The smallest and largest value that :func:`predictive_verdict` calls ``consistent``
    (its tail probability's interval at or above :data:`ALPHA`) among the ``draws``, for the
    statistics ``draws`` of the pool and ``resampled`` of its resamples (:func:`_sampling`);
    NaN, NaN where it accepts none. The values are judged from each end inwards, a chunk at
    a time, up to the first accepted one (what judging every value finds, at a fraction of
    its cost: the accepted values start near the draws' 2.5 % and 97.5 % points)."""
    ordered = np.sort(draws[~np.isnan(draws)])
    values = np.unique(ordered)
    ordered_resampled = [np.sort(r[~np.isnan(r)]) for r in resampled]

    def first_accepted(chunks) -> np.ndarray | None:
        """The accepted values of the first chunk that holds any."""
        for chunk in chunks:
            p = _ordered_tail_probabilities(ordered, chunk)
            chunk, p = chunk[p >= ALPHA], p[p >= ALPHA]  # p's interval holds p: the rest fail
            resampled_p = [_ordered_tail_probabilities(r, chunk) for r in ordered_resampled]
            found = chunk[_p_interval(p, resampled_p)[0] >= ALPHA]
            if found.size:
                return found
        return None

    size = ACCEPT_CHUNK
    lowest = first_accepted(values[s : s + size] for s in range(0, values.size, size))
    if lowest is None:
        return math.nan, math.nan
    highest = first_accepted(values[max(0, e - size) : e] for e in range(values.size, 0, -size))
    return float(lowest[0]), float(highest[-1])


def accepted_values(
    pool: Sequence[np.ndarray], measure: Callable[..., np.ndarray], n: int
) -> tuple[float, float]:
    """The range of values of ``measure`` over ``n`` trials of ``pool`` that the predictive
    verdict accepts (:func:`accepted_range`, on the draws of :func:`predictive`): what a
    figure draws beside the paper's value."""
    return accepted_range(*_sampling(pool, measure, n))


def predictive(
    pool: Sequence[np.ndarray],
    measure: Callable[..., np.ndarray],
    n: int,
    low: float,
    high: float | None = None,
) -> Predictive:
    """Where the value ``low`` (or the range [``low``, ``high``]) falls in the sampling
    distribution of ``measure`` over ``n`` trials (:func:`_sampling`), and the range of
    values the verdict accepts.

    ``pool`` holds one array per arm, aligned on the same trials (paired arms: a draw takes
    the same trials from each); ``measure(*samples, axis=-1)`` reduces the last axis. Draws
    use a fixed seed, so the result is the same from run to run.
    """
    draws, resampled = _sampling(pool, measure, n)
    p = tail_probability(draws, low, high)
    p_low, p_high = _p_interval(p, [tail_probability(r, low, high) for r in resampled])
    accepted = accepted_range(draws, resampled)
    return Predictive(*accepted, p, float(p_low), float(p_high), n, len(pool[0]))


@dataclass(frozen=True)
class FarTail:
    """A paper value's tail probability under a pool whose arm ``arm`` has its top ``share``
    replaced by a Pareto tail: ``p_heavy`` at the low end of that arm's tail index interval
    (the heaviest tail it admits), ``p_estimate`` at Hill's estimate, ``p_light`` at the high
    end."""

    p_heavy: float
    p_estimate: float
    p_light: float
    share: float
    arm: int


def tail_model_draws(
    values: np.ndarray, alpha: float, index: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """The trials ``index`` of ``values`` (non-negative, finite) with their tail modelled:
    a trial among the k largest (:func:`hill`'s k) is replaced by a draw of the Pareto law of
    index ``alpha`` above the (k+1)-th largest value u, ``u U^(-1/alpha)`` (U uniform on
    (0, 1]); the others are their own values, so a draw stays paired with other arms."""
    order = np.argsort(values, kind="stable")
    k = _hill_k(values.size)
    in_tail = np.zeros(values.size, dtype=bool)
    in_tail[order[-k:]] = True
    out = values[index]
    tail = in_tail[index]
    threshold = values[order[-k - 1]]
    out[tail] = threshold * (1.0 - rng.random(np.count_nonzero(tail))) ** (-1.0 / alpha)
    return out


def far_tail(
    pool: Sequence[np.ndarray],
    measure: Callable[..., np.ndarray],
    n: int,
    low: float,
    high: float | None = None,
) -> FarTail | None:
    """The tail probability of the value ``low`` (or the range [``low``, ``high``]) under
    ``measure`` over ``n`` trials of ``pool`` (one array per arm, paired as in
    :func:`predictive`) where one arm's largest trials are a Pareto tail
    (:func:`tail_model_draws`) of index at the low end, the estimate and the high end of
    :func:`hill`'s interval. Each arm with non-negative values and a finite tail index is
    modelled in turn, the others drawn as they are; the result is the arm whose modelled
    tail gives the value its largest probability (the reach most favourable to the value);
    None where no arm can be modelled."""
    pool = [np.asarray(s, dtype=float) for s in pool]
    finite = np.logical_and.reduce([np.isfinite(s) for s in pool])  # paired trials stay so
    pool = [s[finite] for s in pool]
    best = None
    for position, values in enumerate(pool):
        tail = hill(values)
        if not (np.all(values >= 0) and 0 < tail.low and math.isfinite(tail.high)):
            continue
        probabilities = []
        for alpha in (tail.low, tail.estimate, tail.high):
            rng = np.random.default_rng(SEED)
            index = rng.integers(0, values.size, size=(DRAWS, n))
            samples = [
                tail_model_draws(values, alpha, index, rng) if arm == position else s[index]
                for arm, s in enumerate(pool)
            ]
            with np.errstate(all="ignore"):
                statistics = np.asarray(measure(*samples, axis=-1), dtype=float)
            probabilities.append(tail_probability(statistics, low, high))
        result = FarTail(*probabilities, share=tail.k / values.size, arm=position)
        if best is None or result.p_heavy > best.p_heavy:
            best = result
    return best


def predictive_verdict(result: Predictive) -> str:
    """``consistent`` where the tail probability's interval lies above :data:`ALPHA`, ``not
    reproduced`` where it lies below, else ``inconclusive``."""
    if result.p_low >= ALPHA:
        return "consistent"
    if result.p_high < ALPHA:
        return "not reproduced"
    return "inconclusive"
