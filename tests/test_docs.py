"""The documentation: the MkDocs site builds with warnings as errors (every link between pages
resolves), its configuration reference names every key of the config schema, the README stays
short, and every command block of the README either runs here or says why it cannot.

The README's rule: every fenced block is a command block. Each command in it (its lines, split
at ``&&``) is run or checked by :func:`test_readme_command`, which knows how to check
``python3 -m venv``, ``pip install -r ...``, ``snakemake ...`` (a dry run in a temporary
directory; ``--report`` on a finished small run) and ``pytest`` (the line must be `.ci/run`'s);
a command it does not know fails. A block that cannot run here (it needs a SLURM cluster or a
GPU) is preceded by the line ``<!-- not run in tests: <why> -->`` and is skipped.
"""

import html
import json
import re
import shlex
import shutil
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pytest
import yaml
from packaging.version import Version
from support import REPO

pytestmark = pytest.mark.workflow  # the site build and the README commands

README = REPO / "README.md"
BIN = Path(sys.executable).parent
SCHEMA = REPO / "src" / "matcond" / "schemas" / "config.schema.yaml"
FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```[ \t]*$", re.M | re.S)
MARK = re.compile(r"^<!-- not run in tests: (\S.*?) -->$")
PLACEHOLDER = "<name>"  # the reference's name for a key the user chooses (docs/hooks)


# --- the site -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site, built with ``--strict``: a broken link, a missing anchor, a page left out of
    the navigation or a warning of the hook fails the build."""
    out = tmp_path_factory.mktemp("site")
    cmd = [BIN / "mkdocs", "build", "--strict", "-f", REPO / "mkdocs.yml", "-d", out]
    proc = subprocess.run(list(map(str, cmd)), capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "WARNING" not in proc.stderr, proc.stderr[-3000:]
    return out


def test_the_docs_build_with_warnings_as_errors(site):
    nav = yaml.load((REPO / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)["nav"]

    def pages(entries):
        for entry in entries:
            for value in entry.values():
                yield from pages(value) if isinstance(value, list) else [value]

    listed = list(pages(nav))
    on_disk = {p.relative_to(REPO / "docs").as_posix() for p in (REPO / "docs").glob("*.md")}
    assert on_disk | {"config-reference.md"} == set(listed)  # every page is in the navigation
    for page in listed:
        built = site / ("index.html" if page == "index.md" else f"{page[:-3]}/index.html")
        assert built.exists(), page
    assert not (REPO / "docs" / "config-reference.md").exists()  # generated, never kept


def resolved(node, root: dict):
    """``node`` with its ``$ref`` and ``allOf`` merged in (own keys win; properties merge key
    by key)."""
    if not isinstance(node, dict):
        return node
    parts = []
    if "$ref" in node:
        target = root
        for step in node["$ref"].lstrip("#/").split("/"):
            target = target[step]
        parts.append(resolved(target, root))
    parts += [resolved(p, root) for p in node.get("allOf", [])]
    out = {}
    for part in [*parts, node]:
        merged = dict(out.get("properties", {}))
        for key, value in part.get("properties", {}).items():
            merged[key] = {**merged.get(key, {}), **value}
        out |= {k: v for k, v in part.items() if k not in ("$ref", "allOf")}
        if merged:
            out["properties"] = merged
    return out


def schema_keys(node: dict, root: dict, prefix: str = "") -> dict[str, dict]:
    """Every key a config may hold, dotted, with its (resolved) schema."""
    found = {}
    node = resolved(node, root)
    children = dict(node.get("properties", {}))
    if isinstance(node.get("additionalProperties"), dict):
        children[PLACEHOLDER] = node["additionalProperties"]
    for name, child in children.items():
        child = resolved(child, root)
        found[prefix + name] = child
        found |= schema_keys(child, root, f"{prefix}{name}.")
    return found


def test_the_configuration_reference_names_every_key_of_the_schema(site):
    schema = yaml.safe_load(SCHEMA.read_text())
    keys = schema_keys(schema, schema)
    assert len(keys) > 200 and "gauss_newton.sweeps.fig2_depth.depths" in keys
    assert "experiments.<name>.seeds" in keys and "defaults.lr" in keys
    page = (site / "config-reference" / "index.html").read_text()
    missing = [key for key in keys if f"<code>{html.escape(key)}</code>" not in page]
    assert not missing, f"the configuration reference lacks {missing}"
    rows = {
        html.unescape(m.group(1)): re.findall(r"<td>(.*?)</td>", m.group(2), re.S)
        for m in re.finditer(r"<tr>\s*<td><code>([^<]+)</code></td>(.*?)</tr>", page, re.S)
    }
    for key, node in keys.items():
        if "." not in key:
            continue  # a top-level key is a section: its default and description in the text
        _, default, description = rows[key]
        if "default" in node:
            text = html.unescape(default.removeprefix("<code>").removesuffix("</code>"))
            value = text if isinstance(node["default"], str) else json.loads(text)
            assert value == node["default"], (key, default)
        words = " ".join(str(node.get("description", "")).replace("`", "").split())
        shown = " ".join(html.unescape(re.sub(r"<[^>]+>", "", description)).split())
        assert shown.startswith(words[:60]), (key, words[:60], shown[:60])


def test_the_experiments_page_lists_every_experiment_of_the_paper_config(site):
    """Built from the config (docs/hooks/experiments_page.py): each experiment once, with
    its description, its trial count and the figures drawn from its tables."""
    from matcond.core.config import load_yaml, validate_config
    from matcond.core.trials import all_trials

    config = validate_config(load_yaml(REPO / "config" / "config.yaml"))
    trials = all_trials(config)
    page = (site / "experiments" / "index.html").read_text()
    table = page.split("<table>")[1].split("</table>")[0]  # the page's first table
    rows = {
        m.group(1): [html.unescape(re.sub(r"<[^>]+>", "", c)) for c in m.group(2, 3, 4)]
        for m in re.finditer(
            r"<tr>\s*<td><code>(\w+)</code></td>\s*<td>(.*?)</td>\s*<td>(.*?)</td>"
            r"\s*<td>(.*?)</td>",
            table,
            re.S,
        )
    }
    assert list(rows) == list(config["experiments"])
    for name, (description, count, _) in rows.items():
        assert " ".join(description.split()) == " ".join(
            config["experiments"][name]["description"].split()
        ), name
        assert count.startswith(f"{len(trials[name]):,} ("), name
    assert "fig1_dimension" in rows["exp1_dimension"][2]
    assert "depth_theory" in rows["depth_check"][2]  # through the depth formula's table


def test_every_figure_is_named_on_the_site(site):
    from matcond.figures.catalog import FIGURES

    text = "".join(p.read_text() for p in site.rglob("*.html"))
    assert [f for f in FIGURES if f"<code>{f}</code>" not in text] == []


def test_the_paper_runs_figures_are_shown_without_a_run(site):
    """docs/hooks/paper_run_page.py: every figure of the paper config is kept in
    docs/paper-run/figures/ (scripts/snapshot_paper_run.py) and shown on its page with its
    caption; the run's claims page is on the site beside it."""
    from matcond.core.config import load_yaml, validate_config
    from matcond.core.trials import all_trials
    from matcond.pipeline.plan import Plan

    config = validate_config(load_yaml(REPO / "config" / "config.yaml"))
    drawn = set(Plan(config, all_trials(config)).drawn)
    kept = {p.stem for p in (REPO / "docs" / "paper-run" / "figures").glob("*.png")}
    assert drawn == kept, (sorted(drawn - kept), sorted(kept - drawn))
    page = (site / "paper-figures" / "index.html").read_text()
    shown = set(re.findall(r'<img alt="[^"]*" src="\.\./paper-run/figures/(\w+)\.png"', page))
    assert shown == kept
    assert (
        site / "paper-run" / "claims.html"
    ).exists() and 'href="../paper-run/claims.html"' in page


def test_the_experiments_page_lists_every_strategy_with_its_description(site):
    from matcond.condition_number.strategies import STRATEGIES

    page = (site / "experiments" / "index.html").read_text()
    items = [
        " ".join(html.unescape(re.sub(r"<[^>]+>", "", item)).split())
        for item in re.findall(r"<li>(.*?)</li>", page.split('id="strategies"')[1], re.S)
    ]
    assert [re.match(r"\w+", item)[0] for item in items[: len(STRATEGIES)]] == list(STRATEGIES)
    for item, strategy in zip(items, STRATEGIES.values(), strict=False):
        words = html.unescape(re.sub(r"<[^>]+>|\[|\]\([^)]*\)|`|\\", "", strategy.description))
        assert " ".join(words.split())[:50] in item, item
    assert "`spectral_clip` = 10.0" not in page and "spectral_clip</code> = 10.0" in page


# --- the README -----------------------------------------------------------------------------


def test_the_readme_is_short():
    lines = README.read_text().splitlines()
    assert len(lines) <= 200, len(lines)


def test_the_readme_links_resolve():
    text = README.read_text()
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
        if "://" not in target:
            assert (REPO / target).exists(), target


def command_blocks(text: str) -> list[tuple[str, str | None]]:
    """Every fenced block of ``text``: (its body, the reason it is not run here or None)."""
    blocks = []
    for m in FENCE.finditer(text):
        before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1].strip()
        reason = MARK.match(before)
        blocks.append((m.group(2), reason.group(1) if reason else None))
    return blocks


def readme_commands() -> list[tuple[str, str]]:
    """(line, command) for every command of an unmarked block of the README."""
    out = []
    for body, reason in command_blocks(README.read_text()):
        if reason is None:
            for line in filter(None, map(str.strip, body.splitlines())):
                out += [(line, command.strip()) for command in line.split(" && ")]
    return out


def test_the_block_rule():
    """A marked block is skipped with its reason; an unmarked one is a command block."""
    text = (
        "a\n\n```bash\necho 1 && echo 2\n```\n\n<!-- not run in tests: needs a SLURM cluster"
        " -->\n```bash\nsnakemake --profile profiles/slurm\n```\n```\nx\n```\n"
    )
    assert command_blocks(text) == [
        ("echo 1 && echo 2\n", None),
        ("snakemake --profile profiles/slurm\n", "needs a SLURM cluster"),
        ("x\n", None),
    ]
    commands = readme_commands()
    assert {c for _, c in commands} >= {
        ".venv/bin/snakemake --report results/report.html",
        ".venv/bin/pytest",
    }


def pinned(requirements: Path) -> dict[str, str]:
    """name -> version of every pin of a requirements file and the files it includes."""
    pins = {}
    for line in requirements.read_text().splitlines():
        line = line.split("#")[0].strip()
        if line.startswith("-r "):
            pins |= pinned(requirements.parent / line[3:].strip())
        elif line:
            name, _, pin = line.partition("==")
            assert pin, f"{requirements.name}: {line} is not pinned"
            pins[name.strip()] = pin.strip()
    return pins


def check_venv(args: list[str], tmp_path: Path, line: str, request) -> None:
    """``python3 -m venv .venv``: run as written, in a temporary directory."""
    python = shutil.which(args[0]) or sys.executable
    proc = subprocess.run([python, *args[1:]], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (tmp_path / ".venv" / "bin" / "python").exists()


def check_pip(args: list[str], tmp_path: Path, line: str, request) -> None:
    """``pip install -q --no-deps -e .``: this repository's package is installed in place
    (first, so that an unsupported Python is named before any pin fails:
    tests/test_environment.py; without its dependencies, which the pins of the next command
    install: pyproject.toml's ranges would take the newest torch, a CUDA build of gigabytes).
    ``pip install -q -r FILE``: the file exists and this environment, made by that command,
    has every pin of it (installing again would download)."""
    assert args[:3] == [".venv/bin/pip", "install", "-q"], args
    if args[3:] == ["--no-deps", "-e", "."]:
        import matcond

        assert Path(matcond.__file__).is_relative_to(REPO / "src")
        assert line.index(command_text(args)) < line.index("pip install -q -r ")
        return
    assert args[3] == "-r" and len(args) == 5, args
    requirements = REPO / args[4]
    wrong = {}
    for name, pin in pinned(requirements).items():
        try:
            installed = version(name)
        except PackageNotFoundError:
            installed = None
        if installed is None or Version(installed).public != Version(pin).public:
            wrong[name] = (pin, installed)
    assert not wrong, f"{requirements.name}: pinned vs installed {wrong}"


def command_text(args: list[str]) -> str:
    return " ".join(shlex.quote(a) for a in args)


def check_snakemake(args: list[str], tmp_path: Path, line: str, request) -> None:
    """``snakemake ...``: a dry run (``-n``) from the repository's root, in a temporary
    directory instead of the command's ``--directory`` (or the repository). ``--report``:
    on a finished run of the small config (tests/conftest.py), copied (and named by the
    command's ``--directory``, if it gives one), with that run's ``--configfile`` (the
    README's command follows a run of the paper config)."""
    args = args[1:]
    if "--report" in args:
        workdir = tmp_path / "run"
        shutil.copytree(request.getfixturevalue("small_run"), workdir, symlinks=True)
        extra = ["-s", str(REPO / "Snakefile"), "--configfile", str(workdir / "config.yaml")]
        report = workdir / args[args.index("--report") + 1]
        assert not report.exists()
        if "--directory" in args:  # the small run's directory: the finished run's copy
            args[args.index("--directory") + 1] = str(workdir)
    else:
        if "--directory" in args:
            args[args.index("--directory") + 1] = str(tmp_path)
        else:
            args += ["--directory", str(tmp_path)]
        workdir, extra, report = REPO, ["-n"], None
    cmd = [str(BIN / "snakemake"), *args, *extra]
    proc = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"{line}\n{out[-3000:]}"
    if report is None:
        assert "This was a dry-run" in out and "rule train" in out, out[-3000:]
    else:
        assert report.stat().st_size > 100_000 and "<html" in report.read_text()[:2000].lower()


def check_pytest(args: list[str], tmp_path: Path, line: str, request) -> None:
    """``pytest`` cannot run inside the tests: the whole line must be the one `.ci/run` runs
    (CI runs it)."""
    ci = (REPO / ".ci" / "run").read_text().strip().splitlines()[-1]
    assert line == ci, (line, ci)


CHECKS = {
    "python3": check_venv,
    ".venv/bin/pip": check_pip,
    ".venv/bin/snakemake": check_snakemake,
    "snakemake": check_snakemake,
    ".venv/bin/pytest": check_pytest,
}


@pytest.mark.parametrize("line,command", readme_commands(), ids=lambda v: v[:60])
def test_readme_command(line, command, tmp_path, request):
    args = shlex.split(command)
    check = CHECKS.get(args[0])
    assert check is not None and (args[0] != "python3" or args[1:3] == ["-m", "venv"]), (
        f"README command {command!r} is neither run by tests/test_docs.py nor marked "
        "'<!-- not run in tests: <why> -->' on the line before its block"
    )
    check(args, tmp_path, line, request)
