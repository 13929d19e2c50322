"""ember.testing.assert_close against torch.testing.assert_close: the same verdict, exception type and
message for the same inputs; make_tensor's dtypes, ranges and flags."""
import re

import numpy as np
import pytest
import torch

import ember

NAN, INF = float("nan"), float("inf")

# each case builds its two arguments from a library (torch or ember) and gives assert_close's keywords
CASES = {
    "close": (lambda L: (L.tensor([1.0, 2.0]), L.tensor([1.0, 2.0 + 1e-7])), {}),
    "float32 values": (lambda L: (L.tensor([1.0, 2.0, 3.0]), L.tensor([1.0, 2.5, 3.0])), {}),
    "2-d index": (lambda L: (L.tensor([[1.0, 2.0], [3.0, 4.0]]), L.tensor([[1.0, 2.0], [3.0, 4.5]])), {}),
    "float64 values": (lambda L: (L.tensor([1.0, 2.0], dtype=L.float64), L.tensor([1.0, 2.0001], dtype=L.float64)), {}),
    "float16": (lambda L: (L.tensor([1.0, 2.0], dtype=L.float16), L.tensor([1.0, 2.01], dtype=L.float16)), {}),
    "bfloat16 within": (lambda L: (L.tensor([1.0, 2.0], dtype=L.bfloat16), L.tensor([1.0, 2.015], dtype=L.bfloat16)), {}),
    "bfloat16 out": (lambda L: (L.tensor([1.0, 2.0], dtype=L.bfloat16), L.tensor([1.0, 2.1], dtype=L.bfloat16)), {}),
    "shape": (lambda L: (L.tensor([1.0, 2.0]), L.tensor([1.0, 2.0, 3.0])), {}),
    "dtype": (lambda L: (L.tensor([1.0, 2.0]), L.tensor([1.0, 2.0], dtype=L.float64)), {}),
    "dtype unchecked": (lambda L: (L.tensor([1.0, 2.0]), L.tensor([1.0, 2.0], dtype=L.float64)), {"check_dtype": False}),
    "ints": (lambda L: (L.tensor([1, 2]), L.tensor([1, 3])), {}),
    "int extremes": (lambda L: (L.tensor([-128], dtype=L.int8), L.tensor([127], dtype=L.int8)), {}),
    "bools": (lambda L: (L.tensor([True]), L.tensor([False])), {}),
    "nan": (lambda L: (L.tensor([NAN, 1.0]), L.tensor([NAN, 1.0])), {}),
    "nan equal": (lambda L: (L.tensor([NAN, 1.0]), L.tensor([NAN, 1.0])), {"equal_nan": True}),
    "nan and miss": (lambda L: (L.tensor([1.0, NAN, 5.0]), L.tensor([2.0, 1.0, 5.0])), {}),
    "inf": (lambda L: (L.tensor([INF, -INF]), L.tensor([INF, -INF])), {}),
    "inf sign": (lambda L: (L.tensor([INF]), L.tensor([-INF])), {}),
    "zero expected": (lambda L: (L.tensor([0.5]), L.tensor([0.0])), {}),
    "0-d": (lambda L: (L.tensor(2.0), L.tensor(2.5)), {}),
    "given tolerances": (lambda L: (L.tensor([1.0, 2.0]), L.tensor([1.0, 2.1])), {"rtol": 0.1, "atol": 0.0}),
    "given tolerances miss": (lambda L: (L.tensor([1.0, 2.0]), L.tensor([1.0, 2.5])), {"rtol": 0.1, "atol": 0.01}),
    "only rtol": (lambda L: (L.tensor([1.0]), L.tensor([1.0])), {"rtol": 0.1}),
    "only atol": (lambda L: (L.tensor([1.0]), L.tensor([1.0])), {"atol": 0.1}),
    "python floats": (lambda L: (1.0, 1.1), {}),
    "python ints": (lambda L: (2, 3), {}),
    "int and float": (lambda L: (2, 2.0), {}),
    "sequence item": (lambda L: ([L.tensor([1.0]), 2], [L.tensor([1.0]), 3]), {}),
    "sequence length": (lambda L: ([1, 2], [1, 2, 3]), {}),
    "nested": (lambda L: ({"a": [L.tensor([1.0]), (L.tensor([2.0]),)]}, {"a": [L.tensor([1.0]), (L.tensor([2.5]),)]}), {}),
    "mapping keys": (lambda L: ({"a": L.tensor([1.0])}, {"b": L.tensor([1.0])}), {}),
    "numpy pair": (lambda L: (np.array([1.0]), np.array([1.1])), {}),
    "tensor and numpy": (lambda L: (L.tensor([1.0]), np.array([1.0], dtype=np.float32)), {}),
    "tensor and float": (lambda L: (L.tensor([1.0]), 1.0), {}),
    "requires grad": (lambda L: (L.tensor([1.0]), L.tensor([1.0]).requires_grad_()), {}),
    "custom msg": (lambda L: (L.tensor([1.0]), L.tensor([2.0])), {"msg": "custom"}),
    "msg function": (lambda L: (L.tensor([1.0]), L.tensor([2.0])), {"msg": lambda m: m.splitlines()[0] + "!"}),
    "empty": (lambda L: (L.zeros(0, 3), L.zeros(0, 3)), {}),
    "stride": (lambda L: (L.zeros(2, 3), L.zeros(3, 2).T), {"check_stride": True}),
}


def _outcome(lib, case):
    build, kw = CASES[case]
    a, e = build(lib)
    try:
        lib.testing.assert_close(a, e, **kw)
    except Exception as exc:   # noqa: BLE001: the outcome is the comparison's subject
        text = re.sub(r"torch\.Size\(\[([^\]]*)\]\)", lambda m: repr(tuple(int(v) for v in m[1].split(",") if v)), str(exc))
        return type(exc), text.replace("torch.", "ember.")
    return None


@pytest.mark.parametrize("case", list(CASES))
def test_assert_close_as_torch(case):
    want, got = _outcome(torch, case), _outcome(ember, case)
    assert got == want


def test_shape_message_names_the_shapes():
    with pytest.raises(AssertionError, match=r"^The values for attribute 'shape' do not match: \(2,\) != \(3,\)\.$"):
        ember.testing.assert_close(ember.ones(2), ember.ones(3))


def test_device_is_checked():
    import ember.backends.fake_cuda  # noqa: F401: the fake device needs no GPU
    a = ember.ones(2)
    b = ember.ones(2, device="meta")
    with pytest.raises(AssertionError, match="The values for attribute 'device' do not match"):
        ember.testing.assert_close(a, b)


def test_assert_allclose_promotes_and_takes_numbers():
    ember.testing.assert_allclose(ember.tensor([1.0, NAN]), [1.0, NAN])
    with pytest.raises(AssertionError, match="Tensor-likes are not close"):
        ember.testing.assert_allclose(ember.tensor([1.0]), [1.5])


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64", "int8", "uint8", "bool"])
def test_make_tensor(dtype):
    dt = getattr(ember, dtype)
    ember.manual_seed(0)
    t = ember.testing.make_tensor(40, 50, dtype=dt, device="cpu")
    assert t.shape == (40, 50) and t.dtype == dt and not t.requires_grad
    v = t.float().numpy()
    if dtype == "bool":
        assert 0 < v.mean() < 1
    elif dtype == "uint8":
        assert v.min() >= 0 and v.max() <= 9 and len(np.unique(v)) == 10
    elif dt.is_floating_point:
        assert -9 <= v.min() and v.max() <= 9 and v.std() > 3
    else:
        assert v.min() == -9 and v.max() == 9
    lo = ember.testing.make_tensor((3, 4), dtype=dt, device="cpu", low=1, high=2, requires_grad=dt.is_floating_point,
                                   noncontiguous=True, exclude_zero=True) if dtype != "bool" else None
    if lo is not None:
        assert lo.shape == (3, 4) and not lo.is_contiguous() and (lo.float().detach().numpy() != 0).all()
        assert lo.requires_grad == dt.is_floating_point
    with pytest.raises(ValueError, match="`low` must be less than or equal to `high`"):
        ember.testing.make_tensor(2, dtype=ember.float32, device="cpu", low=3, high=1)


def test_docstrings_run():
    import doctest
    result = doctest.testmod(ember.testing, extraglobs={"ember": ember}, report=True)
    assert result.attempted > 0 and result.failed == 0
