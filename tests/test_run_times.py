"""The run times the README and the quick start quote are measurements: each is a row of the
table "Run times at a glance" in docs/benchmarks.md (with its date and command there), and
each row of that table is quoted by the README. A time written out in words ("about two
hours") or one the table lacks fails."""

import re

from support import REPO

PAGES = [REPO / "README.md", REPO / "docs" / "quick-start.md"]
DURATION = re.compile(r"(?<![\w.])(\d[\d,]*(?:\.\d+)?)\s*(h|min|s)\b")
IN_WORDS = re.compile(
    r"\b(?:one|two|three|four|five|ten|a few|several)(?:\s+to\s+\w+)?\s+(?:hours?|minutes?)\b",
    re.I,
)


def glance() -> list[tuple[str, str, str]]:
    """(run, machine, time) of each row of the benchmarks page's table."""
    text = (REPO / "docs" / "benchmarks.md").read_text()
    section = text.split("## Run times at a glance\n", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1:4] for line in section.splitlines() if line.startswith("| ")]
    return [tuple(cell.strip() for cell in row) for row in rows[2:]]  # past the header


def durations(text: str) -> set[str]:
    return {f"{number} {unit}" for number, unit in DURATION.findall(text)}


def test_the_table_has_a_time_for_each_run():
    rows = glance()
    runs = {(run, machine) for run, machine, _ in rows}
    for run in ("small run", "paper run"):
        for machine in ("2 cores", "16 cores and a GPU"):
            assert (run, machine) in runs, (run, machine)
    for run, machine, time in rows:
        assert time == "not yet measured" or durations(time), (run, machine, time)


def test_the_readme_and_quick_start_quote_only_measured_times():
    measured = set().union(*(durations(time) for _, _, time in glance()))
    for page in PAGES:
        text = page.read_text()
        assert not IN_WORDS.findall(text), (page.name, IN_WORDS.findall(text))
        assert durations(text) <= measured, (page.name, durations(text) - measured)


def test_the_readme_quotes_every_row():
    readme = (REPO / "README.md").read_text()
    for run, machine, time in glance():
        assert time in readme, (run, machine, time)
