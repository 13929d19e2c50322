"""Seeded fuzz of ember.compile: random straight-line training steps (elementwise ops, reductions,
matmuls, views, in-place writes (and reads around them), concatenation, indexing, softmax, layer norm, repeated subexpressions
and constants for the passes) compiled and run beside eager over several calls with fresh inputs, with
an SGD-momentum update inside the step; the loss, chosen intermediates, the weight and its gradient must
agree after every call. With `dynamic=True` the batch size changes between calls."""
import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as F

D = 5
PROGRAMS = 40
KINDS = ["unary", "binary", "binary", "red", "matmul", "view", "inplace", "const", "cse", "softmax", "ln",
         "where", "cat", "index", "clamp", "pow", "read_write_read", "write_a_twin"]
UNARY = [lambda t: ember.exp(ember.tanh(t)), ember.relu, ember.sigmoid, ember.neg, ember.abs,
         lambda t: ember.sqrt(ember.abs(t) + 1), lambda t: ember.log(ember.abs(t) + 1), F.gelu, ember.sin,
         lambda t: t * t, F.silu, F.softplus]


def _fit(v, b):
    """Any program value as (b, D)."""
    if v.shape == (b, D):
        return v
    if v.ndim == 0 or v.shape in ((D,), (b, 1), (1, D)):
        return v.expand(b, D) * 1
    return v.reshape(-1)[: b * D].reshape(b, D) if v.numel() >= b * D else _fit(v.sum(), b)


def _run(prog, x, y, w):
    b = x.shape[0]
    vals = [x, y, x @ w]
    for kind, i, j, seed in prog:
        r = np.random.default_rng(seed)
        a, c = _fit(vals[i], b), _fit(vals[j], b)
        if kind == "unary":
            out = UNARY[r.integers(len(UNARY))](a)
        elif kind == "binary":
            out = [a + c, a * c, a - c, a / (ember.abs(c) + 1), ember.maximum(a, c)][r.integers(5)]
        elif kind == "red":
            out = [a.sum(1, keepdim=True), a.mean(0), a.amax(1, keepdim=True), a.sum()][r.integers(4)]
        elif kind == "matmul":
            out = a @ w
        elif kind == "view":
            out = [a.t().contiguous().t(), a.reshape(D, b).reshape(b, D), a.flip(1), a.permute(1, 0) * 1][r.integers(4)]
        elif kind == "inplace":
            out = a.clone()
            op = r.integers(4)
            if op == 0:
                out.add_(c)
            elif op == 1:
                out.mul_(0.5)
            elif op == 2:
                out[:, 1:3] = c[:, :2] * 2
            else:
                out.clamp_(-1, 1)
        elif kind == "const":
            k = float(np.round(r.standard_normal(), 2))
            out = a * k + (k - 1) * 0 + 1.5 if r.random() < 0.5 else a * 1 + 0   # folding and algebra fodder
        elif kind == "cse":
            out = ember.tanh(a) * 2 + ember.tanh(a)
        elif kind == "softmax":
            out = ember.softmax(a, dim=int(r.integers(2)))
        elif kind == "ln":
            out = F.layer_norm(a, (D,))
        elif kind == "where":
            out = ember.where(a > c, a, c * 0.5)
        elif kind == "cat":
            out = ember.cat([a, c], dim=1)[:, 2:2 + D]
        elif kind == "index":
            out = a[ember.tensor(r.integers(0, b, size=b))] * 1
        elif kind == "read_write_read":   # one expression of t before and after a write into t
            t = a.clone()
            u = ember.tanh(t)
            t.add_(c) if r.random() < 0.5 else t.mul_(0.5)
            out = u + ember.tanh(t)
        elif kind == "write_a_twin":      # two equal expressions, one of them then written in place
            u, v = a * 2, a * 2
            u.add_(1.0)
            out = u - v * 0.5
        elif kind == "clamp":
            out = a.clamp(min=-0.5)
        else:
            out = ember.abs(a) ** 1.5
        vals.append(out)
    return vals


def _program(rng):
    prog, n = [], 3
    for _ in range(int(rng.integers(3, 14))):
        prog.append((KINDS[rng.integers(len(KINDS))], int(rng.integers(n)), int(rng.integers(n)),
                     int(rng.integers(1 << 30))))
        n += 1
    outs = sorted({int(v) for v in rng.integers(3, n, size=int(rng.integers(1, 4)))})
    return prog, outs


def _calls(prog, outs, seed, compiled, dynamic):
    w = ember.tensor(np.random.default_rng(seed).standard_normal((D, D)) * 0.5, requires_grad=True)
    opt = ember.optim.SGD([w], lr=0.1, momentum=0.9)

    def step(x, y):
        opt.zero_grad()
        vals = _run(prog, x, y, w)
        loss = vals[2].sum() * 0.01 + sum(_fit(vals[i], x.shape[0]).sum() for i in outs) + vals[-1].sum() * 0.1
        loss.backward()
        opt.step()
        return loss, [vals[i] for i in outs]
    f = ember.compile(step, dynamic=dynamic) if compiled else step
    got = []
    for c, b in enumerate((4, 6, 3, 4) if dynamic else (4, 4, 4, 4)):
        r = np.random.default_rng(1000 + c)
        loss, vals = f(ember.tensor(r.standard_normal((b, D))), ember.tensor(r.standard_normal(D)))
        got.append([loss.detach().numpy().copy()] + [v.detach().numpy().copy() for v in vals] +
                   [w.detach().numpy().copy(), w.grad.numpy().copy()])
    return got


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_random_compiled_steps_equal_eager(dynamic):
    rng = np.random.default_rng(20261124 + dynamic)
    failures = []
    for k in range(PROGRAMS):
        prog, outs = _program(rng)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")   # a retrace warning at a new batch size is allowed here
            eager = _calls(prog, outs, k, False, dynamic)
            compiled = _calls(prog, outs, k, True, dynamic)
        for c, (e, g) in enumerate(zip(eager, compiled)):
            bad = [j for j, (a, b) in enumerate(zip(e, g))
                   if a.shape != b.shape or not np.allclose(a, b, rtol=1e-6, atol=1e-8, equal_nan=True)]
            if bad:
                failures.append(f"program {k} {prog} outputs {outs}: call {c}, items {bad}")
                break
    assert not failures, f"{len(failures)} programs differ:\n" + "\n".join(failures[:5])
