"""torch's implementation choices (foreach, fused, capturable, differentiable): every optimizer's signature and
param-group keys equal torch's, the construction errors are torch's, and the choices change no number."""
import copy
import inspect

import numpy as np
import pytest
import torch

import ember
from helpers import raises_as_torch

ALL = ["SGD", "Adam", "AdamW", "NAdam", "RAdam", "Adamax", "RMSprop", "Adagrad", "Adadelta", "ASGD", "Rprop",
       "LBFGS", "SparseAdam", "Adafactor", "Muon"]
WITH_FLAGS = ALL[:11]   # the ones that take foreach and differentiable
FUSED = ["SGD", "Adam", "AdamW", "Adagrad"]
CAPTURABLE = ["Adam", "AdamW", "NAdam", "RAdam", "Adamax", "RMSprop", "Adadelta", "ASGD", "Rprop"]


def _params(lib):
    return [lib.zeros(2, 3, requires_grad=True)]   # 2-D, for Muon


@pytest.mark.parametrize("name", ALL)
def test_signature_equals_torch(name):
    def described(cls):
        return [(p.name, p.kind, p.default) for p in inspect.signature(cls).parameters.values()]
    assert described(getattr(ember.optim, name)) == described(getattr(torch.optim, name))


@pytest.mark.parametrize("name", ALL)
def test_param_group_keys_equal_torch(name):
    ours = getattr(ember.optim, name)(_params(ember)).param_groups[0]
    theirs = getattr(torch.optim, name)(_params(torch)).param_groups[0]
    assert sorted(ours) == sorted(theirs)
    for key in ("foreach", "fused", "capturable", "differentiable"):
        if key in theirs:
            assert ours[key] == theirs[key], key


def test_flags_go_into_defaults_and_groups():
    opt = ember.optim.Adam(_params(ember), foreach=False, capturable=True, fused=None)
    assert (opt.defaults["foreach"], opt.defaults["capturable"], opt.defaults["fused"]) == (False, True, None)
    assert (opt.param_groups[0]["foreach"], opt.param_groups[0]["capturable"]) == (False, True)
    # torch's positional slots: RMSprop's capturable follows centered, ASGD's foreach follows weight_decay
    rms = ember.optim.RMSprop(_params(ember), 1e-2, 0.99, 1e-8, 0, 0, False, True, False, False)
    assert (rms.defaults["capturable"], rms.defaults["foreach"]) == (True, False)
    asgd = ember.optim.ASGD(_params(ember), 1e-2, 1e-4, 0.75, 1e6, 0, True, True)
    assert (asgd.defaults["foreach"], asgd.defaults["maximize"]) == (True, True)


def test_nanogpt_adamw_call():
    w = ember.zeros(4, 4, requires_grad=True)
    b = ember.zeros(4, requires_grad=True)
    groups = [{"params": [w], "weight_decay": 0.1}, {"params": [b], "weight_decay": 0.0}]
    opt = ember.optim.AdamW(groups, lr=6e-4, betas=(0.9, 0.95), fused=False)
    assert [g["fused"] for g in opt.param_groups] == [False, False]


@pytest.mark.parametrize("name", FUSED)
def test_fused_with_foreach_raises_as_torch(name):
    def call(lib):
        getattr(lib.optim, name)(_params(lib), fused=True, foreach=True)
    e = raises_as_torch(call, RuntimeError, "`fused` and `foreach` cannot be `True` together.")
    assert str(e).startswith(f"{name}: ") and "test_implementation_flags.py:" in str(e)


@pytest.mark.parametrize("name", FUSED)
def test_fused_with_differentiable_raises_as_torch(name):
    def call(lib):
        getattr(lib.optim, name)(_params(lib), fused=True, differentiable=True)
    e = raises_as_torch(call, RuntimeError, "`fused` does not support `differentiable`")
    assert str(e).startswith(f"{name}: ")


@pytest.mark.parametrize("name", WITH_FLAGS)
def test_differentiable_is_not_implemented(name):
    getattr(torch.optim, name)(_params(torch), differentiable=True)   # torch takes it
    with pytest.raises(NotImplementedError, match=rf"^{name}: differentiable=True .* not supported by Ember"):
        getattr(ember.optim, name)(_params(ember), differentiable=True)


def _flag_cases():
    cases = [(n, dict(foreach=True)) for n in WITH_FLAGS] + [(n, dict(foreach=False)) for n in WITH_FLAGS]
    cases += [(n, dict(fused=True)) for n in FUSED] + [(n, dict(fused=False, foreach=False)) for n in FUSED]
    return cases


KWARGS = {"SGD": dict(lr=0.05, momentum=0.9), "Adam": dict(lr=0.05, amsgrad=True), "AdamW": dict(lr=0.05),
          "NAdam": dict(lr=0.05), "RAdam": dict(lr=0.05), "Adamax": dict(lr=0.05),
          "RMSprop": dict(lr=0.01, centered=True, momentum=0.5), "Adagrad": dict(lr=0.1, lr_decay=0.01),
          "Adadelta": dict(lr=0.5), "ASGD": dict(lr=0.05, t0=1), "Rprop": dict(lr=0.05)}


def _three_steps(lib, name, flags, dtype):
    rng = np.random.default_rng(3)
    p0 = rng.standard_normal(50).astype(dtype)
    grads = [rng.standard_normal(50).astype(dtype) for _ in range(3)]
    p = lib.tensor(p0, requires_grad=True)
    opt = getattr(lib.optim, name)([p], **KWARGS[name], **flags)
    for g in grads:
        p.grad = lib.tensor(g)
        opt.step()
    out = p.detach().numpy().copy()
    assert not np.allclose(out, p0)   # the steps moved the parameter
    return out


# torch's foreach ASGD computes the next eta in float32 tensor arithmetic from the step tensor, its single-tensor
# ASGD in Python floats before rounding it to float32: the etas differ in their last bit, and float64 parameters
# ~1e-8 after 3 steps. Ember has the single-tensor path only; here it matches torch's default, not its foreach.
TORCH_PATHS_DIFFER = {("ASGD", "foreach", "float64")}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name,flags", _flag_cases(), ids=[f"{n}-{f}" for n, f in _flag_cases()])
def test_flags_change_no_number(name, flags, dtype):
    ours = _three_steps(ember, name, flags, dtype)
    np.testing.assert_array_equal(ours, _three_steps(ember, name, {}, dtype))   # Ember: bit for bit
    theirs = _three_steps(torch, name, flags, dtype)                            # torch's own kernel
    tol = dict(rtol=1e-12, atol=1e-14) if dtype == "float64" else dict(rtol=2e-6, atol=2e-6)
    if (name, *[k for k, v in flags.items() if v], dtype) in TORCH_PATHS_DIFFER:
        assert not np.allclose(theirs, _three_steps(torch, name, {}, dtype), **tol)   # still true of torch?
        theirs = _three_steps(torch, name, {}, dtype)
    np.testing.assert_allclose(ours, theirs, **tol)


@pytest.mark.parametrize("name", CAPTURABLE)
def test_capturable_on_cpu(name):
    # torch asserts at step() that capturable params are on CUDA (or another graph-capturing device); Ember's
    # steps keep the step count and lr on the parameter's device already, so it accepts capturable anywhere
    with pytest.raises(AssertionError, match="If capturable=True"):
        _three_steps(torch, name, dict(capturable=True), "float64")
    ours = _three_steps(ember, name, dict(capturable=True), "float64")
    np.testing.assert_array_equal(ours, _three_steps(ember, name, {}, "float64"))


OLD_KEYS = ["foreach", "fused", "capturable", "differentiable", "maximize", "decoupled_weight_decay"]


@pytest.mark.parametrize("name", WITH_FLAGS)
def test_loading_a_state_dict_without_the_flags(name):
    # an older state dict: its param groups lack the implementation choices (and maximize, and Adam's
    # decoupled_weight_decay); loading fills them in as torch's __setstate__ does, here into an optimizer built
    # with other values, so the filled-in values come from the load and not from the constructor
    flags = dict(foreach=False, maximize=True)
    if name in FUSED:
        flags["fused"] = True
        flags.pop("foreach")
    if name in CAPTURABLE:
        flags["capturable"] = True
    loaded = {}
    for lib in (torch, ember):
        make = getattr(lib.optim, name)
        source = make([lib.tensor([1.0, -2.0], dtype=lib.float64, requires_grad=True)], **KWARGS[name])
        source.param_groups[0]["params"][0].grad = lib.tensor([0.5, 0.25], dtype=lib.float64)
        source.step()
        sd = copy.deepcopy(source.state_dict())
        for key in OLD_KEYS:
            sd["param_groups"][0].pop(key, None)
        target = make([lib.tensor([1.0, -2.0], dtype=lib.float64, requires_grad=True)], **KWARGS[name], **flags)
        target.load_state_dict(sd)
        loaded[lib] = {k: v for k, v in target.param_groups[0].items() if k != "params"}
        if lib is ember:
            target.param_groups[0]["params"][0].grad = ember.tensor([0.5, 0.25], dtype=ember.float64)
            target.step()   # the filled-in group steps
    assert loaded[ember] == loaded[torch]


def test_loading_an_old_state_dict_resumes_identically():
    def run(steps, state=None, start=(1.0, -2.0)):
        p = ember.tensor(list(start), dtype=ember.float64, requires_grad=True)
        opt = ember.optim.AdamW([p], lr=0.1, weight_decay=0.1)
        if state is not None:
            opt.load_state_dict(state)
        for _ in range(steps):
            p.grad = p * p - 1
            opt.step()
        return p, opt

    full, _ = run(6)
    half, opt = run(3)
    sd = copy.deepcopy(opt.state_dict())
    for key in OLD_KEYS:
        del sd["param_groups"][0][key]
    resumed, opt2 = run(3, sd, start=half.tolist())
    assert resumed.tolist() == full.tolist()
    assert opt2.param_groups[0]["decoupled_weight_decay"] is True   # as torch's AdamW forces it
