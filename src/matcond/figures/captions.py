"""What the report says about the figures, and the start-up notes on what a config leaves
out: each figure's caption with its trials' settings and the papers' values (reST, every
user's text escaped), its label in the papers' order.

Light on purpose (no plotting imports): the Snakefile calls it at parse time.
"""

from __future__ import annotations

import json
import re

from matcond.claims.check import figure_title
from matcond.figures.catalog import FIGURES
from matcond.figures.overview import entry


def config_notes(
    experiments: list[str],
    gn_parts: list[str],
    claim_tables: list[str],
    used_elsewhere: list[str],
) -> list[str]:
    """One-line start-up messages on what a config leaves out.

    ``experiments`` and ``gn_parts`` are what the config runs, ``claim_tables`` the experiment
    of each claim of config/claims.yaml, ``used_elsewhere`` the experiments that other parts of
    the workflow read (the readings, the theory table, the GN parts on saved weights). Names an
    experiment that nothing draws or checks (with the closest known name, if it looks
    misspelt), every figure that is skipped although some of what it needs is configured, and
    how many figures and claims are skipped because their experiments are not configured;
    a config with no experiment and no GN part (your own weights alone) gets no such count.
    """
    from matcond.core.config import did_you_mean
    from matcond.gn_experiments.columns import GN_TABLE_PREFIX

    configured = {*experiments, *gn_parts, *(GN_TABLE_PREFIX + p for p in gn_parts)}
    known = {
        *(e for f in FIGURES.values() for e in (*f.experiments, *f.optional)),
        *claim_tables,
        *used_elsewhere,
    }
    notes = [
        f"experiment {name}: no claim or catalogued figure uses it "
        "(its tables and overview are made)" + did_you_mean(name, sorted(known - configured))
        for name in experiments
        if name not in known
    ]
    skipped = []
    for name, figure in FIGURES.items():
        needs = [*figure.experiments, *figure.gauss_newton]
        missing = [n for n in needs if n not in configured]
        if missing:
            skipped.append(name)
            if len(missing) < len(needs):
                notes.append(f"figure {name} skipped: {', '.join(missing)} not configured")
    if not configured:  # the user's own weights alone: the papers are not its business
        return notes
    if skipped:
        notes.append(f"{len(skipped)} of {len(FIGURES)} figures skipped (not configured)")
    unchecked = sorted({t for t in claim_tables if t not in configured})
    if unchecked:
        count = sum(t in unchecked for t in claim_tables)
        notes.append(
            f"{count} of {len(claim_tables)} claims not checked: experiments "
            f"{', '.join(unchecked)} not configured"
        )
    return notes


# The characters a caption never holds raw: Snakemake places a figure's params, its caption
# among them, unescaped inside a <script> of the report. A caption writes them as the
# substitutions |lt|, |gt|, |amp| that workflow/report/figure.rst defines.
_SUBSTITUTED = {"<": "lt", ">": "gt", "&": "amp"}


def _substitute(text: str) -> str:
    """``text`` with each character of :data:`_SUBSTITUTED` as its substitution reference
    (set apart by escaped spaces, which reST drops: ``a\\ |lt|\\ b`` reads ``a<b``)."""
    return re.sub("[<>&]", lambda m: f"\\ |{_SUBSTITUTED[m.group()]}|\\ ", text)


def _rest_text(text: str) -> str:
    """Our own reST ``text`` (a catalog caption) with reST's substitution marks escaped
    outside ``literals`` (|x| is a norm) and :data:`_SUBSTITUTED` substituted."""
    parts = text.split("``")
    return "``".join(
        p if i % 2 else _substitute(p.replace("|", "\\|")) for i, p in enumerate(parts)
    )


def rest_escape(text: object) -> str:
    """reST that renders ``text`` (anyone's: a claim's statement, a setting's value, a path)
    as that text and nothing else: on one line (whitespace runs as one space, control
    characters as U+FFFD), every ASCII punctuation character backslash-escaped, so that no
    markup, role, link or directive (``raw``, ``include``) can start, and
    :data:`_SUBSTITUTED` substituted."""
    escaped = []
    for char in " ".join(str(text).split()):
        if char in _SUBSTITUTED:
            escaped.append(_substitute(char))
        elif not char.isprintable():
            escaped.append("\ufffd")
        elif char.isascii() and not char.isalnum() and char != " ":
            escaped.append("\\" + char)
        else:
            escaped.append(char)
    return "".join(escaped)


def trial_settings(specs: list[dict]) -> tuple[dict, list[str]]:
    """The settings every trial of ``specs`` shares (defaults included), and the names of
    those that differ between trials (seed among them)."""
    keys = sorted({k for spec in specs for k in spec})
    shared = {
        k: specs[0][k] for k in keys if all(k in spec and spec[k] == specs[0][k] for spec in specs)
    }
    return shared, [k for k in keys if k not in shared]


def experiment_summary(trials: list) -> tuple[int, dict, list[str]]:
    """The number of ``trials`` (:class:`matcond.core.trials.Trial`) and :func:`trial_settings`
    of their specs, reading one spec per setting (the trials of a setting differ in their seed
    only), so that 10^5 trials cost a few hundred parses, not 10^5."""
    first_of_cell = {}
    for trial in trials:
        first_of_cell.setdefault(trial.cell, trial)
    shared, varied = trial_settings([t.spec for t in first_of_cell.values()])
    if len({t.seed for t in trials}) > 1 and "seed" in shared:
        del shared["seed"]
        varied = sorted([*varied, "seed"])
    return len(trials), shared, varied


def _settings_table(settings: dict) -> list[str]:
    """``settings`` as a two-column reST table, one row per key (lists and mappings as JSON),
    every key and value through :func:`rest_escape`."""
    lines = [".. list-table::", "   :widths: 1 3", ""]
    for key, value in sorted(settings.items()):
        text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
        lines += [f"   * - {rest_escape(key)}", f"     - {rest_escape(text) or '(empty)'}"]
    return [*lines, ""]


# Snakemake's report renders a caption through docutils, which takes no line over 10,000
# characters (its line_length_limit): a longer one puts an error box in place of the whole
# caption. A claim is one line of it, its statement, place and id each at most this many
# characters (each at most 9 once escaped: :func:`rest_escape`); the claims page shows them
# whole.
CAPTION_TEXT_CHARS = 300
CLIPPED = " ... (cut here: in full on the claims page)"


def _claim_text(value: object) -> str:
    """A claim's text as a caption line lists it: escaped, and clipped to
    :data:`CAPTION_TEXT_CHARS` characters ending with :data:`CLIPPED` where longer."""
    text = str(value)
    if len(text) > CAPTION_TEXT_CHARS:
        text = text[:CAPTION_TEXT_CHARS] + CLIPPED
    return rest_escape(text)


def _paper_value(value) -> str:
    return f"[{value[0]}, {value[1]}]" if isinstance(value, list) else str(value)


def report_caption(
    name: str,
    summaries: dict[str, tuple[int, dict, list[str]]],
    gn_settings: dict[str, dict],
    paper_claims: list[dict],
    own_checks: list[dict] = (),
) -> str:
    """Figure ``name``'s report caption (reST): its caption; for each experiment it draws
    (``summaries``: per configured experiment its number of trials and :func:`trial_settings`
    of their specs) what its trials vary and, as a table, every setting they share, defaults
    included; for each GN part its settings (``gn_settings``); then the papers' values on its
    tables (``paper_claims``: claims of config/claims.yaml, the papers' only) and our own
    checks on them (``own_checks``), each by its claim id."""
    figure = entry(name)
    lines = [_rest_text(figure.caption), ""]
    for experiment in [*figure.experiments, *(e for e in figure.optional if e in summaries)]:
        n_trials, shared, varied = summaries[experiment]
        varying = f"varying ``{', '.join(varied)}``" if varied else "all at one setting"
        lines += [
            f"**{experiment}**: {n_trials} {'trial' if n_trials == 1 else 'trials'} (table "
            f"``results/tables/{experiment}.csv``; n per point in the title), {varying}; the "
            "settings they share:",
            "",
            *_settings_table(shared),
        ]
    for part in figure.gauss_newton:
        lines += [f"**gauss_newton.{part}**:", "", *_settings_table(gn_settings[part])]
    if paper_claims:
        lines += ["**The papers' values** (verdicts on the claims page):", ""]
        lines += [
            f"- {_claim_text(c['statement'])} ({_claim_text(c['where'])}): "
            f"{rest_escape(_paper_value(c['paper_value']))} ({_claim_text(c['claim_id'])})"
            for c in paper_claims
        ]
        lines.append("")
    if own_checks:
        lines += ["**Our checks on these trials** (verdicts on the claims page):", ""]
        lines += [
            f"- {_claim_text(c['statement'])} ({_claim_text(c['claim_id'])})" for c in own_checks
        ]
        lines.append("")
    return "\n".join(lines)


def _paper_order(name: str) -> tuple:
    """A figure's place in its paper: numbered figures by number, then appendices, then the
    rest (catalog order)."""
    if match := re.fullmatch(r"(?:gn_)?fig(\d+)_.*", name):
        return (0, int(match.group(1)), "")
    if match := re.fullmatch(r"gn_app(\w)_.*", name):
        return (1, 0, match.group(1))
    return (2, list(FIGURES).index(name), "")


def report_label(name: str) -> str:
    """Figure ``name``'s label in the report: its rank in the papers' order within its
    category (the report sorts labels as text), then its :func:`figure_title`."""
    if name not in FIGURES:  # an experiment's overview: by name in its own category
        return figure_title(name)
    category = [n for n, f in FIGURES.items() if f.category == FIGURES[name].category]
    rank = sorted(category, key=_paper_order).index(name) + 1
    return f"{rank:02d} {figure_title(name)}"
