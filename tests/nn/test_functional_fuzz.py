"""Seeded fuzz of nn.functional against torch: random legal-or-not configurations (strides, paddings,
dilations, groups, ceil_mode, reductions, ignore_index, align_corners, ...) of each function.

Each case draws its arguments from the seed; then either torch raises and Ember raises too, naming the
function, or both return and `check_op` compares the outputs and the input gradients (float64). Bounded
by the number of cases, never by time. tests/test_fuzz.py does the same for the tensor ops.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from helpers import Const, NoGrad, check_op

SEED = 20261124
CASES = 25
# torch's float64 hardsigmoid/hardswish gradients use 1/6 rounded to float32 (relative error 3e-8)
GRAD_RTOL = {"hardsigmoid": 1e-7, "hardswish": 1e-7}


def _pick(rng, *options):
    return options[int(rng.integers(len(options)))]


def _spatial(rng, nd, lo=1, hi=7):
    return tuple(int(rng.integers(lo, hi + 1)) for _ in range(nd))


# --------------------------------------------------------------- one generator per function
# each returns (fn(L, *args), inputs for check_op): shapes are random float64 inputs, NoGrad(array) fixed
def _conv(rng, nd, transpose=False):
    g = _pick(rng, 1, 1, 2)
    cin, cout = g * int(rng.integers(1, 3)), g * int(rng.integers(1, 3))
    k = _spatial(rng, nd, 1, 3)
    stride, dil = int(rng.integers(1, 4)), int(rng.integers(1, 3))
    x = (int(rng.integers(1, 3)), cin) + _spatial(rng, nd, 1, 7)
    bias = bool(rng.integers(2))
    if transpose:
        pad = int(rng.integers(0, 3))
        opad = int(rng.integers(0, max(stride, dil)))
        w = (cin, cout // g) + k
        name = f"conv_transpose{nd}d"
        kw = dict(stride=stride, padding=pad, output_padding=opad, groups=g, dilation=dil)
    else:
        pad = _pick(rng, 0, 1, 2, "same", "valid")
        if pad == "same" and rng.integers(3) == 0:
            stride = 1
        w = (cout, cin // g) + k
        name = f"conv{nd}d"
        kw = dict(stride=stride, padding=pad, dilation=dil, groups=g)
    if bias:
        return (lambda L, a, b, c: getattr(L.nn.functional, name)(a, b, c, **kw)), [x, w, (cout,)], name, kw
    return (lambda L, a, b: getattr(L.nn.functional, name)(a, b, **kw)), [x, w], name, kw


def _max_pool(rng, nd):
    k = int(rng.integers(1, 4))
    kw = dict(kernel_size=k, stride=_pick(rng, None, 1, 2, 3), padding=int(rng.integers(0, 2)),
              dilation=int(rng.integers(1, 3)), ceil_mode=bool(rng.integers(2)))
    ret = bool(rng.integers(2))
    x = (int(rng.integers(1, 3)), int(rng.integers(1, 3))) + _spatial(rng, nd, 1, 8)
    name = f"max_pool{nd}d"
    if ret:   # indices too (the values' gradient is compared; the indices as ints)
        return (lambda L, a: getattr(L.nn.functional, name)(a, return_indices=True, **kw)), [x], name, kw
    return (lambda L, a: getattr(L.nn.functional, name)(a, **kw)), [x], name, kw


def _avg_pool(rng, nd):
    k = int(rng.integers(1, 4))
    kw = dict(kernel_size=k, stride=_pick(rng, None, 1, 2, 3), padding=int(rng.integers(0, 2)),
              ceil_mode=bool(rng.integers(2)), count_include_pad=bool(rng.integers(2)))
    if nd >= 2 and rng.integers(3) == 0:
        kw["divisor_override"] = int(rng.integers(1, 5))
    x = (int(rng.integers(1, 3)), int(rng.integers(1, 3))) + _spatial(rng, nd, 1, 8)
    name = f"avg_pool{nd}d"
    return (lambda L, a: getattr(L.nn.functional, name)(a, **kw)), [x], name, kw


def _adaptive(rng, nd):
    out = _pick(rng, *([int(rng.integers(1, 6))] + ([_spatial(rng, nd, 1, 5)] if nd > 1 else [])))
    x = (int(rng.integers(1, 3)), 2) + _spatial(rng, nd, 1, 8)
    name = f"adaptive_avg_pool{nd}d"
    return (lambda L, a: getattr(L.nn.functional, name)(a, out)), [x], name, {"output_size": out}


def _adaptive_max(rng):
    nd = int(rng.integers(1, 4))
    out = _pick(rng, int(rng.integers(0, 9)), tuple(_pick(rng, None, int(rng.integers(1, 9))) if nd > 1
                                                     else int(rng.integers(1, 9)) for _ in range(nd)))
    x = ((int(rng.integers(1, 3)), 2) if rng.integers(3) else (2,)) + _spatial(rng, nd, 1, 7)
    name = f"adaptive_max_pool{nd}d"
    if out == 0:   # torch's backward of an empty output fails: values only
        x = NoGrad(np.random.default_rng(0).standard_normal(x))
    return (lambda L, a: getattr(L.nn.functional, name)(a, out, return_indices=True)), [x], name, {"output_size": out}


def _lp_pool(rng):
    nd = int(rng.integers(1, 4))
    kw = dict(norm_type=_pick(rng, 1, 2, 3, float("inf")), kernel_size=int(rng.integers(1, 4)),
              stride=_pick(rng, None, 1, 2, 3), ceil_mode=bool(rng.integers(2)))
    x = ((int(rng.integers(1, 3)), 2) if rng.integers(3) else (2,)) + _spatial(rng, nd, 1, 6)
    name = f"lp_pool{nd}d"
    return (lambda L, a: getattr(L.nn.functional, name)(a, **kw)), [x], name, kw


def _max_unpool(rng):
    # legal max pools only (their errors are max_pool's): padding <= k // 2, every input dim >= k; the
    # input size either the default output size (any input index lands in it) or given as output_size
    nd = int(rng.integers(1, 4))
    k, s = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    p = int(rng.integers(0, k // 2 + 1))
    # a default output size can be 0 when k - 2p < 1 (torch's own backward fails there): give output_size
    same = bool(rng.integers(2)) or k - 2 * p < 1
    if same:
        spatial = tuple(max(n, k) for n in _spatial(rng, nd, 1, 6))
    else:
        spatial = tuple((o - 1) * s + k - 2 * p for o in _spatial(rng, nd, 1, 3))   # >= 1 as k - 2p >= 1
    kw = dict(kernel_size=k, stride=s, padding=p)
    name = f"max_unpool{nd}d"

    def fn(L, a):
        F = L.nn.functional
        out, idx = getattr(F, f"max_pool{nd}d")(a, return_indices=True, **kw)
        return getattr(F, name)(out, idx, output_size=a.shape if same else None, **kw)
    return fn, [(int(rng.integers(1, 3)), 2) + spatial], name, dict(kw, same=same)


def _interpolate(rng):
    nd = int(rng.integers(1, 3))
    # not 'bicubic' (tested in tests/nn/test_vision.py): where a scale keeps a dim's size (1.5 of 1) torch's
    # bicubic backward copies the gradient, not its forward's (a torch bug), and the fuzz would compare with it
    mode = _pick(rng, "nearest", "nearest-exact", "area", "linear" if nd == 1 else "bilinear")
    kw = {"mode": mode}
    if rng.integers(2) or mode == "area":   # area by a scale < 1 can pool to size 0: torch's backward fails
        kw["size"] = _pick(rng, int(rng.integers(1, 9)), _spatial(rng, nd, 1, 9))
    else:
        kw["scale_factor"] = _pick(rng, 0.5, 1.5, 2, 3, 0.75)
    if mode in ("linear", "bilinear", "bicubic"):
        kw["align_corners"] = _pick(rng, None, False, True)
    x = (1, 2) + _spatial(rng, nd, 1, 6)
    return (lambda L, a: L.nn.functional.interpolate(a, **kw)), [x], "interpolate", kw


def _pad(rng):
    nd = int(rng.integers(1, 3))
    mode = _pick(rng, "constant", "reflect", "replicate", "circular")
    widths = tuple(int(rng.integers(-1 if mode == "constant" else 0, 4)) for _ in range(2 * nd))
    x = (1, 2) + _spatial(rng, nd, 1, 5)
    kw = {"pad": widths, "mode": mode}
    if mode == "constant":
        kw["value"] = _pick(rng, 0.0, 1.5)
    return (lambda L, a: L.nn.functional.pad(a, **kw)), [x], "pad", kw


def _targets(rng, n, c, extra=(), ignore=None):
    t = rng.integers(0, c, (n,) + extra)
    if ignore is not None and t.size:
        t.flat[0] = ignore
    return NoGrad(t.astype(np.int64))


def _cross_entropy(rng):
    n, c = int(rng.integers(1, 5)), int(rng.integers(1, 5))
    extra = _pick(rng, (), (), (3,))
    red = _pick(rng, "mean", "sum", "none")
    kw = {"reduction": red, "label_smoothing": _pick(rng, 0.0, 0.0, 0.2)}
    inputs = [(n, c) + extra]
    if rng.integers(3) == 0:   # probabilities as targets
        p = rng.random((n, c) + extra)
        inputs.append(NoGrad(p / p.sum(1, keepdims=True)))
    else:
        ig = _pick(rng, None, -100, 0)
        if ig is not None:
            kw["ignore_index"] = ig
        inputs.append(_targets(rng, n, c, extra, ignore=ig))
    if rng.integers(2):
        inputs.append(NoGrad(rng.uniform(0.5, 2.0, c)))
        return (lambda L, a, t, w: L.nn.functional.cross_entropy(a, t, weight=w, **kw)), inputs, "cross_entropy", kw
    return (lambda L, a, t: L.nn.functional.cross_entropy(a, t, **kw)), inputs, "cross_entropy", kw


def _nll(rng):
    n, c = int(rng.integers(1, 5)), int(rng.integers(1, 5))
    ig = _pick(rng, -100, 0, 1)
    kw = {"reduction": _pick(rng, "mean", "sum", "none"), "ignore_index": ig}
    inputs = [(n, c), _targets(rng, n, c, ignore=ig)]
    if rng.integers(2):
        inputs.append(NoGrad(rng.uniform(0.5, 2.0, c)))
        return (lambda L, a, t, w: L.nn.functional.nll_loss(a, t, weight=w, **kw)), inputs, "nll_loss", kw
    return (lambda L, a, t: L.nn.functional.nll_loss(a, t, **kw)), inputs, "nll_loss", kw


def _bce(rng):
    shape = _pick(rng, (3,), (2, 3), (0, 2))
    red = _pick(rng, "mean", "sum", "none")
    y = NoGrad(rng.random(shape))
    if rng.integers(2):
        pw = rng.uniform(0.5, 2.0, shape[-1:]) if rng.integers(2) else None
        w = rng.uniform(0.5, 2.0, shape) if rng.integers(2) else None
        kw = {"reduction": red}

        def fn(L, a, t):
            extra = {}
            if pw is not None:
                extra["pos_weight"] = L.tensor(pw, dtype=a.dtype, device=a.device)
            if w is not None:
                extra["weight"] = L.tensor(w, dtype=a.dtype, device=a.device)
            return L.nn.functional.binary_cross_entropy_with_logits(a, t, **extra, **kw)
        return fn, [shape, y], "binary_cross_entropy_with_logits", dict(kw, pos_weight=pw is not None,
                                                                        weight=w is not None)
    x = tuple(shape)   # logits: the probabilities come from a sigmoid
    kw = {"reduction": red}
    return (lambda L, a, t: L.nn.functional.binary_cross_entropy(L.sigmoid(a), t, **kw)), [x, y], \
        "binary_cross_entropy", kw


def _regression(rng):
    shape = _pick(rng, (3,), (2, 3), (0,), ())
    name = _pick(rng, "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss")
    kw = {"reduction": _pick(rng, "mean", "sum", "none")}
    if name == "smooth_l1_loss":
        kw["beta"] = _pick(rng, 1.0, 0.5, 0.0)
    if name == "huber_loss":
        kw["delta"] = _pick(rng, 1.0, 0.5, 2.0)
    other = _pick(rng, shape, shape, (1,) if shape else ())
    return (lambda L, a, b: getattr(L.nn.functional, name)(a, b, **kw)), [shape, other], name, kw


def _kl(rng):
    shape = _pick(rng, (2, 3), (4,))
    kw = {"reduction": _pick(rng, "mean", "sum", "none", "batchmean"), "log_target": bool(rng.integers(2))}
    return (lambda L, a, b: L.nn.functional.kl_div(L.log_softmax(a, -1), L.log_softmax(b, -1) if kw["log_target"]
                                                   else L.softmax(b, -1), **kw)), [shape, shape], "kl_div", kw


def _softmaxes(rng):
    shape = _pick(rng, (3,), (2, 3), (2, 0, 3), ())
    name = _pick(rng, "softmax", "log_softmax", "softmin")
    dim = int(rng.integers(-len(shape) - 1, len(shape) + 1)) if shape else _pick(rng, 0, -1, 1)
    return (lambda L, a: getattr(L.nn.functional, name)(a, dim=dim)), [shape], name, {"dim": dim}


def _norms(rng):
    name = _pick(rng, "layer_norm", "group_norm", "batch_norm")
    if name == "layer_norm":
        x = (2, 3, 4)
        ns = _pick(rng, (4,), (3, 4), (5,))
        affine = bool(rng.integers(2))
        ins = [x] + ([ns, ns] if affine else [])
        kw = {"normalized_shape": ns, "eps": _pick(rng, 1e-5, 1e-2)}
        if affine:
            return (lambda L, a, w, b: L.nn.functional.layer_norm(a, ns, w, b, eps=kw["eps"])), ins, name, kw
        return (lambda L, a: L.nn.functional.layer_norm(a, ns, eps=kw["eps"])), ins, name, kw
    if name == "group_norm":
        c = _pick(rng, 4, 6)
        groups = _pick(rng, 1, 2, 3, 4)
        kw = {"num_groups": groups}
        return (lambda L, a, w, b: L.nn.functional.group_norm(a, groups, w, b)), [(2, c, 3), (c,), (c,)], name, kw
    training = bool(rng.integers(2))
    n = _pick(rng, 1, 2, 4)
    kw = {"training": training, "momentum": _pick(rng, 0.1, 0.5), "eps": 1e-5}
    mean, var = rng.standard_normal(3), rng.uniform(0.5, 2.0, 3)
    return (lambda L, a, w, b: L.nn.functional.batch_norm(
        a, L.tensor(mean, device=a.device), L.tensor(var, device=a.device), w, b, **kw)), \
        [(n, 3, 2), (3,), (3,)], name, kw


def _activations(rng):
    shape = (2, 4)
    name, kw = _pick(rng, ("leaky_relu", {"negative_slope": 0.2}), ("elu", {"alpha": 0.7}), ("celu", {"alpha": 1.5}),
                     ("gelu", {"approximate": "tanh"}), ("gelu", {}), ("hardtanh", {"min_val": -0.5, "max_val": 0.8}),
                     ("softplus", {"beta": 2.0, "threshold": 1.0}), ("threshold", {"threshold": 0.3, "value": -1.0}),
                     ("glu", {"dim": int(rng.integers(-2, 2))}), ("hardshrink", {"lambd": 0.4}),
                     ("softshrink", {"lambd": 0.4}), ("normalize", {"p": _pick(rng, 1.0, 2.0, 3.0), "dim": 0}),
                     ("relu6", {}), ("selu", {}), ("mish", {}), ("hardswish", {}), ("hardsigmoid", {}),
                     ("logsigmoid", {}), ("tanhshrink", {}), ("softsign", {}), ("silu", {}))
    return (lambda L, a: getattr(L.nn.functional, name)(a, **kw)), [shape], name, kw


def _distances(rng):
    name = _pick(rng, "cosine_similarity", "pairwise_distance")
    if name == "cosine_similarity":
        kw = {"dim": int(rng.integers(-2, 2)), "eps": 1e-8}
    else:
        kw = {"p": _pick(rng, 1.0, 2.0, 3.0), "keepdim": bool(rng.integers(2))}
    other = _pick(rng, (3, 4), (1, 4))
    return (lambda L, a, b: getattr(L.nn.functional, name)(a, b, **kw)), [(3, 4), other], name, kw


def _attention(rng):
    L_, S, E = int(rng.integers(1, 5)), int(rng.integers(1, 5)), 4
    causal = bool(rng.integers(2))
    mask = None if causal or rng.integers(2) else rng.random((L_, S)) < 0.7
    kw = {"is_causal": causal, "scale": _pick(rng, None, 0.3)}
    if mask is not None:
        mask[:, 0] = True
        return (lambda L, q, k, v: L.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=L.tensor(mask, device=q.device), **kw)), \
            [(2, L_, E), (2, S, E), (2, S, 3)], "scaled_dot_product_attention", dict(kw, mask=True)
    return (lambda L, q, k, v: L.nn.functional.scaled_dot_product_attention(q, k, v, **kw)), \
        [(2, L_, E), (2, S, E), (2, S, 3)], "scaled_dot_product_attention", kw


def _embedding(rng):
    num, dim = 5, 3
    idx = rng.integers(0, num, _pick(rng, (4,), (2, 3)))
    kw = {"padding_idx": _pick(rng, None, 0, -1)}
    return (lambda L, w: L.nn.functional.embedding(L.tensor(idx, device=w.device), w, **kw)), [(num, dim)], "embedding", kw


def _unfold(rng):
    k = _pick(rng, 1, 2, (2, 3))
    kw = dict(kernel_size=k, dilation=_pick(rng, 1, 2), padding=_pick(rng, 0, 1), stride=_pick(rng, 1, 2))
    return (lambda L, a: L.nn.functional.unfold(a, **kw)), [(1, 2) + _spatial(rng, 2, 2, 6)], "unfold", kw


GENERATORS = {
    "conv1d": lambda r: _conv(r, 1), "conv2d": lambda r: _conv(r, 2),
    "conv_transpose1d": lambda r: _conv(r, 1, True), "conv_transpose2d": lambda r: _conv(r, 2, True),
    "max_pool1d": lambda r: _max_pool(r, 1), "max_pool2d": lambda r: _max_pool(r, 2),
    "avg_pool1d": lambda r: _avg_pool(r, 1), "avg_pool2d": lambda r: _avg_pool(r, 2),
    "adaptive_avg_pool1d": lambda r: _adaptive(r, 1), "adaptive_avg_pool2d": lambda r: _adaptive(r, 2),
    "max_pool3d": lambda r: _max_pool(r, 3), "avg_pool3d": lambda r: _avg_pool(r, 3),
    "adaptive_avg_pool3d": lambda r: _adaptive(r, 3), "adaptive_max_pool": _adaptive_max, "lp_pool": _lp_pool,
    "max_unpool": _max_unpool,
    "interpolate": _interpolate, "pad": _pad, "cross_entropy": _cross_entropy, "nll_loss": _nll, "bce": _bce,
    "regression_losses": _regression, "kl_div": _kl, "softmaxes": _softmaxes, "norms": _norms,
    "activations": _activations, "distances": _distances, "attention": _attention, "embedding": _embedding,
    "unfold": _unfold,
}


def _args(lib, inputs):
    """The inputs as lib's tensors (shapes as ones), without gradients: for the raise-or-not check."""
    args = []
    for x in inputs:
        x = x.value if isinstance(x, (NoGrad, Const)) else x
        if isinstance(x, tuple) and all(isinstance(s, int) for s in x):
            x = np.ones(x)
        args.append(lib.tensor(x) if isinstance(x, np.ndarray) else x)
    return args


def _torch_raises(fn, inputs):
    try:
        out = fn(torch, *_args(torch, inputs))
    except Exception as e:   # noqa: BLE001  (the fuzz compares what each library raises)
        return e
    outs = out if isinstance(out, tuple) else (out,)
    if any(o.dtype.is_floating_point and bool(torch.isneginf(o).any()) for o in outs):
        return "undefined"   # a max-pool window wholly in the padding: torch's index there is out of range
    return None


def _ember_error(fn, inputs):
    try:
        fn(ember, *_args(ember, inputs))
    except Exception as e:   # noqa: BLE001
        return e
    return None


@pytest.mark.parametrize("family", sorted(GENERATORS))
def test_functional_fuzz_against_torch(family):
    rng = np.random.default_rng([SEED, sorted(GENERATORS).index(family)])
    failures = []
    for i in range(CASES):
        fn, inputs, name, kw = GENERATORS[family](rng)
        where = f"{name} case {i} {kw} inputs {[getattr(x, 'shape', x) if not isinstance(x, NoGrad) else 'fixed' for x in inputs]}"
        t_err = _torch_raises(fn, inputs)
        if t_err == "undefined":
            continue
        if t_err is not None:
            e_err = _ember_error(fn, inputs)
            if e_err is None:
                failures.append(f"{where}: torch raises {type(t_err).__name__}: {t_err}; ember returns")
            elif name.split("_with_")[0] not in str(e_err):
                failures.append(f"{where}: ember's error does not name {name}: {type(e_err).__name__}: {e_err}")
            continue
        try:
            check_op(fn, *inputs, dtypes=("float64",), seed=i, grad_rtol=GRAD_RTOL.get(name))
        except Exception as e:   # noqa: BLE001
            failures.append(f"{where}: {type(e).__name__}: {' '.join(str(e).split())[:400]}")
    assert not failures, f"{len(failures)} divergences from torch:\n" + "\n".join(failures[:12])
