"""Every Gauss-Newton library test on one torch thread (tests/conftest.py)."""

import pytest


@pytest.fixture(scope="module", autouse=True)
def one_thread(one_torch_thread):
    """The module's tests on one torch thread."""
