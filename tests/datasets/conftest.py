"""``need(factory)``: build a dataset that comes from an installed package or system directory; skip with the
reason when it is absent on a user's machine, but fail when the CI environment variable is set (CI installs
everything with scripts/install_data.sh)."""
import os

import pytest

from ember.datasets import DatasetNotFoundError


@pytest.fixture
def need():
    def build(factory, *args, **kwargs):
        try:
            return factory(*args, **kwargs)
        except DatasetNotFoundError as e:
            if os.environ.get("CI"):
                pytest.fail(f"dataset missing on CI (scripts/install_data.sh should install it): {e}")
            pytest.skip(f"dataset not installed (run scripts/install_data.sh): {e}")
    return build
