"""Training in blocks of seeds (matcond.core.trials.Block,
matcond.condition_number.run.run_block_job): how seeds are cut into blocks, and that a trial's files
never depend on the block it ran in."""

import json
from pathlib import Path

import pytest
import yaml
from support import REPO

from matcond.condition_number import batching, run
from matcond.core.arms import diverged_trials
from matcond.core.config import validate_config
from matcond.core.files import (
    DamagedFileError,
    block_manifests,
    load_trial_weights,
    read_manifest,
    read_trials,
)
from matcond.core.trials import (
    Block,
    Trial,
    all_trials,
    blocks_of,
    bundle_request,
    bundles_of,
    seeds_by_cell,
    trial_paths,
)


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


def many_blocks(cells: int) -> list[Block]:
    """One block of one seed for each of ``cells`` learning rates."""
    cell = a_setting(dim=4)
    return [Block((trial({**cell, "lr": 1e-3 * (i + 1)}, 0),), 0, 64) for i in range(cells)]


def test_bundles_hold_each_block_once_and_a_new_setting_changes_only_its_bundle():
    """Content-defined bundles (matcond.core.trials.bundles_of): every block in one bundle;
    a block added (a new setting) lands in one bundle, which keeps the rest of its blocks or
    splits at the new one, and every other bundle keeps its name and blocks."""
    blocks = many_blocks(400)
    before = bundles_of(blocks[:-1], lambda b: 1.0, target=10)
    after = bundles_of(blocks, lambda b: 1.0, target=10)
    for bundles, held in ((before, blocks[:-1]), (after, blocks)):
        in_bundles = [b.path for bs in bundles.values() for b in bs]
        assert sorted(in_bundles) == sorted(b.path for b in held)  # each once
    new = blocks[-1].path
    gone = {name: bs for name, bs in before.items() if after.get(name) != bs}
    came = {name: bs for name, bs in after.items() if before.get(name) != bs}
    assert len(gone) == 1 and 1 <= len(came) <= 2
    assert any(b.path == new for bs in came.values() for b in bs)
    regrouped = sorted(b.path for bs in came.values() for b in bs)
    assert regrouped == sorted([new, *(b.path for bs in gone.values() for b in bs)])
    assert all(name.startswith("bundles/") for name in after)


def test_bundles_last_about_their_target():
    """A bundle ends after a block with probability seconds / target: on 2,000 blocks of 1 s
    and a target of 20 s, bundles of 20 s on average (within three standard errors of the
    geometric law's mean, 20 / sqrt(100)); a block longer than the target ends its bundle."""
    bundles = bundles_of(many_blocks(2000), lambda b: 1.0, target=20)
    sizes = [len(bs) for bs in bundles.values()]
    assert 14 <= sum(sizes) / len(sizes) <= 26
    alone = bundles_of(many_blocks(50), lambda b: 30.0, target=20)
    assert [len(bs) for bs in alone.values()] == [1] * 50


def test_a_bundle_writes_its_blocks_files_as_their_own_jobs_do(tmp_path, monkeypatch):
    """One job of a bundle of three blocks (two settings, one of them in two blocks; one
    saving weights) writes every trial file and block manifest with the bytes that the
    blocks' own jobs write, and a manifest that lists its blocks' manifests; the readers
    (read_trials, diverged_trials, load_trial_weights) give through it what they give through
    the blocks' manifests."""
    one, other = distinct_settings()[:2]
    cells = [{k: v for k, v in t.spec.items() if k != "seed"} for t in (one, other)]
    trials = [trial(cells[0], s) for s in range(3)] + [trial(cells[1], s) for s in range(2)]
    blocks = blocks_of(trials, 2)
    assert len(blocks) == 3
    saved = {trials[1].path}
    for root in ("alone", "bundled"):
        (tmp_path / root / "results" / "trials" / "bundles").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "alone")
    for block in blocks:
        manifest = Path("results/trials") / f"{block.path}.json"
        manifest.parent.mkdir(parents=True, exist_ok=True)
        run.run_block_job(block.request(saved), str(manifest), 1, "cpu", "bench.tsv")
    monkeypatch.chdir(tmp_path / "bundled")
    bundle = "results/trials/bundles/b.json"
    run.run_block_job(bundle_request(blocks, saved), bundle, 1, "cpu", "bench.tsv")

    def written(root: str) -> dict:
        files = (tmp_path / root / "results" / "trials").rglob("seed*")
        return {p.relative_to(tmp_path / root): p.read_bytes() for p in files}

    assert written("bundled") == written("alone")
    assert len(written("alone")) == len(trials) + 1 + len(blocks)  # a weights file
    listed = block_manifests([bundle])
    assert listed == [Path(f"results/trials/{b.path}.json") for b in blocks]
    paths = [t.path for t in trials]
    assert read_trials([bundle], paths).equals(read_trials(listed, paths))
    by_cell = {"e": seeds_by_cell(trials)}
    assert diverged_trials(by_cell, [bundle]).equals(diverged_trials(by_cell, listed))
    weights = load_trial_weights(bundle, trials[1].path, trials[1].spec_json)
    alone = load_trial_weights(listed[0], trials[1].path, trials[1].spec_json)
    assert weights.keys() == alone.keys() and all((weights[k] == alone[k]).all() for k in alone)
    # a block manifest altered after the bundle listed it: named, not read
    listed[2].write_text(listed[2].read_text().replace('"seeds"', '"seeds" '))
    with pytest.raises(DamagedFileError, match="not the manifest its bundle"):
        read_trials([bundle], paths)
