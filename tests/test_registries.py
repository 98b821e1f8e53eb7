"""What the docs list is what exists: every rule and GN sweep of the code and the paper
config is named in its page, so that no hand-kept list drifts (the experiments' table, which
names the figures drawn from each, and the strategies' list are built from the config and
the registry: tests/test_docs.py checks them and every figure on the built site)."""

import re

import pytest
from support import REPO

from matcond.core.config import load_yaml

DOCS = REPO / "docs"
PAPER = load_yaml(REPO / "config" / "config.yaml")


def named(*pages: str) -> set[str]:
    """Every `code` name of the pages (the docs name things in backticks)."""
    text = "".join((DOCS / page).read_text() for page in pages)
    return set(re.findall(r"`([A-Za-z0-9_]+)`", text))


def rules() -> list[str]:
    text = "".join(p.read_text() for p in (REPO / "workflow" / "rules").glob("*.smk"))
    return re.findall(r"^rule (\w+):", text + (REPO / "Snakefile").read_text(), re.M)


@pytest.mark.parametrize(
    ("things", "pages"),
    [
        (lambda: [f"gn_{s}" for s in PAPER["gauss_newton"]["sweeps"]], ["gauss-newton.md"]),
    ],
    ids=["gn sweeps"],
)
def test_every_registered_thing_is_named_in_its_docs(things, pages):
    missing = [name for name in things() if name not in named(*pages)]
    assert not missing, f"not named in docs/{', docs/'.join(pages)}: {missing}"


def test_every_rule_is_in_the_data_flow_and_has_its_job_module():
    flow = (DOCS / "architecture.md").read_text().split("## Where each thing lives")[0]
    found = rules()
    assert len(found) >= 12
    assert [r for r in found if r != "all" and not re.search(rf"\b{r}\b", flow)] == []
    jobs = REPO / "src" / "matcond" / "jobs"
    assert [r for r in found if r != "all" and not (jobs / f"{r}.py").exists()] == []
