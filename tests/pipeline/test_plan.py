"""The run a config asks for (matcond.pipeline.plan.Plan), built without Snakemake: its
blocks, saved weights, GN parts, depth trials, figures and targets."""

import pytest
from support import REPO

from matcond.claims.check import DEPTH_TABLE
from matcond.condition_number.batching import block_mem_mb
from matcond.core.config import ConfigError, load_yaml, validate_config
from matcond.core.trials import all_trials, bundle_request
from matcond.figures.catalog import FIGURES
from matcond.pipeline.plan import CLUSTER_TRAIN_JOB_SECONDS, Plan


def plan_of(config: dict) -> Plan:
    validated = validate_config(config)
    return Plan(validated, all_trials(validated))


@pytest.fixture(scope="module")
def small() -> Plan:
    return plan_of(load_yaml(REPO / "config" / "test" / "config.yaml"))


def test_every_trial_is_in_exactly_one_block_and_its_manifest_is_a_target(small):
    in_blocks = [t.path for b in small.blocks.values() for t in b.trials]
    assert sorted(in_blocks) == sorted(small.trial_by_path)
    targets = set(small.targets())
    assert set(small.manifests()) <= targets
    for experiment, trials in small.trials.items():
        assert f"results/tables/{experiment}.parquet" in targets
        assert {small.block_manifest(t.path) for t in trials} == set(
            small.experiment_manifests(experiment)
        )


def test_the_figures_drawn_are_those_whose_inputs_run(small):
    only_exp1 = plan_of({"experiments": {"exp1_dimension": {"grid": {"dim": [4]}, "seeds": 2}}})
    assert only_exp1.theory_experiments == ["exp1_dimension"]  # so the theory table is made
    assert only_exp1.drawn == [
        name
        for name, f in FIGURES.items()
        if set(f.experiments) <= {"exp1_dimension"}
        and not f.gauss_newton
        and set(f.tables) <= {"theory"}
    ]
    assert "fig1_dimension" in only_exp1.drawn and "fig2_optimizer" not in only_exp1.drawn
    catalogued = [n for n in small.drawn if n in FIGURES]
    assert set(catalogued) == set(FIGURES)  # the small config runs every figure
    assert {f"results/figures/{n}.png" for n in small.drawn} <= set(small.targets())


def test_an_experiment_no_figure_draws_gets_its_overview(small):
    """Drawn from its own table: the catalog's figures draw the others, directly or through
    the theory's, the depth formula's and the GN parts' tables."""
    plan = plan_of(
        {
            "experiments": {
                "exp1_dimension": {"grid": {"dim": [4]}, "seeds": 2},
                "my_sweep": {"grid": {"lr": [0.01, 0.02]}, "settings": {"dim": 4}, "seeds": 2},
            }
        }
    )
    assert [n for n in plan.drawn if n not in FIGURES] == ["overview_my_sweep"]
    assert plan.figure_table_names("overview_my_sweep") == ["my_sweep"]
    assert "results/figures/overview_my_sweep.png" in plan.targets()
    shown = {e for n in small.drawn if n in FIGURES for e in small.figure_table_names(n)}
    overviews = {n.removeprefix("overview_") for n in small.drawn if n not in FIGURES}
    assert overviews == set(small.trials) - shown - set(small.theory_experiments) - set(
        small.depth_experiments
    ) - {small.config["gauss_newton"][p]["experiment"] for p in small.gn_trials}


def test_weights_are_saved_where_something_reads_them(small):
    readers = {t.path for ts in small.gn_trials.values() for t in ts}
    readers |= {t.path for t in small.depth_trials}
    assert readers and readers <= small.weights_saved
    unread = set(small.trial_by_path) - readers
    assert all(
        small.trial_by_path[p].spec["save_recorded_weights"] for p in unread & small.weights_saved
    )
    everything = plan_of({**load_yaml(REPO / "config/test/config.yaml"), "save_weights": True})
    assert everything.weights_saved == set(everything.trial_by_path)


def test_gn_parts_on_saved_weights_and_their_settings(small):
    assert small.gn_trials["exp7"] and small.gn_trials["along_training"]
    assert set(small.gn_parts) == {*small.config["gauss_newton"]["sweeps"], *small.gn_trials}
    part_tables = small.gn_trial_tables("exp7")
    assert len(part_tables) == len(small.gn_trials["exp7"])
    settings = small.output_settings()
    assert all(settings[path] == small.gn_trial_settings["exp7"] for path in part_tables)
    assert small.gn_trial_settings["exp7"] != small.gn_trial_settings["along_training"]


def test_the_depth_formula_s_trials_grouped_by_their_training_block(small):
    blocks = small.depth_theory_blocks
    assert sum(len(b["seeds"]) for b in blocks.values()) == len(small.depth_trials)
    for block, entry in blocks.items():
        trained = small.blocks[block].trials
        assert set(entry["seeds"]) <= {t.seed for t in trained}
        assert "seed" not in entry["spec"]
    assert set(small.depth_theory_tables()) <= set(small.targets())


def test_along_training_without_saved_weights_names_the_experiment(small):
    config = load_yaml(REPO / "config" / "test" / "config.yaml")
    experiment = small.config["gauss_newton"]["along_training"]["experiment"]
    config["experiments"][experiment].setdefault("settings", {})["save_recorded_weights"] = False
    with pytest.raises(ConfigError, match=f"experiments.{experiment}: .*save_recorded_weights"):
        plan_of(config)


def test_an_experiment_named_like_the_depth_table_is_refused():
    config = {"experiments": {DEPTH_TABLE: {"grid": {"dim": [4]}, "seeds": 1}}}
    with pytest.raises(ConfigError, match=f"experiments.{DEPTH_TABLE}: the name of the depth"):
        plan_of(config)


def test_memory_names_the_experiment_that_does_not_fit(small):
    assert small.memory_problem(10**9) is None
    need = max(small.train_mem_mb(block) for block in small.blocks)
    problem = small.memory_problem(need - 1)
    assert problem is not None and problem.startswith("config key experiments.")
    assert f"needs about {need} MB per training job" in problem


def test_a_gpu_block_asks_for_the_memory_of_all_its_seeds():
    """With device cuda a block's seeds train as one batch: its job's mem_mb is that of all
    of them (matcond.condition_number.batching.block_mem_mb); on the CPU, at d = 1024, one."""
    config = {"block_size": 64, "experiments": {"e": {"grid": {"dim": [1024]}, "seeds": 64}}}
    cpu, cuda = plan_of(config), plan_of({**config, "device": "cuda"})
    (block,) = cuda.blocks
    spec = cuda.blocks[block].trials[0].spec
    assert cuda.train_mem_mb(block) == block_mem_mb(spec, 64, "cuda")
    assert cpu.train_mem_mb(block) == block_mem_mb(spec, 1, "cuda") < cuda.train_mem_mb(block)


def test_device_auto_puts_the_large_blocks_on_a_gpu_that_the_run_sees():
    """device auto: blocks of d >= gpu_min_dim on the GPU, with a GPU block's memory, where
    the run sees a GPU; every block on the CPU where it sees none."""
    config = {"gpu_min_dim": 256, "experiments": {"e": {"grid": {"dim": [128, 256]}, "seeds": 2}}}
    trials = all_trials(validate_config(config))
    seen, unseen = Plan(validate_config(config), trials, gpus=1), plan_of(config)
    by_dim = {seen.blocks[b].trials[0].spec["dim"]: b for b in seen.blocks}
    assert seen.block_device(by_dim[256]) == "cuda" and seen.block_device(by_dim[128]) == "cpu"
    assert {unseen.block_device(b) for b in unseen.blocks} == {"cpu"}
    spec, seeds = seen.blocks[by_dim[256]].trials[0].spec, len(seen.blocks[by_dim[256]].trials)
    assert seen.train_mem_mb(by_dim[256]) == block_mem_mb(spec, seeds, "cuda")


def test_runtime_and_priority_of_a_training_block(small):
    for path, block in small.blocks.items():
        spec = block.trials[0].spec
        assert small.train_runtime(path) >= 5
        first = spec["record_every"] == 1 or spec["dim"] >= 1024
        assert small.train_priority(path) == int(first)


def test_without_train_job_seconds_each_block_is_a_job_with_its_own_request(small):
    assert list(small.train_jobs) == list(small.blocks)
    for path, block in small.blocks.items():
        assert small.train_request(path) == block.request(small.weights_saved)


def test_train_job_seconds_unset_bundles_where_jobs_go_to_a_cluster_only():
    """Unset: bundles of CLUSTER_TRAIN_JOB_SECONDS under a cluster executor, one job per
    block on a workstation; given, as given (0: per block under SLURM too)."""
    config = validate_config(load_yaml(REPO / "config" / "config.yaml"))
    trials = all_trials(config)
    cluster, local = Plan(config, trials, cluster=True), Plan(config, trials)
    assert cluster.train_job_seconds == CLUSTER_TRAIN_JOB_SECONDS and local.train_job_seconds == 0
    assert len(local.train_jobs) == len(local.blocks) > 5 * len(cluster.train_jobs)
    zero = Plan({**config, "train_job_seconds": 0}, trials, cluster=True)
    assert list(zero.train_jobs) == list(zero.blocks)
    # a job asked for by its block's path (a process of its own) is found either way
    block = next(iter(cluster.blocks))
    assert cluster.job_blocks(block) == (cluster.blocks[block],)


def test_train_job_seconds_bundles_blocks_of_one_device_and_priority():
    """config key train_job_seconds: every block in one bundle, never one of two devices or
    priorities; a bundle's manifest is its trials' and its blocks' (the depth formula's
    input), its request its blocks', its memory its largest block's, its runtime at most the
    sum of theirs."""
    config = load_yaml(REPO / "config" / "test" / "config.yaml")
    config |= {"device": "auto", "gpu_min_dim": 8}
    validated = validate_config({**config, "train_job_seconds": 0.5})
    plan = Plan(validated, all_trials(validated), gpus=1)
    jobs = plan.train_jobs
    assert 1 < len(jobs) < len(plan.blocks) and all(j.startswith("bundles/") for j in jobs)
    held = sorted(b.path for blocks in jobs.values() for b in blocks)
    assert held == sorted(plan.blocks)
    for job, blocks in jobs.items():
        assert len({(plan.block_device(b.path), plan._block_priority(b)) for b in blocks}) == 1
        assert plan.train_request(job) == bundle_request(blocks, plan.weights_saved)
        assert plan.train_mem_mb(job) == max(plan._block_mem_mb(b.path) for b in blocks)
        alone = plan_of(config)
        runtimes = [alone.train_runtime(b.path) for b in blocks]
        assert max(runtimes) <= plan.train_runtime(job) <= sum(runtimes)
        for block in blocks:
            assert plan.job_of_block(block.path) == job
            for t in block.trials:
                assert plan.block_manifest(t.path) == f"results/trials/{job}.json"
    assert {plan.train_device(j) for j in jobs} == {"cpu", "cuda"}
    assert set(plan.manifests()) == {f"results/trials/{j}.json" for j in jobs}
    assert set(plan.manifests()) <= set(plan.targets())


def test_a_figure_reads_the_per_trial_tables_of_the_claims_it_marks(small):
    marks = [{"claim": "x", "table": "exp2_optimizer", "pool": "not_configured"}]
    tables = small.figure_tables("fig2_optimizer", marks)
    assert tables["exp2_optimizer"] == "results/tables/exp2_optimizer.parquet"
    assert tables["exp2_optimizer_per_trial"] == "results/per_trial/exp2_optimizer.parquet"
    assert "not_configured_per_trial" not in tables
