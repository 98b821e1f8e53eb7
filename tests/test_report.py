"""The report's captions are valid reST, carry every setting of the trials they describe and
show anyone's text as text: no markup, no directive, no character that ends a script."""

import html
import io
import json
import re

import docutils.core
import pytest
from support import REPO

from matcond.claims.check import OWN, claim_source
from matcond.core.config import load_yaml, validate_config
from matcond.core.trials import all_trials
from matcond.figures.captions import (
    CAPTION_TEXT_CHARS,
    CLIPPED,
    experiment_summary,
    report_caption,
    report_label,
    trial_settings,
)
from matcond.figures.catalog import FIGURES
from matcond.server.client import SCRIPT_SAFE, _script_safe, script_safe_json

FIGURE_RST = (REPO / "workflow" / "report" / "figure.rst").read_text()


def caption_document(caption: str) -> str:
    """The reST the report renders for a figure whose caption param is ``caption``."""
    return FIGURE_RST.replace("{{ snakemake.params.caption }}", caption)


def rendered(text: str) -> str:
    """The HTML body of the reST ``text`` as the report renders it (file insertion left on,
    as Snakemake leaves it)."""
    settings = {"report_level": 2, "halt_level": 5, "warning_stream": io.StringIO()}
    return docutils.core.publish_parts(text, writer="html", settings_overrides=settings)[
        "html_body"
    ]


def rest_messages(text: str) -> list[str]:
    """Docutils' system messages (warnings and worse) in the HTML of the reST ``text``."""
    return re.findall(r'class="system-message".*?</div>', rendered(text), flags=re.S)


@pytest.fixture(scope="module")
def paper_captions() -> dict[str, str]:
    config = validate_config(load_yaml(REPO / "config" / "config.yaml"))
    summaries = {name: experiment_summary(ts) for name, ts in all_trials(config).items()}
    gn = config["gauss_newton"]
    gn_settings = {**gn["sweeps"], "exp7": gn["exp7"], "along_training": gn["along_training"]}
    claims = load_yaml(REPO / "config" / "claims.yaml")["claims"]
    papers = [c for c in claims if claim_source(c) != OWN]
    own = [c for c in claims if claim_source(c) == OWN]
    return {
        name: caption_document(
            report_caption(
                name,
                summaries,
                gn_settings,
                [c for c in papers if c["table"] in tables(name)],
                [c for c in own if c["table"] in tables(name)],
            )
        )
        for name in FIGURES
    }


def tables(name: str) -> set[str]:
    """The tables figure ``name`` draws, as far as claims go (its experiments and tables)."""
    figure = FIGURES[name]
    return {*figure.experiments, *figure.optional, *figure.tables}


def test_every_caption_renders_without_a_docutils_message(paper_captions):
    assert rest_messages("a norm |x| here") != []  # the check sees the fig3 problem
    for name, caption in paper_captions.items():
        assert rest_messages(caption) == [], name


def caption_settings(caption: str, title: str) -> dict[str, str]:
    """The settings table under ``**title**`` in a caption, as the report shows it."""
    part = rendered(caption).split(f"<strong>{title}</strong>")[1].split("<strong>")[0]
    cells = re.findall(r"<tr><td>(.*?)</td>\s*<td>(.*?)</td>", part, flags=re.S)
    return {html.unescape(key): html.unescape(value) for key, value in cells}


def test_captions_carry_inherited_defaults(paper_captions):
    caption = paper_captions["fig2_optimizer"]
    shared = caption_settings(caption, "exp2_optimizer")
    assert shared["epochs"] == "200" and shared["init_scale"] == "0.02" and shared["dim"] == "128"
    assert shared["effective_rank_thresholds"] == "[0.001, 0.01, 0.1]"
    assert "varying ``lr, optimizer, seed``" in caption
    assert "lr" not in shared and "optimizer" not in shared


def test_captions_give_the_papers_values(paper_captions):
    """Fig. 2's caption lists the paper's SGD overall error (0.14), the GN Fig. 3 caption its
    bounds' claims; our own checks are listed apart from the papers' values, never among them."""
    fig2 = html.unescape(rendered(paper_captions["fig2_optimizer"]))
    assert "overall error SGD 0.14 (§4.2 / abstract): 0.14 (exp2_overall_sgd)" in fig2
    fig3 = html.unescape(rendered(paper_captions["gn_fig3_bounds"]))
    assert "(GN App. E, I.3 / Fig. 3): [1.0, inf]" in fig3
    papers_parts = [c.split("**Our checks on these trials**")[0] for c in paper_captions.values()]
    assert all("(theory" not in part for part in papers_parts)


HOSTILE = [
    "</script><script>window.pwned = 1</script>",
    "<!-- <script> & &amp; <img src=x onerror=alert(1)>",
    "line one\n\n.. raw:: html\n   :file: {secret}\n\n.. include:: {secret}\n",
    "`link <javascript:alert(1)>`_ *em* |sub| :raw-html:`<b>` [1]_ ``lit`` \\ $\\alpha$",
    "{{ snakemake.config }} \x00\x1b tab\there",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_anyones_text_in_a_caption_is_shown_as_text(text, tmp_path):
    """A claim's statement, its place, its id and a setting's value, each hostile: the caption
    param holds no <, > or & (it sits in the report's script data), renders without a
    docutils message, includes no file, and shows each text (on one line) as it is."""
    secret = tmp_path / "secret.txt"
    secret.write_text("SECRET-CONTENT")
    text = text.format(secret=secret) if "{secret}" in text else text
    claim = {"statement": text, "where": text, "paper_value": 0.5, "claim_id": text}
    summaries = {"exp2_optimizer": (3, {"dim": 8, "note": text, text: 1}, ["seed"])}
    caption = report_caption("fig2_optimizer", summaries, {}, [claim])
    assert not re.search("[<>&]", caption)
    document = caption_document(caption)
    assert rest_messages(document) == []
    body = rendered(document)
    assert "SECRET-CONTENT" not in body and "<script" not in body and "<img" not in body
    shown = " ".join(text.replace("\x00", "\ufffd").replace("\x1b", "\ufffd").split())
    assert f"{shown} ({shown}): 0.5 ({shown})" in html.unescape(body)
    settings = caption_settings(document, "exp2_optimizer")
    assert settings["note"] == shown and settings[shown] == "1"


def test_a_caption_names_our_checks_on_its_trials(paper_captions):
    caption = html.unescape(rendered(paper_captions["depth_theory"]))
    assert "Our checks on these trials" in caption and "(depth_flow_L2_init0.5)" in caption
    assert "Our checks on these trials" not in paper_captions["fig2_optimizer"]


def test_own_captions_keep_their_comparisons(paper_captions):
    """Our captions' own <, > and & are substitutions in the param, shown as the characters."""
    assert "m >> max(d, k)" in html.unescape(rendered(paper_captions["gn_appG_init_bounds"]))
    assert not any(re.search("[<>&]", c.split("\n.. |lt|")[0]) for c in paper_captions.values())


@pytest.mark.parametrize(
    "value", ["</script>", "a & b", {"path": "x<y"}, ["<"], "plain", 3, SCRIPT_SAFE + "x"]
)
def test_a_param_shown_in_the_report_holds_no_script_characters(value):
    """A param as Snakemake shows it: unchanged unless it has <, > or & (or the prefix);
    else the prefix and JSON without them that reads back to the value (so an edit of the
    value still changes it: it still reruns its job)."""
    shown = _script_safe(value)
    text = shown if isinstance(shown, str) else str(shown)
    assert not re.search("[<>&]", text)
    if not re.search("[<>&]", str(value)) and not str(value).startswith(SCRIPT_SAFE):
        assert shown == value
    else:
        original = value if isinstance(value, str) else str(value)
        assert json.loads(shown.removeprefix(SCRIPT_SAFE)) == original
    assert json.loads(script_safe_json({"a": [str(value)]})) == {"a": [str(value)]}


def test_report_labels_put_the_figures_in_the_papers_order():
    """Sorted as text, as the report sorts them, the GN figures' labels come in the paper's
    numbering (Fig. 1, 2, 3, 5, ... 23), then its appendices, then the extensions."""
    gn = [n for n, f in FIGURES.items() if f.category == "Gauss-Newton conditioning"]
    labels = sorted(report_label(n) for n in gn)
    numbers = [int(m) for label in labels for m in re.findall(r"GN Fig\. (\d+):", label)]
    assert numbers == sorted(numbers) and len(numbers) == len(set(numbers)) >= 20
    assert labels[0] == "01 GN Fig. 1: pruning"
    first_appendix = next(i for i, label in enumerate(labels) if "App." in label)
    assert first_appendix == len(numbers) and labels[-1].endswith("gn_along_training")


def test_trial_settings_splits_shared_from_varied():
    shared, varied = trial_settings([{"a": 1, "b": 2}, {"a": 1, "b": 3}, {"a": 1, "b": 2}])
    assert shared == {"a": 1} and varied == ["b"]
    shared, varied = trial_settings([{"a": 1}, {"a": 1, "c": 0}])
    assert shared == {"a": 1} and varied == ["c"]


@pytest.mark.parametrize("name", ["config/config.yaml", "config/test/config.yaml"])
def test_an_experiment_summary_reads_one_spec_per_setting_and_agrees_with_all(name):
    config = validate_config(load_yaml(REPO / name))
    for trials in all_trials(config).values():
        n, shared, varied = experiment_summary(trials)
        assert (n, shared, varied) == (len(trials), *trial_settings([t.spec for t in trials]))


def test_a_claim_too_long_for_a_caption_line_is_cut_not_the_caption_lost():
    """A 100,000-character statement (or place, or id) made docutils put an error box in
    place of the whole caption (its line_length_limit, 10,000): each is cut where the
    caption lists it, saying where the whole text is; the rest of the caption stays."""
    summaries = {"exp2_optimizer": (3, {"dim": 8}, ["seed"])}
    long = {"statement": "<a " * 33_000, "where": "&" * 20_000, "claim_id": "c" * 20_000}
    claim = {**long, "paper_value": 0.5}
    caption = caption_document(report_caption("fig2_optimizer", summaries, {}, [claim]))
    assert rest_messages(caption) == []
    body = html.unescape(rendered(caption))
    assert "<a <a" in body and "exp2_optimizer" in body
    assert body.count("in full on the claims page") == 3  # statement, place and id
    assert "c" * CAPTION_TEXT_CHARS + CLIPPED in body and "c" * (CAPTION_TEXT_CHARS + 1) not in body
    short = {"statement": "x", "where": "Fig. 2", "claim_id": "c1", "paper_value": 0.5}
    line = report_caption("fig2_optimizer", summaries, {}, [short]).splitlines()
    assert "- x (Fig\\. 2): 0\\.5 (c1)" in line


def test_a_caption_of_trials_at_one_setting_is_valid_markup():
    """One trial at one setting (a one-value grid, one seed): the caption said "varying
    ````", an empty literal that reST renders as an error box."""
    from matcond.figures.captions import report_caption

    caption = report_caption("overview_e", {"e": (1, {"lr": 0.01, "seed": 0}, [])}, {}, [])
    assert "1 trial (table" in caption and "all at one setting" in caption
    assert rest_messages(caption) == []
