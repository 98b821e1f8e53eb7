"""Code fingerprints that decide reruns, derived from the import graph of a rule's script.

A rule's ``code`` param is the hash of its script and of every ``matcond`` module the script
imports, directly or through other ``matcond`` modules (read from the source with :mod:`ast`,
so a module imported inside a function counts too), of the packages' ``__init__`` files on
the way and of those packages' ``templates/`` (HTML the modules render). Editing any of them
reruns the rule's jobs; editing anything else does not, and neither does a new timestamp
(the workflow profile leaves out Snakemake's mtime-based ``code`` trigger). The execution
backends (:mod:`matcond.execution`: GPU claiming, forked workers, job logs; :mod:`matcond.server`:
the job server) decide how a job runs, not what it computes, and are left out.

Light on purpose (ast, hashlib): the Snakefile calls it at parse time.
"""

from __future__ import annotations

import ast
import functools
import hashlib
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parents[1]
PACKAGE = "matcond"
EXCLUDED = ("matcond.execution", "matcond.server")


def module_path(name: str) -> Path | None:
    """The source file of module ``name`` of this package (None if it is not a module)."""
    parts = name.split(".")[1:]
    base = PACKAGE_DIR.joinpath(*parts)
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _module_name(path: Path) -> str:
    relative = path.relative_to(PACKAGE_DIR).with_suffix("")
    parts = [p for p in relative.parts if p != "__init__"]
    return ".".join([PACKAGE, *parts])


def imported_modules(path: Path) -> set[str]:
    """Names of the ``matcond`` modules that the file at ``path`` imports anywhere in it."""
    return _imported_modules(path, path.read_text())


@functools.cache  # keyed by the source too: an edited file is parsed again
def _imported_modules(path: Path, source: str) -> set[str]:
    tree = ast.parse(source, filename=str(path))
    inside = path.is_relative_to(PACKAGE_DIR)
    package = _module_name(path) if inside else ""
    if inside and path.name != "__init__.py":
        package = package.rpartition(".")[0]
    names: set[str] = set()
    for node in _statements(tree.body):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            names.add(base)
            names |= {f"{base}.{alias.name}" for alias in node.names}
    return {n for n in names if (n == PACKAGE or n.startswith(PACKAGE + ".")) and module_path(n)}


# The fields of a node that hold statements (an import is one), for _statements: Module, a
# function or class, for, while, if, with, try (its handlers) and match (its cases) bodies.
_BODIES = ("body", "orelse", "finalbody", "handlers", "cases")


def _statements(body: list[ast.AST]):
    """Every statement in ``body`` and in the bodies nested in it (not the expressions, which
    hold no import: one node in 13 of those ``ast.walk`` visits in this package)."""
    for node in body:
        yield node
        for field in _BODIES:
            yield from _statements(getattr(node, field, ()))


def dependencies(script: Path) -> list[Path]:
    """Every package source file ``script`` depends on (transitively), with the templates of
    the packages on the way, sorted."""
    seen: set[str] = set()
    todo = list(imported_modules(Path(script)))
    while todo:
        name = todo.pop()
        if name in seen or name.startswith(EXCLUDED):
            continue
        seen.add(name)
        parents = [".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)]
        todo += parents
        todo += imported_modules(module_path(name))
    modules = {module_path(name) for name in seen}
    # a package's templates (the claims pages' HTML) are code its modules render
    templates = {
        path
        for module in modules
        if module.name == "__init__.py"
        for path in (module.parent / "templates").rglob("*")
        if path.is_file()
    }
    return sorted(modules | templates)


def code_fingerprint(script: Path) -> str:
    """Hash of ``script``'s content and of the package files it depends on (names and
    contents): a content change alters it, a new timestamp does not."""
    digest = hashlib.sha256(Path(script).read_bytes())
    for path in dependencies(script):
        digest.update(str(path.relative_to(PACKAGE_DIR)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]
