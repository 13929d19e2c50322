"""Every computation on tensor data is a primitive call (issue 9): no side doors.

Each case runs an op, and the gradients of its float inputs through `ember.autograd.grad`, under a
`PrimitiveLog`. Two checks:

1. replaying the log gives the eager outputs and gradients bit for bit;
2. replaying it with *other* input values (new data, same shapes) gives what the op computes eagerly on
   those values. A value computed outside a primitive (raw `_data` arithmetic, `Tensor._make` of a
   NumPy result, a data-valued attribute) is frozen into the log as a constant, so this check fails.
"""
import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.autograd.dispatch import attrs_key
from ember.utils.dispatch import DispatchMode, PrimitiveLog


def _f(rng, *shape):
    return ember.tensor(rng.standard_normal(shape).astype(np.float32))


def _i(rng, hi, *shape):
    return ember.tensor(rng.integers(0, hi, shape).astype(np.int64))


def _outs(o):
    if isinstance(o, (tuple, list)):
        return [t for x in o for t in _outs(x)]
    return [o] if isinstance(o, ember.Tensor) else []


def _run(fn, inputs):
    """Outputs and gradients (w.r.t. the float inputs) of fn on inputs, eagerly."""
    xs = [x.detach().requires_grad_() if x.dtype.is_floating_point else x for x in inputs]
    outs = _outs(fn(*xs))
    diff = [x for x in xs if x.requires_grad]
    loss = [o.sum() for o in outs if o.requires_grad]
    grads = list(ember.autograd.grad(sum(loss), diff, allow_unused=True)) if loss else []
    return xs, outs, [g for g in grads if g is not None]


def _flat(vs):
    for v in vs:
        if isinstance(v, (tuple, list)):
            yield from _flat(v)
        else:
            yield v


def _bits(a):
    return np.ascontiguousarray(np.asarray(a)).tobytes()


def check_no_side_doors(fn, make):
    """make(seed) -> list of input tensors (same shapes and dtypes for every seed)."""
    inputs = make(0)
    log = PrimitiveLog()
    with log:
        xs, outs, grads = _run(fn, inputs)
    assert outs, "the op returned no tensor"
    for c in log.calls:   # attributes are static, hashable values; data-valued things are inputs
        attrs_key(c.attrs)
        assert not any(isinstance(v, (np.ndarray, ember.Tensor)) for v in _flat(c.attrs.values())), c
    rep = log.replay()
    for t in outs + grads:
        assert _bits(rep[t]) == _bits(t._data), "replay differs from the eager run"
    # the same log, replayed on other input values
    new = make(1)
    for x, n in zip(xs, new):
        k = id(x._data)
        assert k in log._initial, "an input that no primitive read: the op used it outside the log"
        log._initial[k] = n._data.copy()
    rep = log.replay()
    _, outs2, grads2 = _run(fn, new)
    assert len(outs2) == len(outs) and len(grads2) == len(grads)
    for t, e in zip(outs + grads, outs2 + grads2):
        r = rep[t]
        assert r.shape == e.shape and _bits(r) == _bits(e._data), \
            "a value was computed outside a primitive: the replay on new inputs kept the old one"


def _m(rng, *shape):   # distinct values: ties would make argmax-like results depend on the order
    return ember.tensor(rng.permutation(int(np.prod(shape))).reshape(shape).astype(np.float32) / 7 - 2)


CASES = {
    # comparisons, logic, predicates
    "eq": (lambda a, b: (a == b, a != b, a < b, a <= b, a > b, a >= b),
           lambda r: [_i(r, 3, 4, 3).float(), _i(r, 3, 4, 3).float()]),
    "logical": (lambda a, b: (ember.logical_and(a > 0, b > 0), ember.logical_or(a > 0, b > 0),
                              ember.logical_xor(a > 0, b > 0), ember.logical_not(a > 0)),
                lambda r: [_f(r, 5), _f(r, 5)]),
    "bitwise": (lambda a, b: (a & b, a | b, a ^ b, ~a), lambda r: [_i(r, 9, 6), _i(r, 9, 6)]),
    "isnan": (lambda a: (ember.isnan(a.log()), ember.isinf(1 / (a - a.round())), ember.isfinite(a.log())),
              lambda r: [_f(r, 7)]),
    "isclose": (lambda a, b: ember.isclose(a, b, atol=0.5), lambda r: [_f(r, 6), _f(r, 6)]),
    # rounding and integer division
    "rounding": (lambda a: (a.floor(), a.ceil(), a.trunc(), a.round(), a.sign(), a.frac(),
                            ember.round(a, decimals=1)), lambda r: [_f(r, 8) * 3]),
    "int_div": (lambda a, b: (ember.floor_divide(a, b), a % b, ember.fmod(a, b),
                              ember.div(a, b, rounding_mode="trunc")),
                lambda r: [_i(r, 20, 6) - 10, _i(r, 4, 6) + 1]),
    "float_mod": (lambda a, b: (a % b, ember.fmod(a, b), ember.floor_divide(a, b)),
                  lambda r: [_f(r, 6) * 5, _f(r, 6).abs() + 0.5]),
    "add_alpha": (lambda a, b: ember.add(a, b, alpha=3), lambda r: [_f(r, 4), _f(r, 4)]),
    # clamp, min/max, where
    "clamp": (lambda a: (a.clamp(-0.5, 0.5), a.clamp(min=0.1)), lambda r: [_f(r, 9)]),
    "clamp_tensor": (lambda a, lo, hi: ember.clamp(a, lo, hi), lambda r: [_f(r, 9), _f(r, 9) - 1, _f(r, 9) + 1]),
    "minimum_int": (lambda a, b: (ember.minimum(a, b), ember.maximum(a, b)),
                    lambda r: [_i(r, 9, 6), _i(r, 9, 6)]),
    "where": (lambda c, a, b: ember.where(c > 0, a, b), lambda r: [_f(r, 6), _f(r, 6), _f(r, 6)]),
    # reductions
    "all_any": (lambda a: (ember.all(a > 0), ember.any(a > 0, 1), a.bool().all(0)), lambda r: [_f(r, 3, 4)]),
    "argmax": (lambda a: (a.argmax(), a.argmin(1), a.argmax(0, keepdim=True)), lambda r: [_m(r, 4, 5)]),
    "max_dim": (lambda a: (a.max(1), a.min(0, keepdim=True)), lambda r: [_m(r, 4, 5)]),
    "max_int": (lambda a: (a.max(), a.min()), lambda r: [_i(r, 50, 7)]),
    "prod": (lambda a: (a.prod(), a.prod(1)), lambda r: [ember.where(_f(r, 3, 4) > 1, 0.0, _f(r, 3, 4))]),
    # sorting and data-dependent shapes
    "sort": (lambda a: (a.sort(1), a.sort(0, descending=True), a.argsort(1)), lambda r: [_m(r, 3, 5)]),
    "topk": (lambda a: (a.topk(2, 1), a.topk(2, 0, largest=False), a.kthvalue(2, 1)), lambda r: [_m(r, 3, 5)]),
    "nonzero": (lambda a: ((a > 0).nonzero(), ember.where(a > 0)), lambda r: [_f(r, 3, 4)]),
    # (_m: the same number of positive elements for every seed, so that shapes stay the same)
    "masked_select": (lambda a: (a.masked_select(a > 0), a[a > 0]), lambda r: [_m(r, 3, 4)]),
    "unique": (lambda a: ember.unique(a, return_inverse=True, return_counts=True), lambda r: [_i(r, 5, 9)]),
    "searchsorted": (lambda s, v: (ember.searchsorted(s.sort().values, v),
                                   ember.bucketize(v, s.sort().values, right=True)),
                     lambda r: [_f(r, 6), _f(r, 4)]),
    # indexing with index tensors
    "gather": (lambda a, i: a.gather(1, i), lambda r: [_f(r, 3, 4), _i(r, 4, 3, 2)]),
    "scatter": (lambda a, s, i: (a.scatter(1, i, s), a.scatter_add(1, i, s)),
                lambda r: [_f(r, 3, 4), _f(r, 3, 4), ember.tensor(r.permutation(4)[None].repeat(3, 0))]),
    "getitem": (lambda a, i: (a[i], a[:, i], a[i, i]), lambda r: [_f(r, 4, 4), _i(r, 4, 5)]),
    "index_put": (lambda a, v, i: (a.index_put((i,), v), a.index_put((i,), v, accumulate=True)),
                  lambda r: [_f(r, 5), _f(r, 3), _i(r, 5, 3)]),
    "index_select": (lambda a, i: (a.index_select(0, i), a.take(i)), lambda r: [_f(r, 4, 3), _i(r, 4, 5)]),
    "masked_fill": (lambda a, b: (a.masked_fill(b > 0, 2.0), a.masked_scatter(b > 0, a * 3)),
                    lambda r: [_f(r, 3, 4), _m(r, 3, 4)]),
    "repeat_interleave": (lambda a, n: (a.repeat_interleave(2, 0), a.repeat_interleave(n, 0)),
                          lambda r: [_f(r, 3, 2), ember.tensor([1, 0, 2])]),
    "diag": (lambda a, v: (ember.diag(v, 1), ember.diag(a, -1), a.diagonal(1), a.trace(), a.tril(), a.triu(1)),
             lambda r: [_f(r, 4, 4), _f(r, 3)]),
    "contiguous": (lambda a: (a.t().contiguous(), a.view(ember.int32)), lambda r: [_f(r, 3, 4)]),
    # fused layer kernels
    "softmax": (lambda a: (a.softmax(1), a.log_softmax(0)), lambda r: [_f(r, 3, 5)]),
    "gelu": (lambda a: F.gelu(a), lambda r: [_f(r, 4, 6)]),
    "layer_norm": (lambda a, w, b: F.layer_norm(a, (6,), w, b), lambda r: [_f(r, 4, 6), _f(r, 6), _f(r, 6)]),
    "layer_norm_plain": (lambda a: F.layer_norm(a, (6,)), lambda r: [_f(r, 4, 6)]),
    "embedding": (lambda w, i: (F.embedding(i, w), F.embedding(i, w, padding_idx=1)),
                  lambda r: [_f(r, 5, 3), _i(r, 5, 2, 4)]),
    "one_hot": (lambda i: F.one_hot(i, 5), lambda r: [_i(r, 5, 6)]),
    # losses
    "cross_entropy": (lambda x, t: (F.cross_entropy(x, t), F.cross_entropy(x, t, ignore_index=2),
                                    F.cross_entropy(x, t, label_smoothing=0.1, ignore_index=0),
                                    F.nll_loss(x.log_softmax(1), t, reduction="sum")),
                      lambda r: [_f(r, 6, 4), _i(r, 4, 6)]),
    # the class weights take no gradient (torch has none): detached, as torch requires
    "cross_entropy_weight": (lambda x, t, w: (F.cross_entropy(x, t, weight=w.detach().abs(), ignore_index=1),
                                              F.cross_entropy(x, t, weight=w.detach().abs(), label_smoothing=0.2)),
                             lambda r: [_f(r, 6, 4), _i(r, 4, 6), _f(r, 4)]),
    "multi_margin": (lambda x, t: (F.multi_margin_loss(x, t), F.multi_margin_loss(x, t, p=2)),
                     lambda r: [_f(r, 5, 4), _i(r, 4, 5)]),
    "bce": (lambda x, t: F.binary_cross_entropy(x.sigmoid(), t.sigmoid()), lambda r: [_f(r, 6), _f(r, 6)]),
    # pooling
    "max_pool": (lambda x: (F.max_pool2d(x, 2), F.max_pool2d(x, 3, 2, 1, return_indices=True)),
                 lambda r: [_m(r, 2, 2, 5, 5)]),
    "avg_pool": (lambda x: (F.avg_pool2d(x, 3, 2, 1, count_include_pad=False), F.avg_pool2d(x, 2, ceil_mode=True),
                            F.avg_pool2d(x, 3, 2, 1, ceil_mode=True)),
                 lambda r: [_f(r, 2, 2, 5, 5)]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_no_side_doors(name):
    fn, make = CASES[name]
    check_no_side_doors(fn, lambda seed: make(np.random.default_rng(seed)))


def test_a_dispatch_mode_sees_non_differentiable_primitives():
    class Seen(DispatchMode):
        def __init__(self):
            self.calls = []

        def __ember_dispatch__(self, prim, inputs, attrs):
            self.calls.append((prim.__name__, prim.differentiable, attrs.get("op")))
            return prim.apply(*inputs, **attrs)

    x = ember.randn(3, 4, requires_grad=True)
    with Seen() as s:
        x < 0
        x.argmax(1)
        x.isnan()
        x.sort(1)
        ember.equal(x, x)
        ember.allclose(x, x)
    assert ("Compare", False, "lt") in s.calls
    assert ("ArgReduce", False, "argmax") in s.calls
    assert ("Predicate", False, "isnan") in s.calls
    assert ("ArgSort", False, None) in s.calls
    assert ("AnyAll", False, "all") in s.calls and ("Compare", False, "isclose") in s.calls


@pytest.mark.parametrize("op", ["gelu", "softmax", "log_softmax", "layer_norm"])
def test_fused_kernels_double_backward(op):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 5))
    fns = {"gelu": lambda lib, x: (lib.nn.functional.gelu(x) * x).sum(),
           "softmax": lambda lib, x: (x.softmax(1) * x).sum(),
           "log_softmax": lambda lib, x: (x.log_softmax(1) * x.cos()).sum(),
           "layer_norm": lambda lib, x: (lib.nn.functional.layer_norm(x, (5,)) * x.sin()).sum()}
    res = []
    for lib, mk in ((torch, lambda v: torch.tensor(v, requires_grad=True)),
                    (ember, lambda v: ember.tensor(v, requires_grad=True))):
        x = mk(a)
        g, = lib.autograd.grad(fns[op](lib, x), x, create_graph=True)
        gg, = lib.autograd.grad((g * g).sum(), x)
        res.append((g.detach().numpy(), gg.numpy()))
    np.testing.assert_allclose(res[1][0], res[0][0], rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(res[1][1], res[0][1], rtol=1e-6, atol=1e-8)


NEW = {"Compare", "Logic", "Rounding", "Predicate", "DivMod", "AnyAll", "ArgReduce", "ArgSort",
       "SearchSorted", "BitCast", "MaxPoolIndex", "GeluGrad", "SoftmaxGrad", "LayerNormGrad"}


def test_infer_of_the_new_primitives_matches_their_outputs():
    """`infer` (shape and NumPy dtype from shapes and dtypes alone) agrees with the real output."""
    class Spec:
        def __init__(self, t):
            self.shape, self.dtype = tuple(t.shape), t._data.dtype

    seen = set()

    class Check(DispatchMode):
        def __ember_dispatch__(self, prim, inputs, attrs):
            out = prim.apply(*inputs, **attrs)
            if prim.__name__ in NEW:
                node = prim.__new__(prim)
                node.__dict__.update(attrs)
                shape, dtype = node.infer(*[Spec(t) for t in inputs])
                assert (tuple(shape), np.dtype(dtype)) == (tuple(out.shape), out._data.dtype), prim.__name__
                seen.add(prim.__name__)
            return out

    with Check():
        for name in sorted(CASES):
            fn, make = CASES[name]
            _run(fn, make(np.random.default_rng(0)))
        x = ember.randn(4, 6, requires_grad=True)
        F.layer_norm(x, (6,)).sum().backward()   # LayerNormGrad
    assert seen == NEW, NEW - seen
