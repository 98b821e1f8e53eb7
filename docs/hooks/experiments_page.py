"""MkDocs hook: the lists of ``experiments.md``, built at build time so that no hand-kept
list can drift: the table of the paper config's experiments, from ``config/config.yaml``
(each experiment's ``description`` and trials), the figure catalog (the figures the run draws
from its table) and ``config/claims.yaml`` (the claims on its table, or drawn from it as a
pool); and the strategies, from their registry (each ``Strategy.description``) and the
paper config's defaults of their settings.

The page keeps its prose; each list replaces its marker (an HTML comment, invisible where
the Markdown is read as it is). tests/test_docs.py checks the built page.
"""

from __future__ import annotations

from pathlib import Path

from matcond.core.config import load_yaml, validate_config
from matcond.core.trials import all_trials
from matcond.pipeline.plan import Plan

PAGE = "experiments.md"
EXPERIMENTS = "<!-- the experiments table: docs/hooks/experiments_page.py -->"
STRATEGIES = "<!-- the strategies: docs/hooks/experiments_page.py -->"
CONFIG = Path("config") / "config.yaml"
CLAIMS = Path("config") / "claims.yaml"


def _cell(text: str) -> str:
    """Text in one Markdown table cell: one line, no column break, no emphasis."""
    return " ".join(text.split()).replace("|", "\\|").replace("*", "\\*")


def experiments_table(config_path: Path = CONFIG, claims_path: Path = CLAIMS) -> str:
    """The Markdown table: per experiment its name, description, trials (and settings), the
    figures drawn from its table and from the derived tables it feeds (the theory's, the
    depth formula's, a GN part's), and the number of claims on each."""
    config = validate_config(load_yaml(config_path))
    plan = Plan(config, all_trials(config))
    figures = plan.figures_by_table()
    claims = load_yaml(claims_path)
    pools = {v["pool"]: table for table, v in claims.get("heavy_tail", {}).items()}
    on_table: dict[str, int] = {}
    for claim in claims["claims"]:
        on_table[claim["table"]] = on_table.get(claim["table"], 0) + 1
    lines = [
        "| experiment | what (its `description`) | trials (settings) | figures | claims |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, experiment in config["experiments"].items():
        trials = plan.trials[name]
        tables = [name, *(t for t, fed in plan.derived_tables.items() if name in fed)]
        n_claims = "; ".join(
            f"{on_table[t]}" if t == name else f"{on_table[t]} on `{t}`"
            for t in tables
            if on_table.get(t)
        )
        if name in pools:
            n_claims += f" (the pool of {on_table.get(pools[name], 0)} on `{pools[name]}`)"
        drawn = {f: None for t in tables for f in figures.get(t, [])}
        drawn = ", ".join(f"`{f}`" for f in drawn) or "-"
        cells = len({t.cell for t in trials})
        lines.append(
            f"| `{name}` | {_cell(experiment.get('description', ''))} | {len(trials):,} "
            f"({cells}) | {drawn} | {n_claims.strip() or 0} |"
        )
    return "\n".join(lines) + "\n"


def strategies_list() -> str:
    """The Markdown list of the strategies: name, settings with the paper config's defaults,
    description."""
    from matcond.condition_number.strategies import STRATEGIES as REGISTRY  # torch: lazily

    defaults = validate_config(load_yaml(CONFIG))["defaults"]
    lines = []
    for name, strategy in REGISTRY.items():
        settings = ", ".join(f"`{s}` = {defaults[s]}" for s in strategy.settings)
        lines.append(f"- `{name}`{f' ({settings})' if settings else ''}: {strategy.description};")
    return "\n".join(lines)[:-1] + ".\n"


def on_page_markdown(markdown: str, page, **kwargs) -> str:
    """Put the lists in place of their markers on the experiments page."""
    if page.file.src_uri != PAGE:
        return markdown
    for marker, render in ((EXPERIMENTS, experiments_table), (STRATEGIES, strategies_list)):
        if marker not in markdown:
            raise ValueError(f"docs/{PAGE} lost its marker {marker}")
        markdown = markdown.replace(marker, render())
    return markdown
