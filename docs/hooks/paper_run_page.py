"""MkDocs hook: the gallery of ``paper-figures.md``, every figure kept in
``docs/paper-run/figures/`` (scripts/snapshot_paper_run.py) under its paper name with its
catalog caption, grouped by the report's categories in the report's order; built at build
time so that the page lists exactly the figures the snapshot holds. tests/test_docs.py checks
the built page.
"""

from __future__ import annotations

from pathlib import Path

from matcond.claims.check import figure_title
from matcond.figures.captions import report_label
from matcond.figures.catalog import FIGURES
from matcond.figures.overview import entry

PAGE = "paper-figures.md"
GALLERY = "<!-- the figures: docs/hooks/paper_run_page.py -->"
FIGURES_DIR = Path("paper-run") / "figures"


def _markdown(caption: str) -> str:
    """A catalog caption (reST) as Markdown: its ``literals`` as `code`."""
    return caption.replace("``", "`")


def gallery(names: list[str]) -> str:
    """Markdown for the figures ``names``: per category a heading, per figure its title, the
    image and its caption."""
    categories = list(dict.fromkeys(f.category for f in FIGURES.values()))
    known = [n for n in names if n in FIGURES or n.startswith("overview_")]

    def order(name: str) -> tuple:
        category = entry(name).category
        rank = categories.index(category) if category in categories else len(categories)
        return rank, report_label(name)

    lines, heading = [], None
    for name in sorted(known, key=order):
        figure = entry(name)
        if figure.category != heading:
            heading = figure.category
            lines += [f"## {heading}", ""]
        title = figure_title(name)
        lines += [
            f"### {title}",
            "",
            f"![{title}]({FIGURES_DIR.as_posix()}/{name}.png)",
            "",
            f"*`{name}`.* {_markdown(figure.caption)}",
            "",
        ]
    return "\n".join(lines)


def on_page_markdown(markdown: str, page, config, **kwargs) -> str:
    """Put the gallery in place of its marker on the page."""
    if page.file.src_uri != PAGE:
        return markdown
    if GALLERY not in markdown:
        raise ValueError(f"docs/{PAGE} lost its marker {GALLERY}")
    folder = Path(config.docs_dir) / FIGURES_DIR
    names = sorted(p.stem for p in folder.glob("*.png"))
    return markdown.replace(GALLERY, gallery(names))
