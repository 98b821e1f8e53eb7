"""Bad input stops the run before any job, with a message that names the key (and, for
choices, the allowed values), and no traceback."""

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from support import REPO, SNAKEMAKE, run_snakemake

from matcond.core.config import (
    ConfigError,
    check_command_line,
    check_results_dir,
    command_line_values,
    load_yaml,
    results_dir_problem,
    validate_config,
)
from matcond.core.trials import all_trials
from matcond.own_weights.load import check_checkpoint_paths


def one(defaults=None, **experiment):
    """A config with one experiment `e` (keys ``experiment``) over ``defaults``."""
    return {"defaults": defaults or {}, "experiments": {"e": {"seeds": 1, **experiment}}}


BAD = [
    (one({"lr": "1e-3"}), ["defaults.lr", "1.0e-3"]),
    (one({"dim": "abc"}), ["defaults.dim", "integer"]),
    (one({"dim": 0}), ["defaults.dim", "minimum"]),
    (one({"dim": -4}), ["defaults.dim"]),
    (one({"dim": 2.5}), ["defaults.dim", "integer"]),
    (one({"epochs": 0}), ["defaults.epochs"]),
    (one({"batch_size": 0}), ["defaults.batch_size"]),
    (one({"batch_size": 1.5}), ["defaults.batch_size"]),
    (one({"lr": 0.0}), ["defaults.lr"]),
    (one({"lr": -0.1}), ["defaults.lr"]),
    (one({"noise_std": -1.0}), ["defaults.noise_std"]),
    (one({"optimizer": "rmsprop"}), ["defaults.optimizer", "allowed: sgd, adam"]),
    (one({"strategy": "magic"}), ["defaults.strategy", "allowed: standard, multipliers"]),
    (one({"structure": "circle"}), ["defaults.structure", "allowed: heterogeneous"]),
    (one({"model": "transformer"}), ["defaults.model", "allowed: linear, deep_linear"]),
    (one({"effective_rank_thresholds": [0.0]}), ["defaults.effective_rank_thresholds"]),
    (one({"effective_rank_thresholds": [1.5]}), ["defaults.effective_rank_thresholds"]),
    (one({"effective_rank_thresholds": []}), ["defaults.effective_rank_thresholds"]),
    ({"experiments": {"e": {"seeds": []}}}, ["experiments.e.seeds"]),
    ({"experiments": {"e": {"seeds": [1, 1]}}}, ["experiments.e.seeds"]),
    ({"experiments": {"e": {"seeds": 0}}}, ["experiments.e.seeds"]),
    ({"experiments": {"e": {"seeds": [-1]}}}, ["experiments.e.seeds"]),
    (one(grid={"dim": []}), ["experiments.e.grid.dim"]),
    (one(grid={"dim": ["x"]}), ["experiments.e", "dim"]),
    (one(settings={"depth": 0, "model": "deep_linear"}), ["experiments.e", "depth"]),
    (one(settings={"lrr": 0.1}), ["experiments.e", "'lrr' was unexpected"]),
    (
        one(settings={"structure": "low_rank", "rank": 9, "dim": 4}),
        ["experiments.e", "rank 9 exceeds dim 4"],
    ),
    (
        one(settings={"structure": "block_diagonal", "n_blocks": 9, "dim": 4}),
        ["n_blocks 9 exceeds dim 4"],
    ),
    (one(settings={"record_every": 300}), ["experiments.e", "record_every 300 exceeds epochs 200"]),
    (
        one(settings={"model": "relu_mlp", "strategy": "multipliers"}),
        ["strategy multipliers needs model linear"],
    ),
    (one(variants=[{"optimizer": "sgdd"}]), ["experiments.e", "optimizer", "allowed: sgd, adam"]),
    ({"device": "tpu", "experiments": {"e": {"seeds": 1}}}, ["device", "allowed: auto, cpu, cuda"]),
    ({"experiments": {}}, ["experiments"]),
    ({"experimentz": {}, "experiments": {"e": {"seeds": 1}}}, ["'experimentz' was unexpected"]),
    ({"experiments": {"Bad-Name": {"seeds": 1}}}, ["experiments", "Bad-Name"]),
    ({"experiments": {"gn_exp7": {"seeds": 1}}}, ["experiments.gn_exp7", "taken by a table"]),
    ({"experiments": {"theory": {"seeds": 1}}}, ["experiments.theory", "taken by a table"]),
    (
        {**one(), "gauss_newton": {"sweeps": {"fig13_pruning_vit": {"dim": 10, "heads": 4}}}},
        ["gauss_newton.sweeps.fig13_pruning_vit.dim", "not a multiple of heads"],
    ),
    (
        {**one(), "gauss_newton": {"sweeps": {"fig14_pruning_resnet20": {"blocks": 5}}}},
        ["gauss_newton.sweeps.fig14_pruning_resnet20.blocks", "3 was expected"],
    ),
    # integer settings given as integer-valued floats: refused, naming the key
    (one({"dim": 4.0}), ["defaults.dim", "4.0 is not of type 'integer' (write 4"]),
    (one({"dim": 10**23}), ["defaults.dim", "is beyond the 64-bit integers"]),
    (one({"seeds": -(2**63)}), ["defaults.seeds", "is beyond the 64-bit integers"]),
    (one({"epochs": 5.0}), ["defaults.epochs", "write 5"]),
    (one(settings={"model": "deep_linear", "depth": 2.0}), ["experiments.e", "depth", "write 2"]),
    ({"experiments": {"e": {"seeds": 2.0}}}, ["experiments.e.seeds"]),
    ({"experiments": {"e": {"seeds": [2**63]}}}, ["experiments.e.seeds"]),
    (
        {**one(), "gauss_newton": {"sweeps": {"fig13_pruning_vit": {"dim": 8.0}}}},
        ["gauss_newton.sweeps.fig13_pruning_vit.dim", "integer"],
    ),
    (
        {**one(), "gauss_newton": {"sweeps": {"fig2_depth": {"n_samples": 1798}}}},
        ["gauss_newton.sweeps.fig2_depth.n_samples", "1798 is more than the 1797 rows"],
    ),
    (
        {**one(), "gauss_newton": {"sweeps": {"fig1_pruning": {"train_samples": 5000}}}},
        ["gauss_newton.sweeps.fig1_pruning.train_samples", "5000 is more than the 1797"],
    ),
    (
        {**one(), "gauss_newton": {"sweeps": {"fig1_pruning": {"train_samples": 100}}}},
        ["gauss_newton.sweeps.fig1_pruning.gn_samples", "128 is more than the 100 training"],
    ),
    (
        {**one(), "gauss_newton": {"exp7": {"experiment": "f"}}},
        ["gauss_newton.exp7.experiment", "'f' is not an experiment of this config"],
    ),
    (
        {
            "experiments": {"exp7_depth": {"seeds": 1}},
            "gauss_newton": {"along_training": {"experiment": "exp7_dpth"}},
        },
        ["gauss_newton.along_training.experiment", "did you mean 'exp7_depth'"],
    ),
    # NaN and infinity anywhere: refused, naming the key
    (one({"lr": float("nan")}), ["config key defaults.lr: nan is not a finite number"]),
    (one({"noise_std": float("inf")}), ["defaults.noise_std: inf is not a finite"]),
    (one(settings={"init_scale": float("nan")}), ["experiments.e.settings.init_scale: nan"]),
    (one({"rank_rtol": float("-inf")}), ["defaults.rank_rtol: -inf"]),
    (
        one({"effective_rank_thresholds": [0.1, float("nan")]}),
        ["defaults.effective_rank_thresholds.1: nan"],
    ),
    (one(grid={"lr": [0.01, float("inf")]}), ["experiments.e.grid.lr.1: inf"]),
    # the same trial requested twice in one experiment: its seeds would count twice
    (one(grid={"dim": [4, 4]}), ["experiments.e", "same trial", "listed twice"]),
    (one(grid={"lr": [0.01, 0.010]}), ["experiments.e", "same trial", "listed twice"]),
    (one(variants=[{"lr": 0.1}, {"lr": 0.1}]), ["experiments.e", "listed twice"]),
    (
        one(variants=[{"spectral_lambda": 0.1}, {"spectral_lambda": 0.2, "lr": 0.01}]),
        ["experiments.e", "spectral_lambda (which differ) do not apply"],
    ),
    # a setting varied where it applies to no trial
    (
        one(grid={"spectral_lambda": [0.1]}),
        ["experiments.e: it varies spectral_lambda, which applies to none of its trials"],
    ),
    # a setting given where it applies to no trial: it would be dropped without a word
    (
        one({"optimizer": "adam", "momentum": 0.9}),
        ["config key defaults.momentum: 0.9 applies to none of the config's trials", "sgd only"],
    ),
    (
        one(settings={"optimizer": "adam", "momentum": 0.9, "nesterov": True}),
        ["config key experiments.e.settings.momentum: 0.9 applies to none of its trials"],
    ),
    (
        one(variants=[{}, {"optimizer": "adam", "nesterov": True, "momentum": 0.5}]),
        ["config key experiments.e.variants.1.nesterov: true applies to none of its trials"],
    ),
    (
        one(grid={"opt": [{"optimizer": "adam", "momentum": 0.9}, {"optimizer": "sgd"}]}),
        ["config key experiments.e.grid.opt.0.momentum: 0.9 applies to none of its trials"],
    ),
    (
        one(settings={"rank": 3}),
        ["experiments.e.settings.rank: 3 applies to none", "structure low_rank only"],
    ),
    # thresholds whose columns would share one name
    (
        one({"effective_rank_thresholds": [0.001, 0.0010000001]}),
        ["experiments.e", "same label twice"],
    ),
]


@pytest.mark.parametrize(("config", "names"), BAD, ids=[str(i) for i in range(len(BAD))])
def test_bad_config_names_the_key(config, names):
    with pytest.raises(ConfigError) as err:
        all_trials(validate_config(config))
    for name in names:
        assert name in str(err.value)


def test_valid_grids_still_pass():
    """Controls for the duplicate checks: distinct values, and a setting that applies to some
    of the variants only, are accepted with one trial per combination and seed."""
    config = one(
        grid={"lr": [0.01, 0.02]},
        variants=[{"strategy": "standard"}, {"strategy": "spectral_reg", "spectral_lambda": 0.1}],
    )
    config["experiments"]["e"]["seeds"] = 2
    trials = all_trials(validate_config(config))["e"]
    assert len(trials) == len({t.path for t in trials}) == 2 * 2 * 2


def test_momentum_that_applies_to_some_trials_is_accepted():
    """Momentum set for an experiment (or in defaults) whose grid has SGD and Adam applies to
    the SGD trials: accepted, and the Adam trials are plain Adam."""
    for config in (
        one(settings={"momentum": 0.9}, grid={"optimizer": ["sgd", "adam"]}),
        one({"momentum": 0.9}, grid={"optimizer": ["sgd", "adam"]}),
        one({"momentum": 0.9, "optimizer": "adam"}, variants=[{"optimizer": "sgd"}, {}]),
    ):
        paths = sorted(t.path.split("/")[3] for t in all_trials(validate_config(config))["e"])
        assert paths == ["adam-lr0.01-wd0", "sgd-lr0.01-wd0-mom0.9"]


def test_duplicate_yaml_key_is_refused_naming_the_file(tmp_path):
    (tmp_path / "c.yaml").write_text("experiments:\n  a: {seeds: 1}\n  a: {seeds: 2}\n")
    with pytest.raises(ConfigError, match=r"c.yaml: key 'a' appears twice .*line 3"):
        load_yaml(tmp_path / "c.yaml")
    (tmp_path / "ok.yaml").write_text("experiments:\n  a: {seeds: 1}\n  b: {seeds: 2}\n")
    assert load_yaml(tmp_path / "ok.yaml") == {
        "experiments": {"a": {"seeds": 1}, "b": {"seeds": 2}}
    }


def test_yaml_merge_keys_merge_and_a_key_beside_them_overrides(tmp_path):
    text = "base: &b {seeds: 2, grid: {dim: [4]}}\nexperiments:\n  a:\n    <<: *b\n    seeds: 3\n"
    (tmp_path / "m.yaml").write_text(text)
    assert load_yaml(tmp_path / "m.yaml")["experiments"]["a"] == {"seeds": 3, "grid": {"dim": [4]}}
    (tmp_path / "d.yaml").write_text(text + "    seeds: 4\n")  # the own key twice: refused
    with pytest.raises(ConfigError, match=r"key 'seeds' appears twice .*line 6"):
        load_yaml(tmp_path / "d.yaml")


def test_missing_checkpoint_names_the_key(tmp_path):
    config = validate_config(
        {"checkpoints": {"mine": "nope.pt"}, "experiments": {"e": {"seeds": 1}}}
    )
    with pytest.raises(ConfigError, match="config key checkpoints.mine: 'nope.pt' does not exist"):
        check_checkpoint_paths(config, base=tmp_path)


def test_results_dir_that_cannot_be_written_is_named(tmp_path, monkeypatch):
    (tmp_path / "file").write_text("not a directory")
    with pytest.raises(ConfigError, match=f"cannot write to the results directory {tmp_path}/file"):
        check_results_dir(tmp_path / "file")
    with pytest.raises(ConfigError, match="has .* MB free .*No space left on device"):
        check_results_dir(tmp_path / "ok", min_free_mb=10**12)
    check_results_dir(tmp_path / "ok")
    assert not any((tmp_path / "ok").iterdir())


def test_a_results_path_that_is_no_directory_is_named_before_the_dag(tmp_path):
    """A file, a symlink loop or a dangling link in place of results/ (Snakemake's listing of
    its files raised ELOOP after the parse); a missing one or a link to a directory is fine."""
    assert results_dir_problem(tmp_path / "missing") is None
    (tmp_path / "dir").mkdir()
    (tmp_path / "to_dir").symlink_to(tmp_path / "dir")
    assert results_dir_problem(tmp_path / "dir") is None
    assert results_dir_problem(tmp_path / "to_dir") is None
    (tmp_path / "file").write_text("not a directory")
    assert results_dir_problem(tmp_path / "file") == (
        f"{tmp_path / 'file'} is not a directory: move it away, and a run makes one"
    )
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    assert results_dir_problem(tmp_path / "loop") == (
        f"the results directory {tmp_path / 'loop'} cannot be reached: "
        "Too many levels of symbolic links"
    )
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    assert results_dir_problem(tmp_path / "dangling").endswith(": No such file or directory")


def run(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    return run_snakemake(workdir, "-n", *args, check=False)


@pytest.mark.workflow
@pytest.mark.parametrize(
    ("file_config", "cli", "message"),
    [
        (one({"lr": "1e-3"}), [], "config key defaults.lr: '1e-3' is not of type 'number'"),
        (one(), ["--config", "device=tpu"], "config key device: 'tpu' is not one of"),
        (
            one(),
            ["--config", "defaults={dim: 0}"],
            "config key defaults.dim: 0 is less than the minimum of 1",
        ),
        (
            {
                "experiments": {"walk": {"seeds": 1, "settings": {"model": "deep_linear"}}},
                "gauss_newton": {"along_training": {"experiment": "walk"}},
            },
            [],
            "config key experiments.walk: gauss_newton.along_training needs its trials to save "
            "their weights (setting save_recorded_weights: true)",
        ),
        (
            "experiments:\n  e: {seeds: 1}\n  e: {seeds: 2, settings: {dim: 4}}\n",
            [],
            "config.yaml: key 'e' appears twice in one mapping (line 3)",
        ),
    ],
)
def test_snakemake_stops_before_any_job_without_traceback(tmp_path, file_config, cli, message):
    text = file_config if isinstance(file_config, str) else yaml.safe_dump(file_config)
    (tmp_path / "config.yaml").write_text(text)
    proc = run(tmp_path, "--configfile", str(tmp_path / "config.yaml"), *cli)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "Invalid config: " in out and message in out.split("Invalid config: ", 1)[1]
    assert "Traceback" not in out and 'File "' not in out
    assert not (tmp_path / "results").exists()


def start(workdir: Path, config: dict, *args: str, env: dict | None = None) -> str:
    """Run (not dry-run) the workflow on ``config``, which must stop before any job: its
    output."""
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))
    cmd = [SNAKEMAKE, "-s", REPO / "Snakefile", "--directory", workdir, *args]
    cmd += ["--configfile", workdir / "config.yaml"]
    proc = subprocess.run(list(map(str, cmd)), capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode != 0
    assert not (workdir / "results" / "trials").exists()
    return proc.stdout + proc.stderr


@pytest.mark.workflow
def test_a_dimension_beyond_this_machines_memory_stops_before_any_job(tmp_path):
    """dim 100000 needs ~560 GB per training job (7 float64 matrices of 10^10 numbers and
    1,000 MB, matcond.condition_number.batching): a local run stops at its start, naming the
    key, instead of failing (or swapping) in every job."""
    out = start(tmp_path, one({"dim": 100_000, "epochs": 1}), "--cores", "1")
    assert (
        "Cannot start: config key experiments.e: dim 100000 needs about 561000 MB per training job"
        in out
    )


def test_nested_yaml_aliases_under_an_unknown_key_are_refused_at_once(tmp_path):
    """40 levels of two aliases each (2^40 leaves if walked as a tree) under a key the schema
    does not know: the key is named; the finite-number check visits each node once. Run in a
    child process so that a walk of the tree fails the test instead of hanging it."""
    levels = ["l0: &l0 [1.0, 2.0]"]
    levels += [f"l{i}: &l{i} [*l{i - 1}, *l{i - 1}]" for i in range(1, 40)]
    text = "experiments: {e: {seeds: 1}}\nbomb:\n" + "".join(f"  {line}\n" for line in levels)
    path = tmp_path / "bomb.yaml"
    path.write_text(text)
    code = (
        "import sys; from matcond.core.config import ConfigError, load_yaml, validate_config\n"
        f"try: validate_config(load_yaml({str(path)!r}))\n"
        "except ConfigError as err: print(err)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "bomb" in proc.stdout and "Additional properties" in proc.stdout, (
        proc.stdout + proc.stderr
    )


def test_a_config_above_the_size_limit_is_refused_before_it_is_parsed(tmp_path):
    """A YAML file of more than MAX_YAML_BYTES (1 MiB; the paper's config is 12 KB) is named
    with its size; it is not parsed (a parser that ran would fail on this content)."""
    from matcond.core.config import MAX_YAML_BYTES

    big = tmp_path / "big.yaml"
    big.write_text("{unclosed: [" + "x" * MAX_YAML_BYTES)
    with pytest.raises(ConfigError, match=r"big.yaml is 1.0 MiB, above the 1 MiB a config"):
        load_yaml(big)
    small = tmp_path / "small.yaml"
    small.write_text("a: 1\n")
    assert load_yaml(small) == {"a": 1}


def test_command_line_values_are_read_as_yaml():
    """Snakemake reads `--config` values with YAML's BaseLoader, every scalar a string; they
    are read again as a config file would read them (1e-3 stays a string there too)."""
    given = {"a": "false", "b": {"c": "30", "d": ["0.5", "sgd", "1e-3"], "e": "True"}}
    expected = {"a": False, "b": {"c": 30, "d": [0.5, "sgd", "1e-3"], "e": True}}
    assert command_line_values(given) == expected


# Nine levels of nine aliases: 9^9 values written out.
_LEVELS = zip("abcdefgh", "bcdefghi", strict=True)
ALIAS_BOMB = "{a: &a [x,x,x,x,x,x,x,x,x]"
ALIAS_BOMB += "".join(f", {b}: &{b} [{', '.join(['*' + a] * 9)}]" for a, b in _LEVELS) + "}"


def test_a_yaml_alias_on_the_command_line_is_refused_before_it_expands():
    """Snakemake's BaseLoader keeps an alias as one shared value; reading it again value by
    value would visit 9^9 of them (the run never started)."""
    bomb = yaml.load(ALIAS_BOMB, Loader=yaml.BaseLoader)
    with pytest.raises(ConfigError, match=r"--config bomb\.b\[0\]: a YAML alias"):
        command_line_values({"bomb": bomb})


def test_a_key_twice_in_a_command_line_mapping_is_refused():
    """Snakemake keeps the last of two equal keys; the config files refuse them, and so does
    the command line. Values of other options are not read."""
    given = ["snakemake", "--config", "job_server=false", "defaults={lr: 0.1, lr: 0.5}", "-n"]
    with pytest.raises(ConfigError, match="--config defaults: key 'lr' appears twice"):
        check_command_line(given)
    with pytest.raises(ConfigError, match="--config defaults: key 'lr' appears twice"):
        check_command_line(["snakemake", "--config=defaults={lr: 0.1, lr: 0.5}"])
    check_command_line(["snakemake", "--config", "defaults={lr: 0.1, dim: 4}", "-n"])
    check_command_line(["snakemake", "--config", "a=1", "--set-resources", "x={a: 1, a: 2}"])


@pytest.mark.workflow
@pytest.mark.parametrize(
    ("value", "message"),
    [
        (f"bomb={ALIAS_BOMB}", "Invalid config: --config bomb.b[0]: a YAML alias"),
        ("defaults={lr: 0.1, lr: 0.5}", "Invalid config: --config defaults: key 'lr' appears"),
        ("defaults={dim: 99999999999999999999999}", "config key defaults.dim: 9999"),
    ],
    ids=["alias bomb", "key twice", "beyond 64 bits"],
)
def test_bad_command_line_values_stop_the_run_in_one_line(tmp_path, value, message):
    cmd = [SNAKEMAKE, "-s", REPO / "Snakefile", "--directory", tmp_path, "-n"]
    cmd += ["--configfile", REPO / "config" / "test" / "config.yaml", "--config", value]
    proc = subprocess.run(list(map(str, cmd)), capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and message in proc.stderr, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr


@pytest.mark.workflow
def test_nested_and_boolean_keys_work_from_the_command_line(tmp_path):
    """`--config job_server=false 'defaults={epochs: 2}'` plans trials of 2 epochs (both used
    to be refused: "'false' is not of type 'boolean'", "'2' is not of type 'integer'")."""
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(one({"dim": 4, "epochs": 1})))
    cmd = [SNAKEMAKE, "-s", REPO / "Snakefile", "--directory", tmp_path, "-n"]
    cmd += ["--configfile", tmp_path / "config.yaml"]
    cmd += ["--config", "job_server=false", "defaults={epochs: 2}"]
    proc = subprocess.run(list(map(str, cmd)), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "-ep2-" in proc.stdout and "-ep1-" not in proc.stdout


@pytest.mark.workflow
def test_a_report_without_the_runs_config_names_the_command_that_works(tmp_path):
    """After a run with --configfile and --config, `snakemake --report` alone (the paper
    config: thousands of missing files) stops with one line that names the command with the
    run's config and this invocation's --directory; that command builds the report."""
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(one({"dim": 4, "epochs": 1})))
    base = [SNAKEMAKE, "-s", REPO / "Snakefile", "--directory", tmp_path]
    run_it = [*base, "--cores", "2", "--configfile", tmp_path / "config.yaml"]
    run_it += ["--config", "job_server=false"]
    proc = subprocess.run(list(map(str, run_it)), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = tmp_path / "results" / "report.html"
    proc = subprocess.run(
        list(map(str, [*base, "--report", report])), capture_output=True, text=True, timeout=120
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Missing metadata" not in out and "Traceback" not in out
    line = next(x for x in out.splitlines() if x.startswith("Cannot build the report: "))
    command = line.split("report on its results with: ")[1]
    assert command == (
        f"snakemake --directory {tmp_path} --configfile {tmp_path / 'config.yaml'} "
        "--config job_server=false --report results/report.html"
    )
    words = shlex.split(command)[1:]
    proc = subprocess.run(
        list(map(str, [*base, *words])), capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert report.stat().st_size > 10_000


@pytest.mark.workflow
def test_the_slurm_executor_without_slurm_tools_stops_at_once(tmp_path):
    """--executor slurm where sbatch and squeue are not on PATH: one line before any job,
    instead of waiting forever for the first job's account (PATH holds only bash and which)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "which"):
        (bin_dir / tool).symlink_to(shutil.which(tool))
    env = {**os.environ, "PATH": str(bin_dir)}
    config = one({"epochs": 1, "dim": 4})
    out = start(tmp_path, config, "--jobs", "1", "--executor", "slurm", env=env)
    assert (
        "Cannot start: the SLURM executor (--executor slurm, profiles/slurm) needs sbatch and"
        in out
    )


def test_a_value_nested_hundreds_deep_is_one_line_naming_the_key():
    """A 500-deep list (`--config 'defaults={dim: [[[...]]]}'`, or in a file) exhausted Python's
    recursion (RecursionError traceback): refused naming the key, before any job."""
    deep = "[" * 500 + "]" * 500
    with pytest.raises(ConfigError, match=r"^--config defaults: nested more than 50 levels"):
        command_line_values({"defaults": "{dim: " + deep + "}"})
    with pytest.raises(ConfigError, match=r"^--config defaults: nested more than 50 levels"):
        check_command_line(["snakemake", "--config", f"defaults={{dim: {deep}}}"])
    nested: list = []
    for _ in range(500):
        nested = [nested]
    with pytest.raises(ConfigError, match=r"^--config defaults.dim: nested more than 50"):
        command_line_values({"defaults": {"dim": nested}})
    with pytest.raises(ConfigError, match=r"^config key defaults.dim: nested more than 50"):
        validate_config({"defaults": {"dim": nested}, "experiments": {"e": {"seeds": 1}}})
