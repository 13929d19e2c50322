"""One line per translated primitive (ember/onnx/ops.py): export a small function, run it in
onnxruntime, compare with Ember. A case names the primitives it exercises."""
import numpy as np
import pytest

import ember
import ember.nn.functional as F
import ember.onnx

onnx = pytest.importorskip("onnx", reason="ember[onnx] extra (onnx) not installed")
ort = pytest.importorskip("onnxruntime", reason="ember[onnx] extra (onnxruntime) not installed")


SPECIAL = ember.tensor([float("nan"), float("inf"), 1.0, -float("inf")])


def pos(x):
    return x.abs() + 0.5


# name -> (fn, input shapes, primitives that must appear in the capture)
CASES = {
    "unary": (lambda x: x.neg().exp() + x.sin() * x.cos() + x.tanh() + x.sigmoid() + pos(x).sqrt()
              + pos(x).log() + x.erf() + x.relu() + x.atan() + x.sinh() + x.cosh() + x.asinh(), [(3, 4)],
              ["Neg", "Exp", "Sin", "Cos", "Tanh", "Sigmoid", "Sqrt", "Log", "Erf", "Relu", "Atan", "Sinh"]),
    "inverse trig": (lambda x: (x * 0.5).asin() + (x * 0.5).acos() + (x * 0.5).atanh() + (pos(x) + 1).acosh()
                     + (x * 0.3).tan(), [(3, 4)], ["Asin", "Acos", "Atanh", "Acosh", "Tan"]),
    "log1p expm1": (lambda x: pos(x).log1p() + x.expm1(), [(3, 4)], ["Log1p", "Expm1"]),
    "binary": (lambda x, y: x + y - x * y / pos(y) + pos(x) ** y + ember.maximum(x, y), [(3, 4), (4,)],
               ["Add", "Sub", "Mul", "Div", "Pow", "Maximum"]),
    "clamp": (lambda x: x.clamp(-0.5, 0.5) + x.clamp(min=0.1) + x.clamp(max=0.2), [(3, 4)], ["Clamp"]),
    "where compare": (lambda x, y: ember.where(x > y, x, y) + (x >= y).float() + (x < y).float()
                      + (x <= 0).float() + (x == y).float() + (x != y).float(), [(3, 4), (3, 4)],
                      ["Compare", "Where", "Cast"]),
    "logic": (lambda x, y: ((x > 0) & (y > 0) | ~(x > y) ^ (y < 0)).float(), [(3, 4), (3, 4)], ["Logic"]),
    "rounding": (lambda x: (x * 3).floor() + (x * 3).ceil() + (x * 3).round() + (x * 3).trunc() + x.sign()
                 + (x * 3).round(decimals=1), [(3, 4)], ["Rounding"]),
    "predicates": (lambda x: (x * SPECIAL).isnan().float() + (x * SPECIAL).isinf().float()
                   + (x * SPECIAL).isfinite().float(), [(3, 4)], ["Predicate"]),
    "reductions": (lambda x: x.sum() + x.sum(1).sum() + x.mean(0, keepdim=True).sum() + x.amax(1).sum()
                   + x.amin(0).sum() + x.prod(1).sum() + x.max() + x.var(), [(3, 4)],
                   ["Sum", "Amax", "Prod"]),
    "cumsum argmax": (lambda x: x.cumsum(1) + x.argmax(1, keepdim=True).float() + x.argmin().float()
                      + x.argmax().float(), [(3, 4)], ["Cumsum", "ArgReduce"]),
    "movement": (lambda x: x.reshape(4, 3).t().flip(0).roll(1, 1).expand(2, 3, 4).permute(0, 2, 1)
                 .reshape(2, -1), [(3, 4)], ["Reshape", "Permute", "Flip", "Roll", "Expand"]),
    "cat pad": (lambda x, y: F.pad(ember.cat([x, y], 0), (1, 2, 0, 1), value=0.5), [(2, 4), (3, 4)],
                ["Cat", "Pad"]),
    "index": (lambda x: x[1].sum(0) + x[:, 1:3].sum() + x[..., ::2].sum() + x[None, -1, :].sum() + x[:, -1].sum(0)
              + x[::-1, 1:].sum() + x[0, ..., None, 2:4].sum(), [(3, 4, 5)], ["Index"]),
    "index tensor": (lambda x: x[ember.tensor([2, 0, 2])] + x[:, ember.tensor([1, 3, 0])].t(), [(4, 4)],
                     ["Index"]),
    "gather scatter": (lambda x: x.gather(1, ember.tensor([[0, 0], [1, 3], [2, 1]]))
                       .sum() + x.scatter(1, ember.tensor([[0], [1], [2]]), 5.0)
                       + x.scatter_add(0, ember.tensor([[0, 1, 2, 0]]), x[:1]), [(3, 4)],
                       ["Gather", "Scatter", "ScatterAdd"]),
    "matmul einsum": (lambda x, y: x @ y + ember.einsum("ij,jk->ik", x, y), [(3, 4), (4, 2)],
                      ["MatMul", "Einsum"]),
    "batched matmul": (lambda x, y: x @ y, [(2, 3, 4), (4, 5)], ["MatMul"]),
    "conv": (lambda x, w: F.conv2d(x, w, stride=2, padding=1, dilation=2).sum((2, 3)) + F.conv2d(x, w).sum((2, 3)),
             [(2, 2, 9, 9), (4, 2, 3, 3)], ["Conv"]),
    "grouped conv1d": (lambda x, w: F.conv1d(x, w, groups=2, padding=2), [(2, 4, 7), (4, 2, 3)], ["Conv"]),
    "pooling": (lambda x: F.max_pool2d(x, 3, 2, padding=1, ceil_mode=True).sum((2, 3))
                + F.avg_pool2d(x, 3, 2, padding=1, count_include_pad=False).sum((2, 3))
                + F.adaptive_avg_pool2d(x, (2, 3)).sum((2, 3)) + F.max_pool1d(x[:, :, 0], 2).sum(2),
                [(2, 3, 7, 8)], ["MaxPool", "Conv", "Embedding"]),   # adaptive: a gather of each window
    "softmaxes": (lambda x: F.softmax(x, 0) + F.log_softmax(x, -1), [(3, 4)], ["Softmax", "LogSoftmax"]),
    "norms": (lambda x: F.layer_norm(x, (4,)) + F.layer_norm(x, (3, 4)) + F.group_norm(x, 1), [(2, 3, 4)],
              ["Normalize"]),
    "gelu": (lambda x: F.gelu(x) + F.silu(x) + F.elu(x) + F.leaky_relu(x, 0.1) + F.softplus(x), [(3, 4)],
             ["Gelu"]),
    "embedding": (lambda w: F.embedding(ember.tensor([[1, 0], [2, 2]]), w), [(3, 4)], ["Embedding"]),
    "in place on a new tensor": (lambda x: x.clone().mul_(2).add_(1).masked_fill_(x > 0, 0.0), [(3, 4)],
                                 ["Assign"]),
    "cast": (lambda x: (x * 10).int().double().float() + x.half().float(), [(3, 4)], ["Cast"]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_op(name, tmp_path):
    fn, shapes, prims = CASES[name]
    rng = np.random.default_rng(0)
    xs = [ember.tensor(rng.standard_normal(s).astype(np.float32)) for s in shapes]
    from ember.utils.dispatch import PrimitiveLog
    with PrimitiveLog() as log:
        fn(*xs)
    for p in prims:
        assert log.counts()[p] > 0, f"{name} does not exercise {p}"
    path = str(tmp_path / "f.onnx")
    ember.onnx.export(fn, tuple(xs), path)
    onnx.checker.check_model(onnx.load(path), full_check=True)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    got = sess.run(None, {f"input_{i}": x.numpy() for i, x in enumerate(xs)})
    with ember.no_grad():
        want = fn(*xs).numpy()
    assert got[0].shape == want.shape and got[0].dtype == want.dtype
    np.testing.assert_allclose(got[0], want, rtol=1e-4, atol=1e-5, equal_nan=True)
