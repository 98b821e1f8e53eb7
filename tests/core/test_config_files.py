"""Which config runs: the paper config without --configfile, exactly the given files with it;
start-up notes on what a config leaves out (matcond.figures.captions.config_notes)."""

import re
import subprocess
from pathlib import Path

import pytest
import yaml
from support import REPO, SNAKEMAKE

from matcond.core.config import load_yaml, validate_config
from matcond.figures.captions import config_notes
from matcond.figures.catalog import FIGURES

pytestmark = pytest.mark.workflow  # every test starts Snakemake

TINY_EXP1 = {"experiments": {"exp1_dimension": {"grid": {"dim": [4]}, "seeds": 2}}}


def dry_run(workdir: Path, *args: str) -> tuple[list[str], str]:
    """The rules of the jobs `snakemake -n` plans (one entry per job), and its output."""
    cmd = [SNAKEMAKE, "-s", REPO / "Snakefile", "--directory", workdir, "-n", *args]
    proc = subprocess.run(list(map(str, cmd)), capture_output=True, text=True)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    return re.findall(r"^(?:local)?rule (\w+):$", out, flags=re.M), out


def write(path: Path, config: dict) -> str:
    path.write_text(yaml.safe_dump(config))
    return str(path)


def test_a_config_file_runs_exactly_what_it_lists(tmp_path):
    rules, out = dry_run(tmp_path, "--configfile", write(tmp_path / "c.yaml", TINY_EXP1))
    assert rules.count("train") == 1  # one block of its two seeds
    assert len(rules) <= 20
    assert rules.count("aggregate") == 1 and "results/tables/exp1_dimension.parquet" in out
    assert "gn_sweep" not in rules


def test_config_keys_stay_overridable_on_the_command_line(tmp_path):
    config = write(tmp_path / "c.yaml", TINY_EXP1)
    rules, out = dry_run(tmp_path, "--configfile", config, "--config", "block_size=1")
    assert rules.count("train") == 2  # a block per seed
    _, out = dry_run(tmp_path, "--configfile", config, "--config", "job_server=False", "-p")
    assert "/d4/" in out and "/d64/" not in out


def test_several_config_files_merge_in_order(tmp_path):
    more = {"experiments": {"exp1_dimension": {"seeds": 3}}, "block_size": 2}
    files = [write(tmp_path / "a.yaml", TINY_EXP1), write(tmp_path / "b.yaml", more)]
    rules, _ = dry_run(tmp_path, "--configfile", *files)
    assert rules.count("train") == 2  # seeds 0-1 and 2


def test_without_a_config_file_the_paper_config_runs(tmp_path):
    paper = load_yaml(REPO / "config" / "config.yaml")
    rules, _ = dry_run(tmp_path, "--config", "job_server=False")
    assert rules.count("gn_sweep") == len(paper["gauss_newton"]["sweeps"])
    assert rules.count("aggregate") == len(paper["experiments"])


def test_start_up_notes_as_a_user_sees_them(tmp_path):
    config = {
        "experiments": {
            "exp1_dimensoin": {"seeds": 1},
            "exp8_lr": {"grid": {"lr": [0.01]}, "seeds": 1},
        }
    }
    _, out = dry_run(tmp_path, "--configfile", write(tmp_path / "c.yaml", config))
    assert (
        "Note: experiment exp1_dimensoin: no claim or catalogued figure uses it (its tables "
        "and overview are made) (did you mean 'exp1_dimension'?)" in out
    )
    assert "Note: figure fig8_sensitivity skipped: exp8_wd not configured" in out
    assert "figures skipped (not configured)" in out
    assert "Traceback" not in out


def test_a_config_without_any_paper_figure_runs_without_error(tmp_path):
    config = {"experiments": {"mine": {"seeds": 1, "settings": {"dim": 4, "epochs": 2}}}}
    proc = subprocess.run(
        [
            *map(str, [SNAKEMAKE, "-s", REPO / "Snakefile", "--directory", tmp_path]),
            *("--configfile", write(tmp_path / "c.yaml", config), "--cores", "1"),
        ],
        capture_output=True,
        text=True,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert "Traceback" not in out and "KeyError" not in out
    assert (tmp_path / "results" / "tables" / "mine.csv").stat().st_size > 0
    assert (tmp_path / "results" / "claims.csv").stat().st_size > 0


def test_notes_name_unused_and_misspelt_experiments_and_partial_figures():
    needed = FIGURES["fig8_sensitivity"].experiments
    notes = config_notes(["exp1_dimensoin", needed[0]], [], ["exp1_dimension"], [])
    assert notes[0] == (
        "experiment exp1_dimensoin: no claim or catalogued figure uses it (its tables and "
        "overview are made) (did you mean 'exp1_dimension'?)"
    )
    assert f"figure fig8_sensitivity skipped: {needed[1]} not configured" in notes
    assert notes[-1] == "1 of 1 claims not checked: experiments exp1_dimension not configured"


def test_the_full_config_has_no_notes():
    paper = validate_config(load_yaml(REPO / "config" / "config.yaml"))
    claims = load_yaml(REPO / "config" / "claims.yaml")
    tables = [c["table"] for c in claims["claims"]]
    gn = paper["gauss_newton"]
    others = [r["experiment"] for r in claims["readings"]]
    others += [entry["pool"] for entry in claims["heavy_tail"].values()]
    others += [gn[part]["experiment"] for part in ("exp7", "along_training")]
    others += [*paper["theory"]["experiments"], *paper["depth_theory"]["experiments"]]
    gn_parts = [*gn["sweeps"], "exp7", "along_training"]
    experiments = [*paper["experiments"], "depth_theory"]  # the depth formula's table
    assert config_notes(experiments, gn_parts, tables, others) == []


def test_a_checkpoint_alone_runs_only_its_analysis(tmp_path):
    """The command for one's own weights (docs/own-weights.md): a config with only `checkpoints`."""
    import torch
    from safetensors.torch import save_file

    save_file({"fc.weight": torch.randn(8, 4)}, str(tmp_path / "mine.safetensors"))
    config = write(tmp_path / "c.yaml", {"checkpoints": {"mine": "mine.safetensors"}})
    rules, _ = dry_run(tmp_path, "--configfile", config)
    assert sorted(rules) == ["all", "analyze_weights"]


def test_a_config_with_nothing_to_run_is_refused_before_any_job(tmp_path):
    cmd = [SNAKEMAKE, "-s", REPO / "Snakefile", "--directory", tmp_path, "-n", "--configfile"]
    cmd.append(write(tmp_path / "c.yaml", {"device": "cpu"}))
    proc = subprocess.run(list(map(str, cmd)), capture_output=True, text=True)
    assert proc.returncode != 0
    assert "config lists nothing to run: no experiments, gauss_newton.sweeps or checkpoints" in (
        proc.stdout + proc.stderr
    )


def test_held_out_choices_run_on_seeds_their_scorers_do_not_use():
    """The paper config's independent trials: ctrl_spectral_reg chooses spectral_reg's
    defaults on seeds exp4 (which scores them) does not use; the theory's checks
    (theory_check*, depth_check: other cells) share their seeds with no other experiment."""
    paper = validate_config(load_yaml(REPO / "config" / "config.yaml"))
    seeds = {
        name: set(range(e["seeds"]) if isinstance(e["seeds"], int) else e["seeds"])
        for name, e in paper["experiments"].items()
    }
    assert not seeds["ctrl_spectral_reg"] & seeds["exp4_strategies"]
    checks = [name for name in seeds if name.startswith(("theory_check", "depth_check"))]
    assert len(checks) == 8
    others = set().union(*(s for name, s in seeds.items() if name not in checks))
    assert not set().union(*(seeds[name] for name in checks)) & others


def test_a_run_of_your_own_weights_alone_says_nothing_of_the_papers():
    """A checkpoints-only config printed "49 of 49 figures skipped" and "216 claims not
    checked" before the user's own result."""
    tables = ["exp1_dimension", "exp2_optimizer"]
    assert config_notes([], [], tables, []) == []
    assert config_notes(["exp1_dimension"], [], tables, [])[-1].startswith("1 of 2 claims not")
