"""The report's captions are valid reST and carry every setting of the trials they describe."""

import io
import re
from pathlib import Path

import docutils.core
import pytest
import yaml

from matcond.catalog import (
    FIGURES,
    experiment_summary,
    report_caption,
    report_label,
    trial_settings,
)
from matcond.claims_check import OWN, claim_source
from matcond.config import validate_config
from matcond.trials import all_trials

REPO = Path(__file__).resolve().parents[1]


def rest_messages(text: str) -> list[str]:
    """Docutils' system messages (warnings and worse) in the HTML of the reST ``text``, as the
    report renders it."""
    settings = {"report_level": 2, "halt_level": 5, "warning_stream": io.StringIO()}
    html = docutils.core.publish_parts(text, writer="html", settings_overrides=settings)
    return re.findall(r'class="system-message".*?</div>', html["html_body"], flags=re.S)


@pytest.fixture(scope="module")
def paper_captions() -> dict[str, str]:
    config = validate_config(yaml.safe_load((REPO / "config" / "config.yaml").read_text()))
    summaries = {name: experiment_summary(ts) for name, ts in all_trials(config).items()}
    gn = config["gauss_newton"]
    gn_settings = {**gn["sweeps"], "exp7": gn["exp7"], "along_training": gn["along_training"]}
    claims = yaml.safe_load((REPO / "config" / "claims.yaml").read_text())["claims"]
    papers = [c for c in claims if claim_source(c) != OWN]
    return {
        name: report_caption(
            name, summaries, gn_settings, [c for c in papers if c["table"] in tables(name)]
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
    """The settings table under ``**title**`` in a caption, as rendered by docutils."""
    part = caption.split(f"**{title}**")[1].split("**")[0]
    return dict(re.findall(r"\* - ``([^`]+)``\n\s+- ``([^`]*)``", part))


def test_captions_carry_inherited_defaults(paper_captions):
    caption = paper_captions["fig2_optimizer"]
    shared = caption_settings(caption, "exp2_optimizer")
    assert shared["epochs"] == "200" and shared["init_scale"] == "0.02" and shared["dim"] == "128"
    assert "varying ``lr, optimizer, seed``" in caption
    assert "lr" not in shared and "optimizer" not in shared


def test_captions_give_the_papers_values(paper_captions):
    """Fig. 2's caption lists the paper's SGD overall error (0.14), the GN Fig. 3 caption its
    bounds' claims; no caption lists our own checks."""
    assert "overall error SGD 0.14 (§4.2 / abstract): ``0.14``" in paper_captions["fig2_optimizer"]
    assert "(GN App. E, I.3 / Fig. 3): ``[1.0, inf]``" in paper_captions["gn_fig3_bounds"]
    assert all("(theory" not in caption for caption in paper_captions.values())


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
    config = validate_config(yaml.safe_load((REPO / name).read_text()))
    for trials in all_trials(config).values():
        n, shared, varied = experiment_summary(trials)
        assert (n, shared, varied) == (len(trials), *trial_settings([t.spec for t in trials]))
