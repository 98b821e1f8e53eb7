"""The claims page, the landing scorecard and the table pages (matcond.claims.page): rendered
from templates with every user text escaped, the counts those of the table."""

import math
import re
from html.parser import HTMLParser

import pandas as pd
import pytest
from support import REPO

from matcond.claims.evaluate import CLAIM_COLUMNS
from matcond.claims.page import claims_page, landing_scorecard, table_page

HOSTILE = "</td></table><script>window.pwned = 1</script> & <b>bold</b>"


def claims_table() -> pd.DataFrame:
    base = {column: math.nan for column in CLAIM_COLUMNS}
    rows = [
        {
            **base,
            "claim_id": "a1",
            "source": "condition-number paper",
            "where": "§4.1",
            "statement": HOSTILE,
            "paper_value": "0.27",
            "band_low": 0.2,
            "band_high": 0.34,
            "kind": "value",
            "statistic": "mean",
            "measured": 0.25,
            "ci_low": 0.21,
            "ci_high": 0.3,
            "n": 20,
            "n_diverged": 0,
            "verdict": "reproduced",
            "rule": "interval",
            "note": "",
        },
        {
            **base,
            "claim_id": "a2",
            "source": "condition-number paper",
            "where": "§4.2 / abstract",
            "statement": "Adam is worse",
            "paper_value": "[1.0, inf]",
            "kind": "ratio",
            "statistic": "mean",
            "measured": 0.9,
            "ci_low": 0.8,
            "ci_high": 1.1,
            "n": 20,
            "n_diverged": 2,
            "verdict": "inconclusive",
            "rule": "interval",
            "note": HOSTILE,
        },
        {
            **base,
            "claim_id": "c1",
            "source": "own check",
            "where": "control (momentum)",
            "statement": "theory",
            "paper_value": "theory",
            "kind": "value",
            "statistic": "median",
            "measured": math.nan,
            "verdict": "not comparable",
            "rule": "interval",
            "note": "",
        },
    ]
    return pd.DataFrame(rows, columns=CLAIM_COLUMNS)


class Cells(HTMLParser):
    """The scorecard's count cells (data-source, data-verdict, text) and every tag seen."""

    def __init__(self):
        super().__init__()
        self.cells, self.tags, self._open = [], [], None

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        attrs = dict(attrs)
        if tag == "td" and "data-verdict" in attrs:
            self._open = [attrs["data-source"], attrs["data-verdict"], ""]

    def handle_data(self, data):
        if self._open is not None:
            self._open[2] += data

    def handle_endtag(self, tag):
        if tag == "td" and self._open is not None:
            self.cells.append(tuple(self._open))
            self._open = None


def parsed(page: str) -> Cells:
    parser = Cells()
    parser.feed(page)
    return parser


def test_user_text_reaches_the_claims_page_as_text():
    page = claims_page(claims_table())
    assert "window.pwned" in page and "<b>" not in page
    assert page.count("&lt;script&gt;window.pwned = 1&lt;/script&gt; &amp; &lt;b&gt;") == 2
    assert parsed(page).tags.count("script") == 1  # the verdict filter's, the template's own
    assert "pwned" not in page.split("<script>")[1].split("</script>")[0]


def test_the_page_s_counts_are_the_table_s():
    table = claims_table()
    page = claims_page(table)
    counts = {(s, v): int(n) for s, v, n in parsed(page).cells if v != "claims" and int(n)}
    assert counts == {
        (s, v): n for (s, v), n in table.groupby(["source", "verdict"]).size().items()
    }
    assert page.count('class="verdict"') == len(table) + len(counts)  # rows and scorecard
    assert '<tr id="a1" data-verdict="reproduced">' in page
    assert 'id="condition-number-paper"' in page
    assert "2 diverged left out" in page and "[0.2, 0.34]" in page


def test_each_landing_count_opens_the_list_of_its_claims_and_a_claim_links_its_figures():
    card = landing_scorecard(claims_table(), {"a1": ["fig1_dimension"], "a2": []})
    assert not card.startswith("<!doctype")  # included in the report's own page
    cells = re.findall(r'<td data-source="([^"]+)" data-verdict="([^"]+)"[^>]*>(.*?)</td>', card)
    opened = 0
    for source, verdict, cell in cells:
        link = re.fullmatch(r'<a href="([^"]+)">(\d+)</a>', cell)
        if link is None:  # a count of 0
            assert cell == "0"
            continue
        href, count = link.groups()
        if verdict == "claims":
            assert href == "javascript:app.showCategory(&#39;Claims&#39;)"
            continue
        group_id = f"claims-{source.replace(' ', '-')}-{verdict.replace(' ', '-')}"
        assert f"getElementById(&#39;{group_id}&#39;)" in href and ".open = true" in href
        group = re.search(rf'<details id="{group_id}"[^>]*>(.*?)</details>', card, re.S)
        assert group and len(re.findall(r"<li\b", group.group(1))) == int(count)
        opened += 1
    assert opened == 3  # reproduced, inconclusive (condition-number paper), not comparable
    figure = re.findall(r'<a href="(javascript:void app\.setView[^"]+)">([^<]+)</a>', card)
    assert [label for _, label in figure] == ["Fig. 1: dimension"]
    assert "results/figures/fig1_dimension.png" in figure[0][0]
    assert "<script>" not in card and "&lt;script&gt;" in card  # the statement, as text


def test_a_table_page_escapes_its_cells_and_rounds_its_numbers():
    table = pd.DataFrame({"trial": [HOSTILE, "b"], "epoch": [3, 4], "loss": [1.23456, math.nan]})
    page = table_page(table, "Diverged <trials>")
    assert "<script>" not in page and "<title>Diverged &lt;trials&gt;</title>" in page
    assert "<td>1.23</td>" in page and "<td></td>" in page and "<td>3</td>" in page


@pytest.mark.workflow  # a browser: seconds
def test_the_verdict_filter_shows_the_claims_of_one_verdict(tmp_path):
    """In Chromium: choosing a verdict hides every claim of another; the script is the
    template's own (no user text in it)."""
    import shutil

    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("no chromium on PATH (.ci/run installs Debian's)")
    from playwright.sync_api import sync_playwright

    page_file = tmp_path / "claims.html"
    page_file.write_text(claims_page(claims_table()))
    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page()
        errors = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(page_file.as_uri())
        rows = page.locator("table.claims tbody tr")
        assert rows.count() == 3 and page.locator("table.claims tbody tr:visible").count() == 3
        page.select_option("#verdict-filter", "inconclusive")
        visible = page.locator("table.claims tbody tr:visible")
        assert visible.count() == 1 and visible.first.get_attribute("id") == "a2"
        page.select_option("#verdict-filter", "")
        assert page.locator("table.claims tbody tr:visible").count() == 3
        browser.close()
    assert errors == []


def test_the_findings_show_each_claim_with_its_verdict_and_open_it_below():
    """Each question with its claims (statement, the paper's value, ours, verdict badge) and
    a link that opens the folded list holding that claim; a claim the table lacks is left
    out, and so is a question left without claims; the question is text."""
    findings = [
        {"question": HOSTILE, "claims": ["a1", "c1", "gone"]},
        {"question": "Only gone?", "claims": ["gone"]},
    ]
    card = landing_scorecard(claims_table(), {}, findings)
    items = re.findall(r'<li class="finding">(.*?)</li>', card, re.S)
    assert len(items) == 1 and "Only gone?" not in card
    assert "&lt;script&gt;" in items[0] and "<script>" not in card
    links = re.findall(r'<a href="(javascript:[^"]+)">([^<]+)</a>', items[0])
    assert [label for _, label in links] == ["a1", "c1"]
    for href, claim_id in links:
        assert f"getElementById(&#39;claim-{claim_id}&#39;).closest(&#39;details&#39;)" in href
        assert re.search(
            rf'<details id="[^"]+"[^>]*>(?:(?!</details>).)*<li id="claim-{claim_id}"', card, re.S
        )
    badges = re.findall(r'<span class="verdict"[^>]*>([^<]+)</span>', items[0])
    assert badges == ["reproduced", "not comparable"]
    assert "paper 0.27, ours 0.25 [0.21, 0.3]" in items[0]


def test_a_run_on_other_settings_opens_by_pointing_to_the_paper_runs_results():
    """The small run's landing page had every paper claim "settings differ" and nothing
    saying it was a smoke test or where the paper-scale verdicts are."""
    judged = landing_scorecard(claims_table(), {})
    assert 'class="smoke-test"' not in judged
    table = claims_table()
    papers = table["source"] != "own check"
    table.loc[papers.idxmax(), "verdict"] = "settings differ"
    smoke = landing_scorecard(table, {})
    pointer = smoke.split('<p class="smoke-test"', 1)[1].split("</p>", 1)[0]
    assert f"1 of the papers' {papers.sum()} claims" in pointer
    for kept in ("docs/results.md", "docs/paper-figures.md", "docs/paper-run/claims.html"):
        assert kept in pointer and (REPO / kept).exists()


def test_the_console_line_of_a_smoke_test_names_where_the_verdicts_are():
    from matcond.claims.markdown import smoke_test_line

    assert smoke_test_line(claims_table()) == ""
    table = claims_table()
    table.loc[0, "verdict"] = "settings differ"
    line = smoke_test_line(table)
    assert line.startswith("Note: 1 of the papers' ") and "docs/results.md" in line
