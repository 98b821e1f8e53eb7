"""Shared fixtures of the GN tests; makes the case builders of this folder (``gn_cases``)
importable in any import mode."""

import sys
from pathlib import Path

import pytest
import torch
import yaml

from matcond.pipeline.config import validate_config

sys.path.insert(0, str(Path(__file__).parent))

TEST_CONFIG = Path(__file__).resolve().parents[2] / "config" / "test" / "config.yaml"


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """One torch thread, as the rules use (tiny problems: threads only contend)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def gn_config() -> dict:
    """The validated ``gauss_newton`` block of the test config."""
    return validate_config(yaml.safe_load(TEST_CONFIG.read_text()))["gauss_newton"]
