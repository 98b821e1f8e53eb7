"""Code fingerprints follow the import graph of each rule's job module
(matcond.pipeline.fingerprints)."""

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from matcond.pipeline.fingerprints import (
    PACKAGE_DIR,
    _statements,
    code_fingerprint,
    dependencies,
)

JOBS = sorted((PACKAGE_DIR / "jobs").glob("[!_]*.py"))


def modules(script: Path) -> set[str]:
    return {str(p.relative_to(PACKAGE_DIR)) for p in dependencies(script)}


def test_the_statement_walk_finds_every_import_that_ast_walk_finds():
    """In every module of the package and a made-up one with imports in every kind of body."""
    made_up = (
        "import a\nif x:\n    import b\nelse:\n    import c\n"
        "try:\n    import d\nexcept E:\n    import e\nelse:\n    import f\n"
        "finally:\n    import g\nfor i in j:\n    import h\nelse:\n    import k\n"
        "while y:\n    import m\nwith z:\n    import n\n"
        "match v:\n    case 1:\n        import o\n"
        "class C:\n    def f(self):\n        async def g():\n            from . import p\n"
    )
    sources = [p.read_text() for p in PACKAGE_DIR.rglob("*.py")] + [made_up]
    for source in sources:
        tree = ast.parse(source)
        imports = (ast.Import, ast.ImportFrom)
        walked = [n for n in ast.walk(tree) if isinstance(n, imports)]
        stated = [n for n in _statements(tree.body) if isinstance(n, imports)]
        assert {id(n) for n in stated} == {id(n) for n in walked}
    assert len(walked) == 13  # the made-up module's: a to p but i, j, l


def test_training_depends_on_what_computes_a_trial_and_not_on_how_it_runs():
    deps = modules(PACKAGE_DIR / "jobs" / "train.py")
    room = "condition_number/"
    computing = ["training", "strategies", "models", "components", "run", "targets", "optim"]
    assert {f"{room}{m}.py" for m in computing} | {"__init__.py"} <= deps
    assert not any(d.startswith(("execution/", "server/")) for d in deps)
    assert not any(d.startswith(("stats/", "claims/")) for d in deps)
    assert not any(d.startswith("own_weights") for d in deps)  # matcond.analyze is lazy


def test_plots_depend_on_every_figure_module():
    deps = modules(PACKAGE_DIR / "jobs" / "plot.py")
    assert {"figures/paper.py", "figures/controls.py", "figures/gauss_newton.py"} <= deps
    assert {"figures/__init__.py", "figures/catalog.py", "stats/summary.py"} <= deps


def test_the_claims_pages_templates_are_in_the_claims_fingerprint():
    """They are not imported but rendered: an edited template must remake the pages."""
    deps = modules(PACKAGE_DIR / "jobs" / "claims.py")
    assert {"claims/templates/claims.html", "claims/templates/scorecard.html"} <= deps
    assert not any("templates" in d for d in modules(PACKAGE_DIR / "jobs" / "train.py"))


@pytest.mark.workflow  # a Python per job module, importing it under a tracer: ~60 s in all
@pytest.mark.parametrize("script", JOBS, ids=lambda p: p.name)
def test_every_module_a_script_loads_is_in_its_fingerprint(script):
    """What the script's imports really load (in a fresh interpreter) is covered by the
    static import graph, execution backends aside."""
    names = [
        line.split()[1]
        for line in script.read_text().splitlines()
        if line.startswith("from matcond")
    ]
    names += [
        line.split()[1]
        for line in script.read_text().splitlines()
        if line.startswith("import matcond")
    ]
    code = "import sys\n" + "".join(f"import {n}\n" for n in names)
    code += "print('\\n'.join(m for m in sys.modules if m.startswith('matcond')))"
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    deps = modules(script)
    for name in loaded.stdout.split():
        if name.startswith("matcond.execution") or name == "matcond":
            continue
        parts = name.split(".")[1:]
        candidates = {"/".join(parts) + ".py", "/".join(parts) + "/__init__.py"}
        assert candidates & deps, f"{script.name} loads {name} but its fingerprint misses it"


def test_an_edit_changes_the_fingerprint_of_its_dependents_only(tmp_path, monkeypatch):
    import matcond.pipeline.fingerprints as fingerprints

    package = tmp_path / "matcond"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from matcond import b\n")
    (package / "b.py").write_text("X = 1\n")
    (package / "c.py").write_text("Y = 2\n")
    script = tmp_path / "job.py"
    script.write_text("from matcond.a import b\n")
    monkeypatch.setattr(fingerprints, "PACKAGE_DIR", package)
    before = code_fingerprint(script)
    (package / "c.py").write_text("Y = 3\n")
    assert code_fingerprint(script) == before
    (package / "b.py").write_text("X = 2\n")
    assert code_fingerprint(script) != before


def test_the_script_content_counts_and_its_timestamp_does_not(tmp_path):
    script = tmp_path / "job.py"
    script.write_text("from matcond import stats\n")
    before = code_fingerprint(script)
    os.utime(script, (1, 1))
    assert code_fingerprint(script) == before
    script.write_text("from matcond import stats\nprint(1)\n")
    assert code_fingerprint(script) != before


def test_snakemakes_list_params_changes_lists_unchanged_jobs():
    """Why docs/configuration.md says not to use --list-params-changes: Snakemake merges each
    output's comparison with ``|``, and a merge that found no change keeps the files of the
    last comparison, which the listing iterates. When an upgrade fixes this, this test fails:
    drop the paragraph."""
    from snakemake.persistence import NO_PARAMS_CHANGE, ParamsChange

    unchanged = NO_PARAMS_CHANGE | ParamsChange(files={"results/tables/e.parquet"})
    assert not unchanged and list(unchanged) == ["results/tables/e.parquet"]
