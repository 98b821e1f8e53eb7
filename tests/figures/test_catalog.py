"""The catalog's captions, read from figure_captions.yaml: every figure has one, written out in
full, and a catalog whose captions file names other figures does not load."""

import importlib.util
import shutil
import sys

import pytest
import yaml

from matcond.figures import catalog
from matcond.figures.catalog import CAPTIONS_FILE, FIGURES
from matcond.figures.overview import overview_figure


def test_every_figure_has_its_caption_with_the_shared_sentences_written_out():
    shared = yaml.safe_load(CAPTIONS_FILE.read_text())["shared"]
    for name, figure in FIGURES.items():
        assert figure.caption and "$" not in figure.caption, name
    assert shared["statistics"] in FIGURES["fig1_dimension"].caption
    assert FIGURES["gn_exp7"].caption.endswith(shared["gn_tables"])
    overview = overview_figure("exp_new").caption
    assert overview.startswith("Experiment exp_new, which") and shared["statistics"] in overview


def load_catalog_with(tmp_path, edit):
    """The catalog module loaded from a copy whose captions file ``edit`` changed."""
    shutil.copy(catalog.__file__, tmp_path / "catalog.py")
    captions = yaml.safe_load(CAPTIONS_FILE.read_text())
    edit(captions)
    (tmp_path / CAPTIONS_FILE.name).write_text(yaml.safe_dump(captions))
    spec = importlib.util.spec_from_file_location("catalog_copy", tmp_path / "catalog.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["catalog_copy"] = module  # dataclasses look their module up
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules["catalog_copy"]
    return module


def test_a_figure_without_a_caption_or_a_caption_without_a_figure_is_refused(tmp_path):
    def drop_and_add(captions):
        del captions["figures"]["fig2_optimizer"]
        captions["figures"]["fig99_new"] = "A caption with no figure."

    with pytest.raises(KeyError, match=r"\['fig2_optimizer', 'fig99_new'\]"):
        load_catalog_with(tmp_path, drop_and_add)


def test_a_caption_naming_an_unknown_shared_sentence_is_refused(tmp_path):
    def misspell(captions):
        captions["figures"]["fig2_optimizer"] = "SGD vs Adam. ${statistic}"

    with pytest.raises(KeyError, match=r"caption .fig2_optimizer. names \$\{statistic\}, which"):
        load_catalog_with(tmp_path, misspell)


def test_the_copy_of_the_catalog_loads_unchanged(tmp_path):
    """The two refusals above come from the edits, not from loading a copy."""
    copy = load_catalog_with(tmp_path, lambda captions: None)
    assert {n: f.caption for n, f in copy.FIGURES.items()} == {
        n: f.caption for n, f in FIGURES.items()
    }
