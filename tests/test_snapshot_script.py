"""scripts/snapshot_paper_run.py: a finished run's claims, tables and figures copied into the
snapshot, the figures as small PNGs of the same size, stale figures removed, and a run that
is not finished refused by name."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "snapshot_paper_run.py"
spec = importlib.util.spec_from_file_location("snapshot_paper_run", SCRIPT)
snapshot_paper_run = importlib.util.module_from_spec(spec)
spec.loader.exec_module(snapshot_paper_run)


def finished_run(root: Path) -> Path:
    results = root / "results"
    for source in snapshot_paper_run.FILES:
        (results / source).parent.mkdir(parents=True, exist_ok=True)
        (results / source).write_text(f"the run's {source}\n")
    (results / "figures").mkdir()
    gradient = np.linspace(0, 255, 300 * 200 * 3).reshape(200, 300, 3).astype(np.uint8)
    Image.fromarray(gradient).save(results / "figures" / "fig1_dimension.png")
    return root


def test_a_finished_run_is_kept_whole_and_its_figures_small(tmp_path):
    run, to = finished_run(tmp_path / "run"), tmp_path / "snapshot"
    (to / "figures").mkdir(parents=True)
    (to / "figures" / "gone.png").write_bytes(b"a figure the run no longer draws")
    written = snapshot_paper_run.snapshot(run, to)
    assert written == [*snapshot_paper_run.FILES.values(), "figures/fig1_dimension.png"]
    for source, name in snapshot_paper_run.FILES.items():
        assert (to / name).read_text() == f"the run's {source}\n"
    assert sorted(p.name for p in (to / "figures").iterdir()) == ["fig1_dimension.png"]
    with Image.open(to / "figures" / "fig1_dimension.png") as small:
        assert small.size == (300, 200) and small.mode == "P"
        assert len(small.getcolors()) <= snapshot_paper_run.COLOURS


def test_an_unfinished_run_is_refused_naming_what_it_lacks(tmp_path, capsys):
    run = finished_run(tmp_path / "run")
    (run / "results" / "claims.html").unlink()
    with pytest.raises(FileNotFoundError, match="lacks claims.html"):
        snapshot_paper_run.snapshot(run, tmp_path / "snapshot")
    assert snapshot_paper_run.main([str(run), "--to", str(tmp_path / "snapshot")]) == 1
    assert "lacks claims.html" in capsys.readouterr().err
    assert not (tmp_path / "snapshot" / "claims.csv").exists()  # nothing half-written
