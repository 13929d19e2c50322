"""ember.hann_window, hamming_window, blackman_window, bartlett_window, kaiser_window against torch."""
import numpy as np
import pytest
import torch

import ember
from helpers import raises_exactly

NAMES = ["hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"]


def _same(e, t, dtype):
    assert e.dtype.name == str(t.dtype).replace("torch.", "") and tuple(e.shape) == tuple(t.shape)
    tol = dict(atol=1e-6, rtol=1e-6) if dtype == "float32" else dict(atol=1e-12, rtol=1e-12)
    np.testing.assert_allclose(e.numpy(), t.numpy(), **tol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("n", [0, 1, 2, 3, 8, 33])
def test_windows_match_torch(name, n, dtype):
    for periodic in (True, False):
        e = getattr(ember, name)(n, periodic, dtype=getattr(ember, dtype))
        t = getattr(torch, name)(n, periodic, dtype=getattr(torch, dtype))
        _same(e, t, dtype)
    _same(getattr(ember, name)(n, dtype=getattr(ember, dtype)), getattr(torch, name)(n, dtype=getattr(torch, dtype)),
          dtype)   # periodic=True by default


def test_window_parameters_default_dtype_device_and_requires_grad():
    _same(ember.hamming_window(9, True, 0.6, 0.3), torch.hamming_window(9, True, 0.6, 0.3), "float32")
    _same(ember.kaiser_window(9, False, 3.5, dtype=ember.float64),
          torch.kaiser_window(9, False, 3.5, dtype=torch.float64), "float64")
    w = ember.hann_window(4, requires_grad=True)
    assert w.requires_grad and w.dtype is ember.float32 and w.tolist() == [0.0, 0.5, 1.0, 0.5]
    assert ember.blackman_window(4, device="meta").device == ember.device("meta")
    ember.set_default_dtype(ember.float64)
    try:
        assert ember.bartlett_window(3).dtype is ember.float64
    finally:
        ember.set_default_dtype(ember.float32)


@pytest.mark.parametrize("name", NAMES)
def test_windows_reject_bad_lengths_and_dtypes(name):
    fn = getattr(ember, name)
    with pytest.raises(RuntimeError, match="requires non-negative window_length"):
        getattr(torch, name)(-1)
    raises_exactly(lambda: fn(-1), RuntimeError, f"{name}: requires non-negative window_length, got window_length=-1")
    raises_exactly(lambda: fn(3, dtype=ember.int64), RuntimeError, f"{name}: expects floating point dtypes, got: int64")
    raises_exactly(lambda: fn(3.0), TypeError, f"{name}: window_length must be an int, got float 3.0")


@pytest.mark.parametrize("module", ["ember.ops.windows", "ember._device", "ember._print"])
def test_docstring_examples(module):
    import doctest
    import importlib
    try:
        result = doctest.testmod(importlib.import_module(module), extraglobs={"ember": ember})
    finally:
        ember.set_printoptions(profile="default")
        ember.set_default_device(None)
    assert result.attempted > 0 and result.failed == 0
