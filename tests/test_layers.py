"""The packages of matcond in layers (docs/architecture.md, "The layers"): each imports only
packages of the layers below its own, and no module imports itself back through others.

The imports are those the code fingerprints follow (matcond.pipeline.fingerprints: every
import statement of a module, inside functions too)."""

from pathlib import Path

import pytest

from matcond.pipeline.fingerprints import PACKAGE_DIR, imported_modules

# Bottom first. Packages of one layer import none of each other.
LAYERS = (
    ("core", "execution"),  # the config, its trials, result files; how jobs run
    ("stats", "gauss_newton"),  # statistics; the Gauss-Newton mathematics
    ("gn_experiments",),  # the Gauss-Newton paper's experiments
    ("condition_number",),  # the condition-number paper (its depth formula uses exp7's GN)
    ("own_weights",),  # a user's own weights
    ("claims",),  # the papers' claims and their verdicts
    ("figures",),  # every figure
    ("pipeline",),  # the run a config asks for, and its bookkeeping
    ("jobs",),  # a module per rule
    ("server",),  # the job server, which imports every job
)


def import_graph(root: Path = PACKAGE_DIR) -> dict[str, set[str]]:
    """Each module of the package under ``root`` and the package modules it imports."""
    graph = {}
    for path in sorted(root.rglob("*.py")):
        parts = [p for p in path.relative_to(root.parent).with_suffix("").parts if p != "__init__"]
        graph[".".join(parts)] = imported_modules(path) - {".".join(parts)}
    return graph


def layer_of(module: str) -> int | None:
    """The layer of ``module``'s package (None for the package's own ``__init__``)."""
    parts = module.split(".")
    if len(parts) < 2:
        return None
    return next(i for i, packages in enumerate(LAYERS) if parts[1] in packages)


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """'a imports b' for every import of a package of the same or a higher layer."""
    found = []
    for module, imported in graph.items():
        for other in imported:
            here, there = layer_of(module), layer_of(other)
            same_package = module.split(".")[:2] == other.split(".")[:2]
            if here is not None and there is not None and not same_package and there >= here:
                found.append(f"{module} imports {other}")
    return sorted(found)


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles of ``graph``: its strongly connected parts of two or more modules."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for other in graph.get(module, ()):
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            part = stack[stack.index(module) :]
            del stack[stack.index(module) :]
            if len(part) > 1:
                found.append(sorted(part))

    for module in graph:
        if module not in index:
            visit(module)
    return found


def test_every_package_has_a_layer():
    packages = {p.parent.name for p in PACKAGE_DIR.glob("*/__init__.py")}
    assert packages == {p for layer in LAYERS for p in layer}


def test_no_package_imports_one_of_its_own_layer_or_above():
    assert upward_imports(import_graph()) == []


def test_no_module_imports_itself_back():
    assert cycles(import_graph()) == []


@pytest.mark.parametrize(
    "graph, upward",
    [
        (
            {"matcond.core.config": {"matcond.jobs.train"}},
            ["matcond.core.config imports matcond.jobs.train"],
        ),
        (
            {"matcond.stats.summary": {"matcond.gauss_newton.bounds"}},
            ["matcond.stats.summary imports matcond.gauss_newton.bounds"],
        ),
        ({"matcond.jobs.train": {"matcond.core.config", "matcond.jobs"}}, []),
    ],
)
def test_the_layer_check_sees_an_import_upward_or_across(graph, upward):
    """The check's power: an import from the bottom to the top, and one within a layer, are
    found; imports downward and within a package are not."""
    assert upward_imports(graph) == upward


def test_the_cycle_check_sees_a_cycle_through_three_modules():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set()}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
