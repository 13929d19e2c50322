"""Typed primitive attributes (issue 9): every primitive declares `attrs` (name -> accepted type), and
every call the framework makes passes `check_attrs`.

The check is off the hot path: the `AttrCheck` dispatch mode runs it on every call (these tests), and
`Primitive.apply` runs it when EMBER_DEBUG is set.
"""
import numpy as np
import pytest

import ember
import ember.linalg  # noqa: F401  (load every primitive family)
import ember.nn as nn
import ember.nn.functional as F
import ember.ops.layers  # noqa: F401
import ember.ops.optim_prims  # noqa: F401
from ember import _debug
from ember.autograd.dispatch import AttrCheck, check_attrs
from ember.autograd.function import Primitive
from ember.ops import primitives as P

from .test_side_doors import CASES as SIDE_DOOR_CASES, _f, _i, _run
from .test_step_replay import _step, case


def _primitives():
    def walk(c):
        for s in c.__subclasses__():
            yield s
            yield from walk(s)
    return sorted({c for c in walk(Primitive) if c.__module__.startswith("ember.")}, key=lambda c: c.__name__)


def test_every_primitive_declares_typed_attrs():
    prims = _primitives()
    assert len(prims) >= 93
    for c in prims:
        assert isinstance(c.__dict__.get("attrs"), dict), f"{c.__name__} declares no `attrs` dict"
        for name, types in c.attrs.items():
            types = types if isinstance(types, tuple) else (types,)
            assert types and all(isinstance(t, type) for t in types), (c.__name__, name, types)


def test_class_level_defaults_are_declared():
    """An optional attribute (a class-level default such as Assign's `key = None`) is declared too, and its
    default passes the declaration."""
    for c in _primitives():
        for name, types in c.attrs.items():
            if name in c.__dict__:
                assert isinstance(c.__dict__[name], types), (c.__name__, name)
    for c, names in [(P.Clamp, ()), (ember.ops.inplace.Assign, ("key", "op", "value")),
                     (ember.ops.optim_prims.AdamStep, ("amsgrad", "decoupled", "maximize", "weight_decay")),
                     (ember.ops.random_prims.Random, ("words", "low", "span", "threshold", "bits", "value")),
                     (P.Rounding, ("decimals",)), (ember.ops.linalg.Qr, ("mode",)),
                     (ember.ops.linalg.Svd, ("full_matrices",)), (ember.ops.layers.MaxPoolIndex, ("pads",)),
                     (ember.ops.layers.LayerNormGrad, ("with_w", "with_b"))]:
        assert set(names) <= set(c.attrs), (c.__name__, names)


@pytest.mark.parametrize("kind", ["mlp", "gpt"])
def test_a_logged_training_step_passes_the_check(kind):
    model, opt, sched, x, y = case(kind)
    with AttrCheck() as m:
        for _ in range(2):
            _step(model, opt, sched, x, y)
    assert m.calls > 20


@pytest.mark.parametrize("name", sorted(SIDE_DOOR_CASES))
def test_side_door_cases_pass_the_check(name):
    fn, make = SIDE_DOOR_CASES[name]
    with AttrCheck() as m:
        _run(fn, make(np.random.default_rng(0)))
    assert m.calls > 0


def _optim_step(cls, **kw):
    def fn(w):
        w = nn.Parameter(w.detach())
        opt = cls([w], lr=0.1, **kw)
        for _ in range(2):
            opt.zero_grad()
            (w * w).sum().backward()
            opt.step()
        return w.detach()
    return fn


def _setitem(a, i):
    b = a.detach().clone()
    b[i] = 0.5
    b[a.detach() > 0] += 1
    b[1:3, [0, 2]] = b[0, :2]
    return b


# Ops the side-door cases do not cover (math, shape ops, indexing, convolution, linalg, random, optimizers).
EXTRA = {
    "math": (lambda a, b: (a + b * 2 - a / (b.abs() + 1), a.exp().log1p(), a ** 2, a.pow(b.abs()),
                           a.sum(), a.sum(1, keepdim=True), a.mean((0, 1)), a.var(0), a.amax(1), a.cumsum(0),
                           a.cumprod(1), a.prod(0), a.clamp(min=0), a.clamp(-1, 1.5), a.tanh(), a.sigmoid(),
                           ember.atan2(a, b), a.asinh(), ember.logsumexp(a, 1), a.to(ember.float64),
                           ember.isclose(a, b, rtol=0, atol=1)),   # user ints reach float attributes as floats
             lambda r: [_f(r, 4, 3), _f(r, 4, 3)]),
    "shape": (lambda a: (a.reshape(3, 4), a.t(), a.permute(1, 0), a.unsqueeze(0).expand(2, 4, 3), a.flip(0),
                         ember.roll(a, 1, 0), ember.cat([a, a], 1), ember.stack([a, a]), F.pad(a, (1, 2)),
                         a.split(2), a.chunk(3, 1), a.transpose(0, 1).contiguous()),
              lambda r: [_f(r, 4, 3)]),
    "index": (lambda a, i: (a[i], a[[0, 2]], a[a > 0], a[..., 1], a[None, 1:3], a[i, 1:], a[:, [0, 1]]),
              lambda r: [_f(r, 4, 3), _i(r, 4, 5)]),
    "setitem": (_setitem, lambda r: [_f(r, 4, 3), _i(r, 4, 2)]),
    "conv": (lambda x, w: (F.conv2d(x, w, padding=1), F.conv2d(x, w, stride=2, dilation=1),
                           F.conv_transpose2d(x, w.transpose(0, 1)), F.conv1d(x[:, :, 0], w[:, :, 0])),
             lambda r: [_f(r, 2, 3, 6, 6), _f(r, 4, 3, 3, 3)]),
    "losses": (lambda x, t, y: (F.cross_entropy(x, t, ignore_index=1), F.nll_loss(x.log_softmax(1), t),
                                F.mse_loss(x, y), F.l1_loss(x, y), F.smooth_l1_loss(x, y),
                                F.binary_cross_entropy_with_logits(x, y.sigmoid())),
               lambda r: [_f(r, 5, 4), _i(r, 4, 5), _f(r, 5, 4)]),
    "layers": (lambda x, w, b, i: (F.layer_norm(x, (4,), w, b, eps=0), F.gelu(x), F.gelu(x, approximate="tanh"),
                                   F.softmax(x, -1), F.log_softmax(x, 0), F.embedding(i, x, padding_idx=0),
                                   F.linear(x, x, b), F.relu(x), F.silu(x)),
               lambda r: [_f(r, 4, 4), _f(r, 4), _f(r, 4), _i(r, 4, 3)]),
    "linalg": (lambda a, b: (ember.linalg.qr(a @ a.mT + 4 * ember.eye(4)), ember.linalg.svd(a),
                             ember.linalg.eigh(a @ a.mT), ember.linalg.solve(a @ a.mT + 4 * ember.eye(4), b),
                             ember.linalg.inv(a @ a.mT + 4 * ember.eye(4)), ember.linalg.slogdet(a),
                             ember.linalg.cholesky(a @ a.mT + 4 * ember.eye(4)), ember.linalg.qr(a, mode="complete"),
                             ember.linalg.svd(a, full_matrices=True)),
               lambda r: [_f(r, 4, 4), _f(r, 4, 2)]),
    "random": (lambda a: (F.dropout(a, 0.3), ember.randn(3, 2), ember.rand(4), ember.randint(0, 5, (3,)),
                          ember.randperm(5), ember.bernoulli(a.sigmoid()), ember.multinomial(a.softmax(1), 2)),
               lambda r: [_f(r, 4, 3)]),
    "sgd": (_optim_step(ember.optim.SGD, momentum=0.9, nesterov=True, weight_decay=1), lambda r: [_f(r, 5)]),
    "adam": (_optim_step(ember.optim.Adam, amsgrad=True, weight_decay=0), lambda r: [_f(r, 5)]),
    "adamw": (_optim_step(ember.optim.AdamW, betas=(0, 0.99), eps=0), lambda r: [_f(r, 5)]),
    "rmsprop": (_optim_step(ember.optim.RMSprop, momentum=0.5, centered=True), lambda r: [_f(r, 5)]),
    "adagrad": (_optim_step(ember.optim.Adagrad, lr_decay=0.1), lambda r: [_f(r, 5)]),
    "adadelta": (_optim_step(ember.optim.Adadelta, weight_decay=0.1), lambda r: [_f(r, 5)]),
    "nadam": (_optim_step(ember.optim.NAdam, weight_decay=1, decoupled_weight_decay=True), lambda r: [_f(r, 5)]),
    "radam": (_optim_step(ember.optim.RAdam, betas=(0, 0.9), weight_decay=1), lambda r: [_f(r, 5)]),
    "adamax": (_optim_step(ember.optim.Adamax, eps=0, weight_decay=1), lambda r: [_f(r, 5)]),
    "asgd": (_optim_step(ember.optim.ASGD, lambd=1, alpha=1, t0=0, weight_decay=1), lambda r: [_f(r, 5)]),
    "rprop": (_optim_step(ember.optim.Rprop, etas=(0.5, 2), step_sizes=(0, 1)), lambda r: [_f(r, 5)]),
}


@pytest.mark.parametrize("name", sorted(EXTRA))
def test_more_ops_pass_the_check(name):
    fn, make = EXTRA[name]
    ember.manual_seed(0)
    with AttrCheck() as m:
        _run(fn, make(np.random.default_rng(0)))
    assert m.calls > 0


def test_the_infer_table_passes_the_check():
    from ops.test_infer import CASES
    for name, (prim, _, attrs) in CASES.items():
        check_attrs(prim, attrs)


def test_a_wrong_type_names_the_primitive_the_attribute_and_both_types():
    with pytest.raises(TypeError, match=r"Sum: attribute 'axis' expects tuple of ints or NoneType, got int"):
        check_attrs(P.Sum, {"axis": 0, "keepdims": False})
    with pytest.raises(TypeError, match=r"Cast: attribute 'dtype' expects dtype, got type"):
        check_attrs(P.Cast, {"dtype": np.float32})


def test_an_unknown_name_names_the_primitive_and_the_allowed_names():
    with pytest.raises(TypeError, match=r"Sum: unknown attribute 'dim'; allowed attributes: axis, keepdims"):
        check_attrs(P.Sum, {"dim": (0,), "keepdims": False})
    with pytest.raises(TypeError, match=r"Neg: unknown attribute 'alpha'; allowed attributes: none"):
        check_attrs(P.Neg, {"alpha": 1.0})


def test_an_unhashable_value_is_refused():
    with pytest.raises(TypeError, match=r"Pad: attributes must be hashable"):
        check_attrs(P.Pad, {"pads": ((0, 1), {2, 3}), "value": 0})   # a set inside the tuple
    with pytest.raises(TypeError, match=r"Reshape: attribute 'shape' expects tuple of ints, got list"):
        check_attrs(P.Reshape, {"shape": [2, 3]})


def test_tuples_of_ints_are_checked_element_by_element():
    import numpy as np
    check_attrs(P.Reshape, {"shape": (2, -1)})
    check_attrs(P.Sum, {"axis": (), "keepdims": False})
    for bad in ((2, 3.0), (2, None), (np.int64(2), 3), ((2,), 3)):
        with pytest.raises(TypeError, match=r"Reshape: attribute 'shape' expects tuple of ints, got tuple"):
            check_attrs(P.Reshape, {"shape": bad})


def test_the_mode_refuses_a_bad_call_before_it_runs():
    x = ember.ones(3)
    with AttrCheck(), pytest.raises(TypeError, match="Sum: attribute 'axis'"):
        P.Sum.apply(x, axis=0, keepdims=False)


def test_ember_debug_checks_in_apply(monkeypatch):
    x = ember.ones(3)
    assert P.Sum.apply(x, axis=0, keepdims=False).shape == ()   # default: no check on the hot path
    monkeypatch.setattr(_debug, "LEVEL", 1)
    monkeypatch.setattr(_debug, "op", lambda *a: None)   # no stderr lines
    with pytest.raises(TypeError, match="Sum: attribute 'axis' expects tuple of ints or NoneType, got int"):
        P.Sum.apply(x, axis=0, keepdims=False)
    with pytest.raises(TypeError, match="Sum: unknown attribute 'dim'"):
        P.Sum.apply(x, dim=(0,), keepdims=False)
    assert P.Sum.apply(x, axis=(0,), keepdims=False).item() == 3.0
