"""The one comparison helper: run the same function on torch and on Ember, compare everything.

    check_op(lambda lib, a, b: lib.add(a, b), (3, 1), (4,))

`fn(lib, *tensors)` is called once with `lib=torch` and torch tensors, once with `lib=ember` and
Ember tensors built from the same NumPy data, for each dtype in `dtypes`. The helper compares, for
every output: type/structure, shape, dtype (Ember's dtype name == torch's), values; then runs
backward with one random upstream gradient per float output and compares the gradient of every
float input (None in torch must be None or all-zero in Ember).

Every call also checks dtypes in ALL four float dtypes (float16, bfloat16, float32, float64): each
one not in `dtypes` gets a cheap dtype pass on the same inputs, which compares only the type, shape
and dtype of every output with torch's (no values), then runs Ember's backward (torch's is not
needed: torch's gradient always has its input's dtype) and checks that every input gradient has its
input's dtype and shape. Where torch itself raises for a dtype (a CPU kernel torch lacks in
float16/bfloat16), the dtype pass for that dtype is skipped: Ember may compute or raise there.
`check_dtype=False` turns off every dtype check, these passes included.

Inputs (`*inputs`), each one of:
- a shape tuple, e.g. `(2, 3)` or `()`: random floats of the dtype under test, uniform in
  [low, high) (or in [0.5, 2) with `positive=True`); requires grad when `grad` is true;
- a NumPy float array: cast to the dtype under test (values fixed by the test), requires grad;
- a NumPy integer/bool array: passed as an integer/bool tensor of that dtype on both sides;
- `Const(x)`: `x` passed unchanged (a Python scalar, list, None, a string ...);
- `NoGrad(shape_or_array)`: like the above, but never requires grad;
- anything else (int, float, bool, str, list, None): passed unchanged.

Devices: Ember's tensors are made on `device` (default `DEVICE`, "cpu"; `pytest --check-op-device=cuda`
sets it, see conftest.py), results are brought back with `.cpu()` for the comparison, and every Ember
output tensor must be on that device. The Makefile's fake-CUDA pass runs the op, layer, loss, optimizer,
autograd and distributions suites this way on the strict fake device (ember/backends/fake_cuda.py); on a
machine with CuPy and a GPU the same option runs them on the GPU. A test whose function makes tensors of
its own passes `device=x.device` (torch's tensors are on the CPU, so the same line runs on both sides).

Import it from any test: `from helpers import check_op` (tests/ is on sys.path via conftest.py).
"""
from __future__ import annotations

import numpy as np
import torch

import ember

__all__ = ["check_op", "Const", "NoGrad", "to_numpy", "torch_dtype", "ember_dtype", "DEFAULT_TOL", "DEVICE"]

# the device Ember's side of check_op runs on unless a call names one (conftest.py: --check-op-device)
DEVICE = "cpu"

FLOATS = ("float16", "bfloat16", "float32", "float64")

# (atol, rtol) for values and for gradients, by dtype
DEFAULT_TOL = {
    "float16": (2e-3, 2e-3),
    "bfloat16": (2e-2, 2e-2),
    "float32": (1e-5, 1e-5),
    "float64": (1e-10, 1e-9),
}
DEFAULT_GRAD_TOL = {
    "float16": (1e-2, 1e-2),
    "bfloat16": (5e-2, 5e-2),
    "float32": (1e-4, 1e-4),
    "float64": (1e-9, 1e-8),
}


class Const:
    """An argument passed to both libraries unchanged."""
    def __init__(self, value):
        self.value = value


class NoGrad:
    """A tensor argument (shape or array) that never requires grad."""
    def __init__(self, value):
        self.value = value


def _name(dt) -> str:
    if isinstance(dt, torch.dtype):
        return str(dt).replace("torch.", "")
    if isinstance(dt, ember.dtype):
        return dt.name
    return str(dt)


def torch_dtype(dt) -> torch.dtype:
    return getattr(torch, _name(dt))


def ember_dtype(dt) -> ember.dtype:
    return getattr(ember, _name(dt))


def to_numpy(t) -> np.ndarray:
    """Any torch/Ember tensor (any dtype, grad or not) as a NumPy array (float64 for float dtypes)."""
    if isinstance(t, torch.Tensor):
        t = t.detach()
        if t.dtype.is_floating_point:
            return t.to(torch.float64).numpy()
        return t.numpy()
    if isinstance(t, ember.Tensor):
        a = np.asarray(t.detach().cpu()._data)
        return a.astype(np.float64) if t.dtype.is_floating_point else a
    return np.asarray(t)


def _make_pair(arr: np.ndarray, dtype_name: str, requires_grad: bool, device="cpu"):
    """(torch tensor, ember tensor on `device`) holding the same values; float arrays are cast to dtype_name."""
    if arr.dtype.kind == "f":
        tt = torch.tensor(np.asarray(arr, dtype=np.float64, order="C")).to(torch_dtype(dtype_name))
        # the same rounded values on both sides: read torch's rounding back
        et = ember.tensor(tt.to(torch.float64).numpy()).to(ember_dtype(dtype_name)).to(device)
        if requires_grad:
            tt.requires_grad_(True)
            et.requires_grad_(True)
        return tt, et
    arr = np.asarray(arr, order="C")
    return torch.from_numpy(arr.copy()), ember.tensor(arr.copy(), device=device)


def _build(inputs, dtype_name, grad, rng, low, high, positive, device="cpu"):
    t_args, e_args, pairs = [], [], []
    for x in inputs:
        wants_grad = grad
        if isinstance(x, NoGrad):
            x, wants_grad = x.value, False
        if isinstance(x, Const):
            t_args.append(x.value)
            e_args.append(x.value)
            continue
        if isinstance(x, tuple) and all(isinstance(s, int) for s in x):
            lo, hi = (0.5, 2.0) if positive else (low, high)
            x = rng.uniform(lo, hi, size=x)
            x = np.asarray(x, dtype=np.float64)
        if isinstance(x, np.ndarray):
            rg = wants_grad and x.dtype.kind == "f"
            tt, et = _make_pair(x, dtype_name, rg, device)
            t_args.append(tt)
            e_args.append(et)
            if rg:
                pairs.append((tt, et))
            continue
        t_args.append(x)
        e_args.append(x)
    return t_args, e_args, pairs


def _flatten(out, path="out"):
    """[(path, leaf)] for tensors/scalars nested in tuples/lists/namedtuples."""
    if isinstance(out, (tuple, list)):
        res = []
        for i, o in enumerate(out):
            res += _flatten(o, f"{path}[{i}]")
        return res
    return [(path, out)]


def _tol(table, dtype_name, atol, rtol):
    a, r = table.get(dtype_name, (0, 0))
    return max(a, atol or 0), max(r, rtol or 0)


def _compare(where, tv, ev, table, atol, rtol, check_dtype=True, device="cpu"):
    """Compare one output; the tolerance is that of torch's output dtype (see _tol)."""
    if isinstance(tv, torch.Tensor):
        atol, rtol = _tol(table, _name(tv.dtype), atol, rtol)
        assert isinstance(ev, ember.Tensor), f"{where}: torch gives a Tensor, ember gives {type(ev).__name__}"
        assert ev.device.type == ember.device(device).type, f"{where}: on {ev.device}, the inputs on {device}"
        assert tuple(tv.shape) == tuple(ev.shape), f"{where}: shape {tuple(ev.shape)} != torch's {tuple(tv.shape)}"
        if check_dtype:
            assert _name(tv.dtype) == ev.dtype.name, f"{where}: dtype {ev.dtype.name} != torch's {_name(tv.dtype)}"
        a, b = to_numpy(ev), to_numpy(tv)
        if tv.dtype.is_floating_point:
            np.testing.assert_allclose(a, b, atol=atol, rtol=rtol, equal_nan=True, err_msg=where)
        else:
            np.testing.assert_array_equal(a, b, err_msg=where)
    elif isinstance(tv, float):
        atol, rtol = _tol(table, "float64", atol, rtol)
        assert isinstance(ev, (float, int)) and not isinstance(ev, ember.Tensor), f"{where}: {ev!r} vs {tv!r}"
        np.testing.assert_allclose(ev, tv, atol=atol, rtol=rtol, err_msg=where)
    else:
        assert ev == tv, f"{where}: ember gives {ev!r}, torch gives {tv!r}"


def _dtype_pass(fn, inputs, dname, grad, seed, low, high, positive, device):
    """One run in a dtype whose values the call does not compare: dtypes and shapes only (see the module doc)."""
    rng = np.random.default_rng(seed)
    t_args, e_args, pairs = _build(inputs, dname, grad, rng, low, high, positive, device)
    try:
        t_out = fn(torch, *t_args)
    except (RuntimeError, NotImplementedError, TypeError):
        return   # torch has no kernel for this dtype: nothing to compare with
    e_out = fn(ember, *e_args)
    t_flat, e_flat = _flatten(t_out), _flatten(e_out)
    assert len(t_flat) == len(e_flat), f"[{dname}, dtype pass] ember returns {len(e_flat)} outputs, torch {len(t_flat)}"
    e_outs, e_gs = [], []
    for (where, tv), (_, ev) in zip(t_flat, e_flat):
        if not isinstance(tv, torch.Tensor):
            continue
        where = f"[{dname}, dtype pass] {where}"
        assert isinstance(ev, ember.Tensor), f"{where}: torch gives a Tensor, ember gives {type(ev).__name__}"
        assert tuple(tv.shape) == tuple(ev.shape), f"{where}: shape {tuple(ev.shape)} != torch's {tuple(tv.shape)}"
        assert _name(tv.dtype) == ev.dtype.name, f"{where}: dtype {ev.dtype.name} != torch's {_name(tv.dtype)}"
        if tv.requires_grad and tv.dtype.is_floating_point and ev.requires_grad:
            e_outs.append(ev)
            e_gs.append(_make_pair(rng.standard_normal(tuple(tv.shape)), _name(tv.dtype), False, device)[1])
    if not (grad and pairs and e_outs):
        return
    ember.autograd.backward(e_outs, e_gs)
    for k, (_, et) in enumerate(pairs):
        where = f"[{dname}, dtype pass] grad of input {k}"
        if et.grad is not None:
            assert et.grad.dtype == et.dtype, f"{where}: dtype {et.grad.dtype.name} != the input's {et.dtype.name}"
            assert tuple(et.grad.shape) == tuple(et.shape), \
                f"{where}: shape {tuple(et.grad.shape)} != the input's {tuple(et.shape)}"


def check_op(fn, *inputs, dtypes=("float32", "float64"), atol=None, rtol=None, grad=True,
             grad_atol=None, grad_rtol=None, positive=False, low=-2.0, high=2.0, seed=0,
             check_dtype=True, device=None):
    """Run `fn(lib, *args)` on torch and on Ember; compare outputs and input gradients.

    dtypes: the float dtypes (names or dtype objects) random/float inputs take, one full run each;
        the other float dtypes get a dtype pass (dtypes and shapes only, see the module doc).
    atol/rtol, grad_atol/grad_rtol: override the per-dtype defaults (`DEFAULT_TOL`) upward only
        (the tolerance used is the max of the default and the given one).
    grad: compute and compare gradients of every float input (False for non-differentiable ops).
    positive: random inputs in [0.5, 2) instead of [low, high) (log, sqrt, pow ...).
    device: where Ember's tensors are made (default `DEVICE`); outputs must be there too.
    Returns the (torch_out, ember_out) of the last dtype, for extra asserts.
    """
    device = DEVICE if device is None else device
    if device != "cpu" and not ember.cuda.is_available():
        import pytest
        pytest.skip(f"check_op on {device}: no CUDA device (set EMBER_FAKE_CUDA=1 for the fake one)")
    result = None
    for dt in dtypes:
        dname = _name(dt)
        rng = np.random.default_rng(seed)
        t_args, e_args, pairs = _build(inputs, dname, grad, rng, low, high, positive, device)
        t_out = fn(torch, *t_args)
        e_out = fn(ember, *e_args)
        t_flat, e_flat = _flatten(t_out), _flatten(e_out)
        assert len(t_flat) == len(e_flat), \
            f"[{dname}] ember returns {len(e_flat)} outputs, torch {len(t_flat)}"
        for (where, tv), (_, ev) in zip(t_flat, e_flat):
            _compare(f"[{dname}] {where}", tv, ev, DEFAULT_TOL, atol, rtol, check_dtype, device)
        result = (t_out, e_out)
        if not (grad and pairs):
            continue
        # backward of one random upstream gradient per differentiable output
        t_outs, e_outs, t_gs, e_gs = [], [], [], []
        for (_, tv), (where, ev) in zip(t_flat, e_flat):
            if isinstance(tv, torch.Tensor) and tv.requires_grad and tv.dtype.is_floating_point:
                assert ev.requires_grad, f"[{dname}] {where}: torch's output requires grad, ember's does not"
                g = np.asarray(rng.standard_normal(tuple(tv.shape)))
                tg, eg = _make_pair(g, dname, False, device)
                t_outs.append(tv)
                e_outs.append(ev)
                t_gs.append(tg)
                e_gs.append(eg)
        if not t_outs:
            continue
        torch.autograd.backward(t_outs, t_gs)
        ember.autograd.backward(e_outs, e_gs)
        for k, (tt, et) in enumerate(pairs):
            where = f"[{dname}] grad of input {k}"
            if tt.grad is None:
                assert et.grad is None or not to_numpy(et.grad).any(), f"{where}: torch has no gradient"
                continue
            if et.grad is None and tt.grad.numel() == 0:
                continue    # an empty input: torch's empty gradient and None say the same
            assert et.grad is not None, f"{where}: ember computed no gradient"
            _compare(where, tt.grad, et.grad, DEFAULT_GRAD_TOL, grad_atol, grad_rtol, check_dtype, device)
    if check_dtype:
        done = {_name(dt) for dt in dtypes}
        for dname in FLOATS:
            if dname not in done:
                _dtype_pass(fn, inputs, dname, grad, seed, low, high, positive, device)
    return result


def raises_exactly(call, exc, message, located=True):
    """`call()` raises exactly `exc` (not a subclass) whose text is `message`, then, with `located`,
    the user's line as `(at file.py:N)`; `located=False` checks only that the text starts with it."""
    import re
    import pytest
    with pytest.raises(Exception) as e:
        call()
    assert type(e.value) is exc, f"{type(e.value).__name__}: {e.value}"
    text = str(e.value)
    if located:
        assert re.fullmatch(re.escape(message) + r" \(at [^()]+\.py:\d+\)", text), text
    else:
        assert text.startswith(message), text


def raises_as_torch(call, exc, fragment, torch_fragment=None):
    """`call(torch)` and `call(ember)` both raise `exc` with `fragment` in the message (`torch_fragment`
    where torch words it differently); returns Ember's exception, for the caller to check that it also
    names the user's line."""
    import re
    import pytest
    with pytest.raises(exc, match=re.escape(torch_fragment or fragment)):
        call(torch)
    with pytest.raises(exc, match=re.escape(fragment)) as e:
        call(ember)
    return e.value


def assert_generated_is_current(script: str, path: str) -> None:
    """The file at `path` (relative to the repository root) equals what scripts/<script>.py's `render()`
    makes now: generated files (docs/primitives.md, ember/_tensor_bound.pyi) are kept current."""
    import importlib
    import os
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, os.path.join(root, "scripts"))
    try:
        module = importlib.import_module(script)
    finally:
        sys.path.pop(0)
    with open(os.path.join(root, path)) as f:
        on_disk = f.read()
    assert module.render() == on_disk, f"{path} is out of date: run `python scripts/{script}.py`"


def with_specials(shape, seed=3) -> np.ndarray:
    """Random float64 values with a NaN, a +inf and a -inf at fixed places (one each, far apart): the
    input of the NaN/inf checks against torch."""
    x = np.random.default_rng(seed).standard_normal(shape)
    flat = x.reshape(-1)
    flat[1], flat[flat.size // 2], flat[-2] = np.nan, np.inf, -np.inf
    return x
