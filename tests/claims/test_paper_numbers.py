"""Every number of the four documents of both papers (the condition-number paper, its slides, its
peer review, and the Gauss-Newton paper) is accounted for by the ledger config/paper_numbers.yaml:
each occurrence has an entry that names the claim(s) of config/claims.yaml checking it, or says
why none does (`left_out`).

A number is what NUMBER matches ("0.27", "13,167", "6.6×10^{-5}", "10^{-4}"; a percentage's
number without its "%") in a document once SKIP has blanked what is no number of the text:
the reference lists, section and list numbers opening a line ("4.1 Component", "1. SUMMARY"),
references to figures, sections, experiments, equations and lemmas ("Figure 3", "Exp. 4",
"Eq. (10)", "Lemma 2"), citations ("[10, 11]", "[Kingma and Ba, 2014]"), enumerations and
equation numbers ("(1)", "(27)") and years before a ")" ("(2026)"). Digits glued to a letter,
"_" or "^" are no number either (review item S4, σ_1, W_2, the square of 0.01^2). The
Gauss-Newton paper is the text of a web page that prints each formula four times: as shown
("n=1000"), then as content MathML ("𝑛1000"), as TeX ("n=1000") and as spoken math
("italic_n = 1000"); SKIP blanks the last three, so a formula's numbers count once, as shown
(the few copies it cannot find have ledger entries that say so).
Numbers are compared as printed, without thousands separators, spaces and braces (1,510 = 1510;
6.6 \\times 10^{-5} = 6.6×10^-5). An entry stands for one occurrence, or `count` of them.
"""

import re
from collections import Counter

import pytest
from support import REPO

from matcond.core.config import load_yaml

PAPERS = REPO.parent / "shared" / "papers"
DOCUMENTS = [
    "condition-number-paper.txt",
    "condition-number-slides.txt",
    "condition-number-peer-review.txt",
    "gauss-newton-conditioning-paper.txt",
]
LEDGER = load_yaml(REPO / "config" / "paper_numbers.yaml")
CLAIMS = load_yaml(REPO / "config" / "claims.yaml")["claims"]
CLAIM_IDS = {claim["claim_id"] for claim in CLAIMS}

# The Gauss-Newton paper's formulas (see the docstring): a spoken-math token starts so ("italic_n",
# "start_POSTSUPERSCRIPT", "over^"); a token of spoken math is one of those, symbols, a number or a
# word before one ("divide start_ARG", "square-root start_ARG", "\\text{for}" read "for italic_j").
SPOKEN = r"(?:italic|bold|roman|blackboard|caligraphic|start|end)_|over\^"
SPOKEN_TOKEN = (
    rf"(?:(?:{SPOKEN})\S*|[^\sA-Za-z\d]+|\d+(?:\.\d+)?[^\sA-Za-z\d]*"
    rf"|[A-Za-z-]+(?=(?: [A-Za-z-]+){{0,2}} (?:{SPOKEN})))(?!\S)"
)
# Content MathML, the second printing, starts at a math-italic letter ("𝑛", "𝛼"; the shown
# formula has plain ones) or an operator's name glued to the shown formula ("superscript").
MATHML = (
    r"(?<=\S)(?:[\U0001D434-\U0001D467\U0001D6E2-\U0001D71B]|subscript|superscript"
    r"|tensor-product|formulae-sequence|succeeds|similar-to|much-greater-than|assign|absent)"
)
# A formula's content MathML and TeX, up to its spoken math, and that to its end.
FORMULA_COPIES = rf"{MATHML}[^\n]*?(?={SPOKEN})(?:{SPOKEN_TOKEN})(?: +(?:{SPOKEN_TOKEN}))*"

SKIP = re.compile(
    r"(?ms)^REFERENCES\n.*"  # the reference list, to the end
    r"|^References\n.*?(?=^Appendix A )"  # the GN paper's, before its appendices
    r"|^\s*\d+(?:\.\d+)*\.?[ \t]+(?=[A-Z])"  # section, list numbers: "4.1 Component", "1. SUMMARY"
    r"|(?:Figure|Fig\.|Table|Section|Exp\.|Experiment|Eq\.|Equation|Lemma|Corollary)\s*\d+(?:\.\d+)?"
    r"|\[\d+(?:,\s*\d+)*\]"  # citations
    r"|\[[A-Z][^\[\]\n]*?(?:19|20)\d\d\]"  # author-year citations: "[Kingma and Ba, 2014]"
    r"|\(\d\d?\)"  # enumerations, equation numbers: "(1)", "(27)", "Eq. (10)"
    r"|(?:19|20)\d\d(?=\))"  # years: "(2026)", "et al., 2018)"
    r"|^See \d+$"  # a restated lemma's label: "See 2" (Lemma 2)
    rf"|{FORMULA_COPIES}"  # the GN paper's formulas printed again
    rf"|(?:{SPOKEN})\S*(?: +(?:{SPOKEN_TOKEN}))*"  # spoken math FORMULA_COPIES does not reach
)
NUMBER = re.compile(
    r"(?<![\w.,^])(?:"
    r"\d+(?:\.\d+)?\s*(?:×|\\times)\s*10\^\{?-?\d+\}?"  # 6.6×10^{-5}, 4.8×10^6
    r"|10\^\{?-?\d+\}?"  # 10^{-4}
    r"|\d{1,3}(?:,\d{3})+(?:\.\d+)?"  # 13,167
    r"|\d+(?:\.\d+)?)"  # 0.27, 42
)


def normal(number: str) -> str:
    """A number as printed, without thousands separators, spaces and braces."""
    return re.sub(r"[\s,{}]", "", number.replace("\\times", "×"))


def found(text: str) -> list[tuple[str, str]]:
    """Each number of ``text`` (:data:`NUMBER` once :data:`SKIP` is blanked), with its context."""
    kept = SKIP.sub(lambda m: " " * len(m.group(0)), text)
    return [
        (normal(m.group(0)), " ".join(text[max(0, m.start() - 40) : m.end() + 30].split()))
        for m in NUMBER.finditer(kept)
    ]


def entries():
    return [(doc, entry) for doc, listed in LEDGER.items() for entry in listed]


def claims_of(entry: dict) -> list[str]:
    """The claim ids an entry names: one, or a list."""
    claim = entry.get("claim") or []
    return [claim] if isinstance(claim, str) else claim


def test_the_ledger_holds_the_four_documents():
    assert sorted(LEDGER) == sorted(DOCUMENTS)


@pytest.mark.skipif(not PAPERS.is_dir(), reason=f"no papers at {PAPERS} (shared/ beside the repo)")
@pytest.mark.parametrize("document", DOCUMENTS)
def test_every_number_has_a_ledger_entry(document):
    numbers = found((PAPERS / document).read_text())
    printed = Counter(n for n, _ in numbers)
    listed = Counter()
    for entry in LEDGER[document]:
        listed[normal(str(entry["number"]))] += entry.get("count", 1)
    missing = [
        f"{n} ({printed[n] - listed[n]} of {printed[n]} without an entry), e.g. '...{context}...'"
        for n, context in dict(numbers).items()
        if printed[n] > listed[n]
    ]
    stale = [f"{n} ({listed[n]} entries, {printed[n]} printed)" for n in listed - printed]
    assert not missing, f"{document}: numbers without a ledger entry:\n" + "\n".join(missing)
    assert not stale, f"{document}: more ledger entries than printed:\n" + "\n".join(stale)


def test_ledger_claims_exist():
    unknown = [
        f"{doc}: {entry['number']} names {claim!r}"
        for doc, entry in entries()
        for claim in claims_of(entry)
        if claim not in CLAIM_IDS
    ]
    assert not unknown, "claim ids not in config/claims.yaml:\n" + "\n".join(unknown)


def test_every_entry_says_claim_or_why_not():
    bad = [
        f"{doc}: {entry}"
        for doc, entry in entries()
        if ("claim" in entry) == ("left_out" in entry)
        or ("left_out" in entry and not str(entry["left_out"] or "").strip())
        or ("claim" in entry and not entry["claim"])
    ]
    assert not bad, "entries need one of claim and left_out (with a reason):\n" + "\n".join(bad)
