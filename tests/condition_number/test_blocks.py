"""Training in blocks of seeds (matcond.core.trials.Block,
matcond.condition_number.run.run_block_job): how seeds are cut into blocks, and that a trial's files
never depend on the block it ran in."""

import json
from pathlib import Path

import pytest
import yaml
from support import REPO

from matcond.condition_number import batching, run
from matcond.core.config import validate_config
from matcond.core.files import read_manifest
from matcond.core.trials import Block, Trial, all_trials, blocks_of, seeds_by_cell, trial_paths


def small_trials() -> dict[str, list[Trial]]:
    with open(REPO / "config" / "test" / "config.yaml") as fh:
        return all_trials(validate_config(yaml.safe_load(fh)))


def trial(cell: dict, seed: int) -> Trial:
    return Trial(json.dumps({**cell, "seed": seed}, sort_keys=True))


def a_setting(**changes) -> dict:
    """The settings (no seed) of the small config's first trial, with ``changes``."""
    first = small_trials()["exp1_dimension"][0].spec
    return {**{k: v for k, v in first.items() if k != "seed"}, **changes}


def test_blocks_are_aligned_per_setting_and_hold_each_trial_once():
    a, b = a_setting(dim=4), a_setting(dim=8)
    listed = [trial(a, s) for s in (0, 1, 2, 5, 9, 10)] + [trial(b, 3), trial(a, 1)]
    blocks = blocks_of(listed, 4)
    assert [(blk.first, blk.seeds) for blk in blocks] == [
        (0, [0, 1, 2]),
        (4, [5]),
        (8, [9, 10]),
        (0, [3]),
    ]
    assert [blk.path.rsplit("/", 1)[1] for blk in blocks] == [
        "seeds0-3",
        "seeds4-7",
        "seeds8-11",
        "seeds0-3",
    ]
    assert blocks[0].path != blocks[3].path  # same seeds, other settings
    assert sum(len(blk.trials) for blk in blocks) == len(set(listed))


def test_a_new_seed_changes_only_its_block():
    cell = a_setting()
    before = {blk.path: blk for blk in blocks_of([trial(cell, s) for s in range(10)], 4)}
    after = {blk.path: blk for blk in blocks_of([trial(cell, s) for s in range(11)], 4)}
    changed = [path for path in after if before.get(path) != after[path]]
    assert changed == [next(p for p in after if p.endswith("seeds8-11"))]


def test_seeds_by_cell_is_independent_of_order_and_round_trips():
    trials = [t for ts in small_trials().values() for t in ts]
    cells = seeds_by_cell(trials)
    assert cells == seeds_by_cell(reversed(trials))
    assert sorted(trial_paths(cells)) == sorted({t.path for t in trials})


def distinct_settings() -> list[Trial]:
    """One trial of every model, optimizer, strategy and structure (and recording mode) of
    the small config."""
    chosen = {}
    for trials in small_trials().values():
        for t in trials:
            s = t.spec
            kind = (s["model"], s["optimizer"], s["strategy"], s["structure"], s["record_every"])
            chosen.setdefault(kind, t)
    return list(chosen.values())


def train_in_blocks(settings: list[Trial], size: int, root: Path, seeds=range(4)) -> Path:
    for setting in settings:
        cell = {k: v for k, v in setting.spec.items() if k != "seed"}
        trials = [trial(cell, s) for s in seeds]
        for block in blocks_of(trials, size):
            request = block.request(saved={t.path for t in trials})
            manifest = root / f"{block.path}.json"
            manifest.parent.mkdir(parents=True, exist_ok=True)
            run.run_block_job(request, str(manifest), 1, "cpu", str(root / "bench.tsv"))
    return root


@pytest.mark.workflow  # trains every setting of the small config four times: ~20 s
def test_a_trials_bytes_do_not_depend_on_its_block(tmp_path, monkeypatch):
    """Blocks of 1, 3 and 16 seeds (each trained side by side as one batch: the small config's
    dims are far below matcond.condition_number.batching.BATCH_ELEMENTS), and a block of 16
    trained one seed at a time ("16/1")."""
    settings = distinct_settings()
    assert len(settings) >= 15  # every model, optimizer and strategy of the small config
    roots = {size: train_in_blocks(settings, size, tmp_path / f"b{size}") for size in (1, 3, 16)}
    monkeypatch.setattr(batching, "BATCH_ELEMENTS", 1)
    roots["16/1"] = train_in_blocks(settings, 16, tmp_path / "b16-1")
    files = {
        size: {
            p.relative_to(root): p.read_bytes()
            for p in sorted(root.rglob("seed*"))
            if p.suffix in (".parquet", ".safetensors")
        }
        for size, root in roots.items()
    }
    assert len(files[1]) == 2 * 4 * len(settings)  # a table and weights per trial
    assert files[3] == files[1]
    assert files[16] == files[1]
    assert files["16/1"] == files[1]
    # the manifests of different block sizes list the same records for the same trials
    records = {
        size: {
            (p.parent, name): record
            for p in root.rglob("seeds*.json")
            for name, record in read_manifest(p)["trials"].items()
        }
        for size, root in roots.items()
    }
    as_relative = {
        size: {(k[0].relative_to(roots[size]), k[1]): v for k, v in r.items()}
        for size, r in records.items()
    }
    assert as_relative[3] == as_relative[1] == as_relative[16] == as_relative["16/1"]


@pytest.mark.parametrize("saved", [[], [1]])
def test_a_block_saves_weights_only_where_asked(tmp_path, saved):
    (setting,) = distinct_settings()[:1]
    cell = {k: v for k, v in setting.spec.items() if k != "seed"}
    trials = [trial(cell, 0), trial(cell, 1)]
    manifest = tmp_path / "seeds0-1.json"
    request = Block(tuple(trials), 0, 2).request(saved={trials[s].path for s in saved})
    run.run_block_job(request, str(manifest), 1, "cpu", str(tmp_path / "bench.tsv"))
    request = json.loads(request)
    assert request == {"spec": cell, "seeds": [0, 1], "save_weights": saved}
    assert sorted(p.name for p in tmp_path.glob("seed?.*")) == sorted(
        ["seed0.parquet", "seed1.parquet", *(f"seed{s}.safetensors" for s in saved)]
    )
    stored = read_manifest(manifest)
    assert stored["block"] == request
    assert set(stored["trials"]) == {"seed0", "seed1"}
