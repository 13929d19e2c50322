"""trapezoid, cumulative_trapezoid, gradient, histogram and histogramdd (ember/ops/reductions.py) against
torch: values and gradients through check_op (float32 and float64), edge cases and errors."""
import numpy as np
import pytest

import ember
from helpers import Const, NoGrad, check_op, raises_exactly

RNG = np.random.default_rng(0)
X5 = np.sort(RNG.standard_normal(5))          # uneven sample points


@pytest.mark.parametrize("fn", ["trapezoid", "cumulative_trapezoid"])
@pytest.mark.parametrize("kw", [{}, {"dim": 0}, {"dim": -2}, {"dx": 0.25}, {"dx": 3, "dim": 1}])
def test_trapezoid_spacing(fn, kw):
    check_op(lambda L, y: getattr(L, fn)(y, **kw), (3, 5, 5))


@pytest.mark.parametrize("fn", ["trapezoid", "cumulative_trapezoid"])
def test_trapezoid_sample_points(fn):
    check_op(lambda L, y, x: getattr(L, fn)(y, x), (3, 5), X5)                  # 1-D x, gradient in x too
    check_op(lambda L, y, x: getattr(L, fn)(y, x, dim=0), (5, 2), X5)
    check_op(lambda L, y, x: getattr(L, fn)(y, x), (3, 5), (3, 5))              # x of y's shape
    check_op(lambda L, y, x: getattr(L, fn)(y, x, dim=-1), (2, 3, 5), (3, 5))   # x broadcasts from the left


@pytest.mark.parametrize("fn", ["trapezoid", "cumulative_trapezoid"])
def test_trapezoid_edges(fn):
    check_op(lambda L, y: getattr(L, fn)(y), (2, 0), grad=False)               # no samples: 0 (or empty)
    check_op(lambda L, y: getattr(L, fn)(y), (2, 1))                            # one sample
    check_op(lambda L, y: getattr(L, fn)(y.long()), NoGrad((3, 4)), grad=False)  # integers integrate to floats
    check_op(lambda L, y: getattr(L, fn)(y.long(), dx=2), NoGrad((3, 4)), grad=False)


def test_trapezoid_errors():
    y = ember.ones(2, 3)
    raises_exactly(lambda: ember.trapezoid(y, ember.ones(4)), RuntimeError,
                   "trapezoid: There must be one `x` value for each sample point (x (4,) float32 cpu, y (2, 3) float32 "
                   "cpu, dim -1)")
    raises_exactly(lambda: ember.cumulative_trapezoid(y, ember.ones(2)), RuntimeError,
                   "cumulative_trapezoid: There must be one `x` value for each sample point (x (2,) float32 cpu, y "
                   "(2, 3) float32 cpu, dim -1)")
    with pytest.raises(TypeError, match="received both x and dx"):
        ember.trapezoid(y, ember.ones(3), dx=2)
    with pytest.raises(RuntimeError, match="trapezoid: received a bool input"):
        ember.trapezoid(y > 0)
    with pytest.raises(IndexError, match="trapezoid"):
        ember.trapezoid(y, dim=2)


@pytest.mark.parametrize("kw", [{}, {"spacing": 2.0}, {"spacing": [0.5, 3]}, {"dim": 1}, {"dim": -1, "spacing": 0.1},
                                {"dim": [0, -1], "edge_order": 2}, {"edge_order": 2, "spacing": [2.0, 0.5]}])
def test_gradient_uniform(kw):
    check_op(lambda L, y: L.gradient(y, **kw), (4, 5))


@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient_coordinates(edge_order):
    x0 = np.sort(RNG.standard_normal(4))
    check_op(lambda L, y, a, b: L.gradient(y, spacing=[a, b], edge_order=edge_order), (4, 5), NoGrad(x0), NoGrad(X5))
    check_op(lambda L, y, b: L.gradient(y, spacing=[b], dim=-1, edge_order=edge_order), (2, 3, 5), X5)  # grad in x
    check_op(lambda L, y, b: L.gradient(y, spacing=(b,), dim=0, edge_order=edge_order), (5,), NoGrad(X5))


def test_gradient_integer_input_and_values():
    check_op(lambda L, y: L.gradient(y.long()), NoGrad((3, 4)), grad=False)
    assert ember.gradient(ember.tensor([1.0, 4.0, 9.0, 16.0]), edge_order=2)[0].tolist() == [2.0, 4.0, 6.0, 8.0]


def test_gradient_errors():
    y = ember.ones(2, 3)
    with pytest.raises(RuntimeError, match=r"gradient: torch.gradient expected each dimension size to be at least "
                                           r"edge_order\+1 \(input \(2, 3\) float32 cpu, dim 0, edge_order 2\)"):
        ember.gradient(y, edge_order=2)
    with pytest.raises(RuntimeError, match="only supports edge_order=1 and edge_order=2 \\(got 3\\)"):
        ember.gradient(y, edge_order=3)
    with pytest.raises(RuntimeError, match="list of length equal to 'self.dim\\(\\) = 2'.*length 1"):
        ember.gradient(y, spacing=[1.0])
    with pytest.raises(RuntimeError, match="spacing argument of length 2 and a dim argument of length 1"):
        ember.gradient(y, spacing=[1.0, 2.0], dim=1)
    with pytest.raises(RuntimeError, match="each element of spacing to have one dimension"):
        ember.gradient(y, spacing=[ember.ones(3, 1)], dim=1)
    with pytest.raises(RuntimeError, match="must have one coordinate per element of dim 1"):
        ember.gradient(y, spacing=[ember.ones(4)], dim=1)
    with pytest.raises(RuntimeError, match="does not support uint8"):
        ember.gradient(y.to(ember.uint8))
    with pytest.raises(IndexError, match="gradient"):
        ember.gradient(y, dim=2)


HIST = RNG.standard_normal(40)
EDGES = np.array([-2.0, -0.5, 0.0, 0.1, 3.0])


@pytest.mark.parametrize("kw", [{}, {"density": True}, {"range": (-1.0, 1.0)}, {"range": (0.0, 0.0)}])
@pytest.mark.parametrize("bins", [1, 7])
def test_histogram_int_bins(bins, kw):
    check_op(lambda L, x: L.histogram(x, bins, **kw), NoGrad(HIST), grad=False)
    check_op(lambda L, x, w: x.histogram(bins, weight=w, **kw), NoGrad(HIST.reshape(5, 8)),
             NoGrad(RNG.random((5, 8))), grad=False)


@pytest.mark.parametrize("density", [False, True])
def test_histogram_tensor_bins(density):
    check_op(lambda L, x, e: L.histogram(x, e, density=density), NoGrad(HIST), NoGrad(EDGES), grad=False)
    check_op(lambda L, x, e, w: L.histogram(x, e, weight=w, density=density), NoGrad(HIST), NoGrad(EDGES),
             NoGrad(RNG.random(40)), grad=False)


def test_histogram_edge_cases():
    check_op(lambda L, x: L.histogram(x, 3), NoGrad(np.empty(0)), grad=False)          # edges 0..1
    check_op(lambda L, x: L.histogram(x, 4), NoGrad(np.ones(3)), grad=False)           # a point: +-0.5
    check_op(lambda L, x: L.histogram(x, 4), NoGrad(np.linspace(0, 1, 9)), grad=False)  # values on the edges
    check_op(lambda L, x: L.histogram(x, 3, range=(0.0, 3.0)), NoGrad(np.array([0, 1, 2, 3, np.nan])), grad=False)
    out = ember.histogram(ember.randn(6, requires_grad=True), 3)
    assert not out.hist.requires_grad and not out.bin_edges.requires_grad            # not differentiable


def test_histogram_errors():
    x = ember.ones(3)
    raises_exactly(lambda: ember.histogram(x, 0), RuntimeError, "histogram: bins must be > 0, but got 0 for dimension 0")
    raises_exactly(lambda: ember.histogram(x, ember.tensor([1.0])), RuntimeError,
                   "histogram: bins must be > 0, but got 0 for dimension 0")
    raises_exactly(lambda: ember.histogram(x, 3, range=(2.0, 1.0)), RuntimeError,
                   "histogram: min should not exceed max, but got min 2 max 1 for dimension 0")
    raises_exactly(lambda: ember.histogram(ember.tensor([1.0, float("inf")]), 3), RuntimeError,
                   "histogram: dimension 0's range [1, inf] is not finite")
    with pytest.raises(NotImplementedError, match="histogram: is not implemented for \\(3,\\) int64"):
        ember.histogram(ember.tensor([1, 2, 3]), 2)
    with pytest.raises(RuntimeError, match="histogram: weight \\(2,\\) float32 cpu should have the same shape"):
        ember.histogram(x, 2, weight=ember.ones(2))
    with pytest.raises(RuntimeError, match="same dtype, but got input with dtype float64 and bins"):
        ember.histogram(x.double(), ember.tensor([0.0, 1.0]))
    with pytest.raises(RuntimeError, match="bins tensor should have one dimension"):
        ember.histogram(x, ember.tensor([[0.0, 1.0]]))
    with pytest.raises(TypeError, match="range"):
        ember.histogram(x, ember.tensor([0.0, 1.0]), range=(0.0, 1.0))


P3 = RNG.random((4, 7, 3))


@pytest.mark.parametrize("kw", [{}, {"density": True}, {"range": [0.0, 0.5, 0.0, 1.0, 0.2, 0.3]}])
@pytest.mark.parametrize("bins", [3, [2, 3, 4]])
def test_histogramdd(bins, kw):
    check_op(lambda L, x: L.histogramdd(x, bins, **kw), NoGrad(P3), grad=False)
    check_op(lambda L, x, w: L.histogramdd(x, bins, weight=w, **kw), NoGrad(P3), NoGrad(RNG.random((4, 7))),
             grad=False)


def test_histogramdd_tensor_bins_and_empty():
    check_op(lambda L, x, a, b: L.histogramdd(x, [a, b]), NoGrad(P3[0, :, :2]), NoGrad(np.array([0.0, 0.5, 1.0])),
             NoGrad(np.array([0.0, 0.2, 1.0])), grad=False)
    check_op(lambda L, x: L.histogramdd(x, 2), NoGrad(np.empty((0, 2))), grad=False)


def test_histogramdd_errors():
    with pytest.raises(RuntimeError, match="histogramdd: input tensor should have at least 2 dimensions"):
        ember.histogramdd(ember.ones(3), 2)
    with pytest.raises(RuntimeError, match="The size of bins must be equal to the innermost dimension"):
        ember.histogramdd(ember.ones(3, 2), [2])
    with pytest.raises(RuntimeError, match="for a 2-dimensional histogram range should have 4 elements, but got 2"):
        ember.histogramdd(ember.ones(3, 2), 2, range=[0.0, 1.0])
    with pytest.raises(RuntimeError, match="bins must be > 0, but got -1 for dimension 1"):
        ember.histogramdd(ember.ones(3, 2), [2, -1])
    with pytest.raises(RuntimeError, match="weight tensor .* input with shape \\[3, 2\\] and weight with shape \\[2\\]"):
        ember.histogramdd(ember.ones(3, 2), 2, weight=ember.ones(2))
