"""Shared fixtures."""

import pytest

from matcond.config import validate_config


@pytest.fixture
def spec() -> dict:
    """A small, fully specified trial (the schema's defaults at d = 8, seed 0)."""
    config = validate_config({"experiments": {"x": {"seeds": 1}}})
    return {**config["defaults"], "dim": 8, "seed": 0}
