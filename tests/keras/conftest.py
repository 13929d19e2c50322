import threading

import pytest

import ember
from ember import keras

try:
    from tqdm import tqdm
except ImportError:   # pragma: no cover - tqdm is a dependency of the progress bars only
    tqdm = None
else:
    # Progress bars with a thread lock and no monitor thread: tqdm's default lock includes a multiprocessing
    # semaphore, shared with forked children, and mutmut (scripts/mutation.py) runs each mutant in a fork of
    # one process and kills the slow ones: a child killed while holding the semaphore left every later
    # child that draws a bar waiting on it forever.
    tqdm.set_lock(threading.RLock())
    tqdm.monitor_interval = 0


@pytest.fixture(autouse=True)
def _fresh_names_and_seed():
    """Layer names restart at `dense` in every test (as after keras.backend.clear_session()), and the
    weights are drawn from a fixed seed."""
    keras.clear_session()
    ember.manual_seed(0)
    yield
