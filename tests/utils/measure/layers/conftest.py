"""A timing of two forwards of the stepped model (tests/support/stepped_model.py), for the ModelTiming and layer
table tests."""
import pytest

from tests.support.stepped_model import time_two_forwards


@pytest.fixture(scope="module")
def two_forwards():
    return time_two_forwards()
