"""Every number of the three condition-number documents (the paper, its slides, its peer review)
is accounted for by the ledger config/paper_numbers.yaml: each occurrence has an entry that
names the claim(s) of config/claims.yaml checking it, or says why none does (`left_out`).

A number is what NUMBER matches ("0.27", "13,167", "6.6×10^{-5}", "10^{-4}"; a percentage's
number without its "%") in a document once SKIP has blanked what is no number of the text:
the reference list, section and list numbers opening a line ("4.1 Component", "1. SUMMARY"),
references to figures, sections and experiments ("Figure 3", "Exp. 4"), citations ("[10, 11]"),
enumerations ("(1)") and years before a ")" ("(2026)"). Digits glued to a letter, "_" or "^"
are no number either (review item S4, σ_1, W_2, the square of 0.01^2). Numbers are compared as
printed, without thousands separators, spaces and braces (1,510 = 1510; 6.6 \\times 10^{-5} =
6.6×10^-5). An entry stands for one occurrence, or `count` of them.
"""

import re
from collections import Counter
from pathlib import Path

import pytest

from matcond.pipeline.config import load_yaml

REPO = Path(__file__).resolve().parents[2]
PAPERS = REPO.parent / "shared" / "papers"
DOCUMENTS = [
    "condition-number-paper.txt",
    "condition-number-slides.txt",
    "condition-number-peer-review.txt",
]
LEDGER = load_yaml(REPO / "config" / "paper_numbers.yaml")
CLAIMS = load_yaml(REPO / "config" / "claims.yaml")["claims"]
CLAIM_IDS = {claim["claim_id"] for claim in CLAIMS}

SKIP = re.compile(
    r"(?ms)^REFERENCES\n.*"  # the reference list, to the end
    r"|^\s*\d+(?:\.\d+)*\.?[ \t]+(?=[A-Z])"  # section, list numbers: "4.1 Component", "1. SUMMARY"
    r"|(?:Figure|Fig\.|Table|Section|Exp\.|Experiment|Eq\.)\s*\d+(?:\.\d+)?"
    r"|\[\d+(?:,\s*\d+)*\]"  # citations
    r"|\(\d\)"  # enumerations
    r"|(?:19|20)\d\d(?=\))"  # years: "(2026)", "et al., 2018)"
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


def test_the_ledger_holds_the_three_documents():
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
