"""The report's captions are valid reST and carry every setting of the trials they describe."""

import io
import json
import re
from pathlib import Path

import docutils.core
import pytest
import yaml

from matcond.catalog import FIGURES, experiment_summary, report_caption, trial_settings
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
    return {name: report_caption(name, summaries, gn_settings) for name in FIGURES}


def test_every_caption_renders_without_a_docutils_message(paper_captions):
    assert rest_messages("a norm |x| here") != []  # the check sees the fig3 problem
    for name, caption in paper_captions.items():
        assert rest_messages(caption) == [], name


def test_captions_carry_inherited_defaults(paper_captions):
    caption = paper_captions["fig2_optimizer"]
    shared = json.loads(caption.split("every other setting: ``")[1].split("``")[0])
    assert shared["epochs"] == 200 and shared["init_scale"] == 1.0e-3 and shared["dim"] == 128
    assert "varying ``lr, optimizer, seed``" in caption


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
