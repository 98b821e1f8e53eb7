"""Damage to the workflow's files is detected, named, and never read as data
(matcond.core.files)."""

import json
import os
import shutil

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from matcond.condition_number.run import write_table, write_weights
from matcond.core.files import (
    SETTINGS_KEY,
    DamagedFileError,
    JSONFileError,
    file_record,
    load_trial_weights,
    load_weights,
    read_json,
    read_parquet,
    read_trials,
    write_bundle_manifest,
    write_manifest,
    write_parquet,
)
from matcond.core.trials import Block, Trial, bundle_request, canonical
from matcond.pipeline.damage import by_block, damaged_files, file_problem, seed_ranges, set_aside


def trial_of(spec: dict) -> Trial:
    return Trial(json.dumps(canonical(spec), sort_keys=True))


def block_request(trials: list[Trial]) -> str:
    """The request JSON of a block of ``trials`` of one setting, saving no weights."""
    return Block(tuple(trials), 0, 4).request(saved=())


def write_block(results, trials: list[Trial], table: pd.DataFrame, device: str = "cpu"):
    """Each trial's table and the block's manifest (trained on ``device``), as a training
    job writes them; returns the block's path below results/trials and its manifest."""
    directory = results / "trials" / trials[0].cell
    directory.mkdir(parents=True, exist_ok=True)
    records = {}
    for trial in trials:
        path = directory / f"seed{trial.seed}.parquet"
        write_table(table, trial.spec, path)
        files = {path.name: file_record(path)}
        records[f"seed{trial.seed}"] = {"diverged_epoch": None, "files": files}
    manifest = directory / "seeds0-3.json"
    write_manifest(manifest, json.loads(block_request(trials)), records, device)
    return f"{trials[0].cell}/seeds0-3", manifest


@pytest.fixture
def table() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({"epoch": np.arange(500), "error": rng.standard_normal(500)})


def test_parquet_round_trip_and_flipped_byte(tmp_path, table):
    path = tmp_path / "t.parquet"
    write_parquet(table, path, {"k": "v"})
    pd.testing.assert_frame_equal(read_parquet(path), table)
    data = bytearray(path.read_bytes())
    data[300] ^= 0x01  # inside the first data page
    path.write_bytes(data)
    with pytest.raises(DamagedFileError, match=f"{path}: unreadable parquet"):
        read_parquet(path)


def test_truncated_parquet_and_directory_are_named(tmp_path, table):
    path = tmp_path / "t.parquet"
    write_parquet(table, path)
    path.write_bytes(path.read_bytes()[:-20])
    with pytest.raises(DamagedFileError, match="unreadable parquet"):
        read_parquet(path)
    (tmp_path / "d.parquet").mkdir()
    with pytest.raises(DamagedFileError, match="not a regular file"):
        read_parquet(tmp_path / "d.parquet")


def test_trial_file_must_hold_the_trial_its_path_names(tmp_path, spec, table):
    results = tmp_path / "results"
    mine, other = trial_of(spec), trial_of({**spec, "seed": 1})
    _, manifest = write_block(results, [mine, other], table)
    root = results / "trials"
    both = read_trials([manifest], [mine.path, other.path], root)
    assert both.equals(pd.concat([table, table], ignore_index=True).assign(device="cpu"))
    narrow = read_trials([manifest], [mine.path], root, columns=["epoch"])
    assert list(narrow.columns) == ["epoch"]  # the device only with every column
    mine_file, other_file = (root / f"{t.path}.parquet" for t in (mine, other))
    mine_file.write_bytes(other_file.read_bytes())  # the same size: only the SHA-256 sees it
    with pytest.raises(DamagedFileError, match="checksum mismatch"):
        read_trials([manifest], [mine.path], root)
    # with the manifest's record made to match, the spec inside still names the other trial
    write_block(results, [mine, other], table)
    mine_file.write_bytes(other_file.read_bytes())
    stored = json.loads(manifest.read_text())
    stored["trials"]["seed0"]["files"]["seed0.parquet"] = file_record(mine_file)
    write_manifest(manifest, stored["block"], stored["trials"], stored["device"])
    with pytest.raises(DamagedFileError, match=f"holds the trial {other.path}, not {mine.path}"):
        read_trials([manifest], [mine.path], root)
    with pytest.raises(DamagedFileError, match="listed in none of the manifests"):
        read_trials([], [mine.path], root)


def test_each_trial_reads_with_the_device_its_block_trained_on(tmp_path, spec, table):
    """Blocks of one experiment on the CPU and on a GPU (device: auto, d >= gpu_min_dim), and
    a manifest from before devices were recorded ("")."""
    results = tmp_path / "results"
    here = trial_of(spec)
    there = trial_of({**spec, "dim": spec["dim"] * 2})
    _, on_cpu = write_block(results, [here], table)
    _, on_gpu = write_block(results, [there], table, device="cuda")
    stored = json.loads(on_cpu.read_text())
    del stored["device"]
    on_cpu.write_text(json.dumps(stored))
    frame = read_trials([on_cpu, on_gpu], [here.path, there.path], results / "trials")
    assert list(frame["device"]) == [""] * len(table) + ["cuda"] * len(table)


def test_weights_checked_against_digest_and_spec(tmp_path, spec):
    path = tmp_path / "w.safetensors"
    weights = {"final.product": np.arange(16.0).reshape(4, 4), "target.product": np.eye(4)}
    spec_json = json.dumps(spec, sort_keys=True)
    write_weights(weights, spec, path)
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask  # as any file, not 0600
    loaded = load_weights(path, spec_json)
    assert all(np.array_equal(loaded[k], v) for k, v in weights.items())
    with pytest.raises(DamagedFileError, match="another trial or other settings"):
        load_weights(path, json.dumps({**spec, "seed": 1}, sort_keys=True))
    data = bytearray(path.read_bytes())
    data[-8:] = np.float64(7.5).tobytes()  # one value altered, size unchanged
    path.write_bytes(data)
    with pytest.raises(DamagedFileError, match="checksum mismatch"):
        load_weights(path, spec_json)
    path.write_bytes(data[:-8])
    with pytest.raises(DamagedFileError, match="256 bytes of tensor data, the file holds 248"):
        load_weights(path, spec_json)


@pytest.mark.parametrize("suffix", [".png", ".pdf"])
def test_figures_whole_truncated_empty(tmp_path, suffix):
    path = tmp_path / f"f{suffix}"
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    fig.savefig(path)
    plt.close(fig)
    assert file_problem(path) is None
    path.write_bytes(path.read_bytes()[:-30])
    assert file_problem(path).startswith("truncated")
    path.write_bytes(b"")
    assert file_problem(path) == "empty file"


def test_csv_and_html(tmp_path, table):
    csv = tmp_path / "t.csv"
    table.to_csv(csv, index=False)
    assert file_problem(csv) is None
    csv.write_bytes(csv.read_bytes()[:-5])
    assert file_problem(csv) == "truncated CSV (does not end with b'\\n')"
    html = tmp_path / "t.html"
    html.write_text("<html><body>x</body></html>\n")
    assert file_problem(html) is None
    html.write_text("<html><body>x</bo")
    assert file_problem(html).startswith("truncated HTML")


def test_stale_settings_are_damage_and_set_aside_keeps_every_copy(tmp_path, spec, table):
    """A block computed with another rank_rtol (not in its path) no longer matches the config:
    its manifest and its trial files are set aside; setting aside another version keeps both
    copies, setting aside bytes already kept there keeps one (a setting toggled back and forth
    grew results/damaged/ by a copy per toggle)."""
    results = tmp_path / "results"
    old, new = trial_of(spec), trial_of({**spec, "rank_rtol": 1e-6})
    assert old.path == new.path
    block, manifest = write_block(results, [old], table)
    path = results / "trials" / f"{old.path}.parquet"
    assert damaged_files(results, {block: block_request([old])}, []) == {}
    found = damaged_files(results, {block: block_request([new])}, [])
    problem = "computed with other settings (rank_rtol)"
    assert found == {manifest: problem, path: problem}
    first = set_aside(path, results)
    write_table(table.iloc[:-1], old.spec, path)
    second = set_aside(path, results)
    assert first != second and first.exists() and second.exists() and not path.exists()
    assert first.parent == results / "damaged" / "trials" / old.cell
    for version, kept in ((table, first), (table.iloc[:-1], second)):
        write_table(version, old.spec, path)
        assert set_aside(path, results) == kept and not path.exists()
    assert len(list(first.parent.iterdir())) == 2


def test_a_missing_or_resized_trial_file_sets_its_block_aside(tmp_path, spec, table):
    results = tmp_path / "results"
    trials = [trial_of({**spec, "seed": s}) for s in (0, 1)]
    block, manifest = write_block(results, trials, table)
    request = {block: block_request(trials)}
    first, second = (results / "trials" / f"{t.path}.parquet" for t in trials)
    first.unlink()
    assert damaged_files(results, request, []) == {
        manifest: "its trial files seed0.parquet are missing or altered"
    }
    write_block(results, trials, table)
    second.write_bytes(second.read_bytes()[:-10])
    found = damaged_files(results, request, [])
    assert found[manifest] == "its trial files seed1.parquet are missing or altered"
    assert found[second] == "not the file its block's manifest lists (another size)"
    assert first not in found
    # a same-size swap (another seed's table): only the SHA-256 tells, before any job
    write_block(results, trials, table)
    first.write_bytes(second.read_bytes())
    assert damaged_files(results, request, [])[first] == (
        "not the file its block's manifest lists (checksum mismatch)"
    )
    # another seed list: the block is trained again
    write_block(results, trials, table)
    found = damaged_files(results, {block: block_request(trials[:1])}, [])
    assert found[manifest] == "made for seeds 0-1, not 0"
    # the run names the block once, its trial files with it (not one line per trial)
    assert by_block(found) == {manifest: ("made for seeds 0-1, not 0", [first, second])}


def test_seed_ranges_are_sorted_runs():
    assert seed_ranges([1041, 1000, 1001, 1002, 7]) == "7, 1000-1002, 1041"
    assert seed_ranges([]) == "none"


def test_a_trial_file_damaged_for_its_own_reason_keeps_its_line(tmp_path):
    manifest, table, other = (
        tmp_path / "trials" / "s" / n for n in ("seeds0-63.json", "seed0.parquet", "seed1.parquet")
    )
    damaged = {
        table: "checksum mismatch",
        manifest: "its trial files seed0.parquet are missing or altered",
        other: "its trial files seed0.parquet are missing or altered",
    }
    assert by_block(damaged) == {
        table: ("checksum mismatch", []),
        manifest: ("its trial files seed0.parquet are missing or altered", [other]),
    }


@pytest.mark.parametrize(
    "content", [b"", b"{", b'{"block": 1}', b"[" * 100_000, b'{"block": {"spec": 1, "seeds": []}}']
)
def test_a_damaged_manifest_is_named_not_a_crash(tmp_path, spec, table, content):
    results = tmp_path / "results"
    block, manifest = write_block(results, [trial_of(spec)], table)
    manifest.write_bytes(content)
    found = damaged_files(results, {block: block_request([trial_of(spec)])}, [])
    assert list(found) == [manifest]
    assert found[manifest] == "empty file" or found[manifest].startswith(
        ("not a block manifest", "made for another setting")
    )


def test_a_table_computed_with_other_settings_is_damage(tmp_path, table):
    """A GN table stores its settings: another value (even with Snakemake's metadata lost)
    names the setting; an older table without settings is rebuilt too."""
    results = tmp_path / "results"
    (results / "tables").mkdir(parents=True)
    path = results / "tables" / "gn_fig2_depth.parquet"
    old = json.dumps({"data": {"seed": 0}, "sweep": {"widths": [4, 8], "seeds": 2}})
    new = json.dumps({"data": {"seed": 0}, "sweep": {"widths": [4, 16], "seeds": 2}})
    write_parquet(table, path, {SETTINGS_KEY: old})
    output = "results/tables/gn_fig2_depth.parquet"
    assert damaged_files(results, {}, [output], {output: old}) == {}
    found = damaged_files(results, {}, [output], {output: new})
    assert found == {path: "computed with other settings (sweep.widths)"}
    write_parquet(table, path)
    assert "no settings" in damaged_files(results, {}, [output], {output: old})[path]
    for stored in ("{", "[" * 100_000, "[1, 2]"):  # damaged settings: named, no crash
        write_parquet(table, path, {SETTINGS_KEY: stored})
        found = damaged_files(results, {}, [output], {output: old})[path]
        assert found.startswith("unreadable settings in its metadata"), found


def test_a_foreign_spec_is_damage_not_a_crash(tmp_path, spec, table):
    results = tmp_path / "results"
    trial = trial_of(spec)
    _, manifest = write_block(results, [trial], table)
    path = results / "trials" / f"{trial.path}.parquet"
    write_parquet(table, path, {"matcond.spec": '{"dim": 8}'})
    stored = json.loads(manifest.read_text())
    stored["trials"]["seed0"]["files"]["seed0.parquet"] = file_record(path)
    write_manifest(manifest, stored["block"], stored["trials"], stored["device"])
    with pytest.raises(DamagedFileError, match=r"unreadable trial spec in its metadata \(KeyError"):
        read_trials([manifest], [trial.path], results / "trials")


def test_a_table_copied_over_another_is_damage(tmp_path, table):
    """Another experiment's aggregated table copied over this one's: its footer names the file
    it was written as. A copy of the whole results directory elsewhere is no damage."""
    tables = tmp_path / "results" / "tables"
    tables.mkdir(parents=True)
    write_parquet(table, tables / "exp1_dimension.parquet")
    write_parquet(table.iloc[:1], tables / "exp8_wd.parquet")
    assert damaged_files(tmp_path / "results", {}, ["results/tables/exp1_dimension.parquet"]) == {}
    shutil.copy(tables / "exp8_wd.parquet", tables / "exp1_dimension.parquet")
    assert file_problem(tables / "exp1_dimension.parquet") == (
        "holds the table written as exp8_wd.parquet, not exp1_dimension.parquet"
    )
    moved = tmp_path / "elsewhere" / "results"
    shutil.copytree(tmp_path / "results", moved)
    assert file_problem(moved / "tables" / "exp8_wd.parquet") is None
    table.to_parquet(tables / "older.parquet")  # written before tables recorded their name
    assert file_problem(tables / "older.parquet") is None


def test_a_csv_is_checked_against_the_parquet_table_beside_it(tmp_path, table):
    """Cut at a line boundary (still ending with a newline) or replaced by another table's
    CSV: damage. A quoted field holding a newline is one row, not two."""
    table = table.assign(note=['a, "quoted"\nnote', *[""] * (len(table) - 1)])
    write_parquet(table, tmp_path / "t.parquet")
    csv_path = tmp_path / "t.csv"
    table.to_csv(csv_path, index=False)
    assert file_problem(csv_path) is None
    whole = csv_path.read_text()
    csv_path.write_text(whole[: whole.rstrip("\n").rindex("\n") + 1])  # the last row cut
    assert file_problem(csv_path) == (
        f"truncated CSV or another table ({len(table) - 1} rows, t.parquet has {len(table)})"
    )
    table.drop(columns="note").to_csv(csv_path, index=False)
    assert file_problem(csv_path) == "its columns are not those of t.parquet"
    (tmp_path / "t.parquet").unlink()  # without a twin: its ending only
    csv_path.write_text(whole[: whole.rstrip("\n").rindex("\n") + 1])
    assert file_problem(csv_path) is None


def test_a_safetensors_header_nested_past_the_recursion_limit_is_damage(tmp_path):
    """A JSON header of 100 000 nested lists: named as unreadable, no RecursionError (the
    damage check and own_weights/load.py read headers with safetensors_header)."""
    header = b'{"w": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    path = tmp_path / "w.safetensors"
    path.write_bytes(len(header).to_bytes(8, "little") + header)
    assert file_problem(path).startswith("unreadable header (RecursionError")


def test_weights_rescaled_with_their_digest_recomputed_are_caught_by_the_manifest(tmp_path, spec):
    """Weights x 1.1 written back with a fresh SHA-256 inside the file (the file's own check
    passes) do not match the digest the block's manifest holds, outside the file."""
    trial = trial_of(spec)
    directory = tmp_path / "trials" / trial.cell
    directory.mkdir(parents=True)
    path = directory / f"seed{trial.seed}.safetensors"
    weights = {"final.product": np.arange(16.0).reshape(4, 4), "target.product": np.eye(4)}
    write_weights(weights, json.loads(trial.spec_json), path)
    manifest = directory / "seeds0-3.json"
    records = {
        f"seed{trial.seed}": {"diverged_epoch": None, "files": {path.name: file_record(path)}}
    }
    write_manifest(manifest, json.loads(block_request([trial])), records, "cpu")
    trial_path = f"{trial.cell}/seed{trial.seed}"
    assert np.array_equal(
        load_trial_weights(manifest, trial_path, trial.spec_json)["target.product"], np.eye(4)
    )
    write_weights({k: 1.1 * v for k, v in weights.items()}, json.loads(trial.spec_json), path)
    assert load_weights(path, trial.spec_json)  # consistent with its own digest ...
    with pytest.raises(DamagedFileError, match="not the file its block's manifest lists"):
        load_trial_weights(manifest, trial_path, trial.spec_json)  # ... not with the manifest's


def test_the_one_json_reader_names_what_is_wrong_and_never_reads_past_its_bound(tmp_path):
    good = tmp_path / "good.json"
    good.write_text('{"a": [1, 2]}')
    assert read_json(good) == {"a": [1, 2]}
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)  # opening it would block: it is refused from its kind
    big = tmp_path / "big.json"
    big.write_text("[" + "0," * 600 + "0]")
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    latin = tmp_path / "latin.json"
    latin.write_bytes('{"caf\xe9": 1}'.encode("latin-1"))
    cases = {
        tmp_path / "missing.json": "does not exist",
        fifo: "is a FIFO",
        big: "above 1000 for JSON",
        deep: "nested too deeply",
        latin: "is not JSON",
        tmp_path: "is a directory",
    }
    for path, problem in cases.items():
        with pytest.raises(JSONFileError, match=problem):
            read_json(path, max_bytes=1000 if path == big else 10**6)


def test_a_bundle_is_trained_again_when_its_manifest_or_a_block_of_it_is_damaged(
    tmp_path, spec, table
):
    """A bundle's manifest (matcond.pipeline.damage.bundle_damage) is intact, then set aside
    with its block when a trial file is missing, when a block's manifest is altered, when it
    was made for other blocks and when it is not a bundle's manifest; a new bundle leaves
    blocks of its own request alone and sets aside a block made for other seeds with its
    files."""
    results = tmp_path / "results"
    trials = [trial_of({**spec, "seed": s}) for s in (0, 1)]
    block, manifest = write_block(results, trials, table)
    blocks = (Block(tuple(trials), 0, 4),)
    request = bundle_request(blocks, saved=())
    bundle = results / "trials" / "bundles" / "b.json"
    bundle.parent.mkdir()
    write_bundle_manifest(bundle, json.loads(request))
    jobs = {"bundles/b": request}
    assert damaged_files(results, jobs, []) == {}
    first = results / "trials" / f"{trials[0].path}.parquet"
    first.unlink()
    found = damaged_files(results, jobs, [])
    assert found[manifest] == "its trial files seed0.parquet are missing or altered"
    assert found[bundle] == f"the manifest of its block {block} is missing or altered"
    write_block(results, trials, table)
    manifest.write_text(manifest.read_text() + " ")
    assert list(damaged_files(results, jobs, [])) == [bundle]
    write_block(results, trials, table)
    assert damaged_files(results, {"bundles/b": bundle_request(blocks[:0], ())}, []) == {
        bundle: "made for other blocks or settings"
    }
    bundle.write_text("{}")
    assert damaged_files(results, jobs, [])[bundle].startswith("not a bundle manifest")
    bundle.unlink()
    assert damaged_files(results, jobs, []) == {}  # a new bundle: its blocks' bytes will do
    fewer = bundle_request((Block(tuple(trials[:1]), 0, 4),), saved=())
    found = damaged_files(results, {"bundles/b": fewer}, [])
    assert found[manifest] == "made for seeds 0-1, not 0" and first in found
