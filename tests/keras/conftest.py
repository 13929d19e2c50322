import pytest

import ember
from ember import keras


@pytest.fixture(autouse=True)
def _fresh_names_and_seed():
    """Layer names restart at `dense` in every test (as after keras.backend.clear_session()), and the
    weights are drawn from a fixed seed."""
    keras.clear_session()
    ember.manual_seed(0)
    yield
