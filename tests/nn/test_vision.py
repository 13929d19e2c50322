"""ember/nn/functional/vision.py's resampling: interpolate(mode='bicubic'), affine_grid, grid_sample, against
torch via check_op (values and the gradients of input, grid and theta)."""
import warnings

import numpy as np
import pytest
import torch

import ember
from helpers import Const, check_op, raises_exactly

RNG = np.random.default_rng(7)
F = ember.nn.functional


def _grid(shape, lo=-1.4, hi=1.4, exact=True):
    """Random points, some outside [-1, 1]; with `exact` a third of them on -1, 0, 1 and +-1.5 exactly
    (the bounds where clipping and reflection change their gradient)."""
    g = RNG.uniform(lo, hi, shape)
    if exact:
        g.flat[::3] = RNG.choice([-1.0, 1.0, 0.0, -1.5, 1.5], size=g.flat[::3].shape)
    return g


# ------------------------------------------------------------------ interpolate(mode='bicubic')
BICUBIC = [
    ("up", dict(size=(5, 7)), (2, 3, 3, 4)),
    ("up_ac", dict(size=(5, 7), align_corners=True), (2, 3, 3, 4)),
    ("down", dict(size=(2, 3)), (1, 2, 5, 7)),
    ("down_ac", dict(size=(2, 3), align_corners=True), (1, 2, 5, 7)),
    ("to_1", dict(size=1), (1, 2, 3, 4)),
    ("to_1_ac", dict(size=(1, 2), align_corners=True), (1, 2, 3, 4)),
    ("from_1", dict(size=(3, 4)), (1, 2, 1, 1)),
    ("same_size", dict(size=(3, 4)), (1, 2, 3, 4)),
    ("scale", dict(scale_factor=2), (1, 2, 3, 4)),
    ("scale_not_recomputed", dict(scale_factor=1.7), (1, 2, 3, 5)),
    ("scale_recomputed", dict(scale_factor=1.7, recompute_scale_factor=True), (1, 2, 3, 5)),
    ("scale_tuple_down", dict(scale_factor=(0.5, 1.75)), (1, 2, 4, 4)),
    ("empty_batch", dict(size=(4, 5)), (0, 2, 3, 3)),
]


@pytest.mark.parametrize("kw,shape", [c[1:] for c in BICUBIC], ids=[c[0] for c in BICUBIC])
def test_interpolate_bicubic(kw, shape):
    check_op(lambda lib, x: lib.nn.functional.interpolate(x, mode="bicubic", **kw), shape)


def test_interpolate_bicubic_same_size_other_scale():
    """scale_factor=1.1 keeps a (3, 4) input's size, but samples at scale 1/1.1, not a copy. torch's forward does
    so; its backward copies the gradient (torch.autograd.gradcheck fails there). Ember's gradient is that of
    torch's forward: the op is linear, so it is J^T g with J's columns torch's forward of the basis vectors."""
    shape = (1, 1, 3, 4)
    t, e = check_op(lambda lib, x: lib.nn.functional.interpolate(x, scale_factor=1.1, mode="bicubic"), shape,
                    grad=False)
    basis = torch.eye(12, dtype=torch.float64).reshape(12, *shape[1:])
    jac = torch.nn.functional.interpolate(basis, scale_factor=1.1, mode="bicubic").reshape(12, 12)   # (in, out)
    assert not torch.allclose(jac, torch.eye(12, dtype=torch.float64))
    x = ember.randn(*shape, dtype=ember.float64, requires_grad=True)
    g = np.random.default_rng(0).standard_normal(12)
    F.interpolate(x, scale_factor=1.1, mode="bicubic").backward(ember.tensor(g.reshape(shape)))
    np.testing.assert_allclose(x.grad.numpy().ravel(), jac.numpy() @ g, atol=1e-12)


def test_interpolate_bicubic_overshoots():
    """The Keys kernel overshoots past a step (a linear mode would not): the values are torch's, not clipped."""
    x = np.zeros((1, 1, 1, 6))
    x[..., 3:] = 1.0
    t, e = check_op(lambda lib, x: lib.nn.functional.interpolate(x, size=(1, 13), mode="bicubic"), x)
    assert t.min() < 0 and t.max() > 1


ANTIALIAS = [
    ("half", {"scale_factor": 0.5}, (2, 3, 6, 8)), ("odd", {"size": (2, 3)}, (1, 2, 5, 4)),
    ("third", {"scale_factor": 0.3}, (1, 1, 10, 17)), ("up", {"size": (7, 9)}, (1, 2, 5, 4)),
    ("mixed", {"scale_factor": (0.37, 1.6)}, (1, 2, 8, 5)), ("one", {"size": (1, 1)}, (1, 1, 4, 5)),
]


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("kw,shape", [c[1:] for c in ANTIALIAS], ids=[c[0] for c in ANTIALIAS])
def test_interpolate_antialias(kw, shape, mode, align_corners):
    check_op(lambda L, x: L.nn.functional.interpolate(x, mode=mode, antialias=True, align_corners=align_corners,
                                                      **kw), shape)


BICUBIC_ERRORS = [
    (lambda: F.interpolate(ember.ones(1, 1, 4), size=3, mode="bicubic"), ValueError,
     "interpolate: mode 'bicubic' needs a 4-D input, got (1, 1, 4)"),
    (lambda: F.interpolate(ember.ones(1, 1, 4, 4), size=3, antialias=True), ValueError,
     "Anti-alias option is restricted to bilinear and bicubic modes and requires a 4-D tensor as input"),
    (lambda: F.interpolate(ember.ones(1, 1, 4, 4), size=3, mode="cubic"), NotImplementedError,
     "interpolate: mode 'cubic' is not supported (nearest, nearest-exact, area, linear, bilinear, bicubic, "
     "trilinear)"),
]


@pytest.mark.parametrize("k", range(len(BICUBIC_ERRORS)))
def test_interpolate_bicubic_errors(k):
    raises_exactly(*BICUBIC_ERRORS[k])


# ------------------------------------------------------------------ affine_grid
AFFINE = [
    ("2d", (2, 2, 3), (2, 3, 4, 5), False),
    ("2d_ac", (2, 2, 3), (2, 3, 4, 5), True),
    ("2d_unit_h", (1, 2, 3), (1, 1, 1, 4), False),
    ("3d", (2, 3, 4), (2, 1, 3, 4, 2), False),
    ("3d_ac", (2, 3, 4), (2, 1, 3, 4, 2), True),
]


@pytest.mark.parametrize("theta,size,ac", [c[1:] for c in AFFINE], ids=[c[0] for c in AFFINE])
def test_affine_grid(theta, size, ac):
    check_op(lambda lib, t: lib.nn.functional.affine_grid(t, size, align_corners=ac), theta)
    check_op(lambda lib, t: lib.nn.functional.affine_grid(t, torch.Size(size) if lib is torch else size,
                                                          align_corners=ac), theta, dtypes=("float64",))


def test_affine_grid_warnings():
    t = ember.zeros(1, 2, 3)
    with pytest.warns(UserWarning, match="affine_grid: Default grid_sample and affine_grid behavior has changed"):
        F.affine_grid(t, (1, 1, 2, 2))
    with pytest.warns(UserWarning, match="affine_grid: Since version 1.3.0, affine_grid behavior has changed "
                                         "for unit-size grids"):
        assert F.affine_grid(t, (1, 1, 1, 3), align_corners=True).shape == (1, 1, 3, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        F.affine_grid(t, (1, 1, 2, 2), align_corners=False)


AFFINE_ERRORS = [
    (lambda: F.affine_grid(ember.zeros(2, 2, 3, dtype=ember.int64), (2, 1, 4, 4), False), ValueError,
     "affine_grid: Expected theta to have floating point type, but got int64"),
    (lambda: F.affine_grid(ember.zeros(2, 2, 4), (2, 1, 4, 4), False), ValueError,
     "affine_grid: Expected a batch of 2D affine matrices of shape Nx2x3 for size (2, 1, 4, 4). Got (2, 2, 4)."),
    (lambda: F.affine_grid(ember.zeros(2, 2, 3), (2, 1, 4, 4, 4), False), ValueError,
     "affine_grid: Expected a batch of 3D affine matrices of shape Nx3x4 for size (2, 1, 4, 4, 4). Got (2, 2, 3)."),
    (lambda: F.affine_grid(ember.zeros(2, 2, 3), (2, 1, 4), False), NotImplementedError,
     "affine_grid: affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, respectively. "
     "Got size (2, 1, 4)."),
    (lambda: F.affine_grid(ember.zeros(2, 2, 3), (2, 1, 0, 4), False), ValueError,
     "affine_grid: Expected non-zero, positive output size. Got (2, 1, 0, 4)"),
    (lambda: F.affine_grid(ember.zeros(2, 2, 3), (3, 1, 4, 4), False), RuntimeError,
     "affine_grid: theta (2, 2, 3) holds 2 matrices for a batch of 3 in size (3, 1, 4, 4)"),
]


@pytest.mark.parametrize("k", range(len(AFFINE_ERRORS)))
def test_affine_grid_errors(k):
    raises_exactly(*AFFINE_ERRORS[k])


# ------------------------------------------------------------------ grid_sample
MODES_2D = [(m, p, ac) for m in ("bilinear", "nearest", "bicubic") for p in ("zeros", "border", "reflection")
            for ac in (False, True)]
MODES_3D = [(m, p, ac) for m in ("bilinear", "nearest") for p in ("zeros", "border", "reflection")
            for ac in (False, True)]


@pytest.mark.parametrize("mode,pad,ac", MODES_2D, ids=[f"{m}-{p}-{'ac' if a else 'noac'}" for m, p, a in MODES_2D])
def test_grid_sample_2d(mode, pad, ac):
    """Output smaller (3 x 4 points from 4 x 5) and larger (6 x 7 from 3 x 2) than the input, points outside it."""
    fn = lambda lib, x, g: lib.nn.functional.grid_sample(x, g, mode, pad, ac)   # noqa: E731
    check_op(fn, (2, 3, 4, 5), _grid((2, 3, 4, 2)))
    check_op(fn, (1, 2, 3, 2), _grid((1, 6, 7, 2), -2.5, 2.5), dtypes=("float64",))


@pytest.mark.parametrize("mode,pad,ac", MODES_3D, ids=[f"{m}-{p}-{'ac' if a else 'noac'}" for m, p, a in MODES_3D])
def test_grid_sample_3d(mode, pad, ac):
    fn = lambda lib, x, g: lib.nn.functional.grid_sample(x, g, mode, pad, ac)   # noqa: E731
    check_op(fn, (2, 2, 3, 4, 5), _grid((2, 2, 3, 4, 3)))


def test_grid_sample_edges():
    fn = lambda mode, pad="zeros": (lambda lib, x, g: lib.nn.functional.grid_sample(x, g, mode, pad,  # noqa: E731
                                                                                    align_corners=False))
    check_op(fn("bilinear"), (2, 3, 1, 1), _grid((2, 2, 3, 2)))                     # a 1 x 1 input
    check_op(fn("bicubic", "reflection"), (1, 1, 1, 3), _grid((1, 2, 3, 2)))        # reflection of a 1-pixel dim
    check_op(fn("bilinear", "border"), (2, 3, 4, 5), _grid((2, 0, 3, 2)))           # no points
    check_op(fn("bilinear"), (0, 3, 4, 5), _grid((0, 2, 3, 2)))                     # an empty batch
    check_op(fn("bicubic"), (1, 2, 4, 5), _grid((1, 3, 3, 2), -9.0, 9.0))           # far outside: zeros
    check_op(fn("nearest"), (1, 2, 4, 4), np.array([[[[-0.75, -0.25], [0.25, 0.75]]]]))   # halfway: to even


def test_grid_sample_identity_and_rotation():
    """affine_grid then grid_sample, both differentiable: the identity map samples the input back."""
    x = ember.randn(2, 3, 4, 5)
    theta = ember.tensor([[[1.0, 0, 0], [0, 1, 0]]] * 2)
    for ac in (False, True):
        g = F.affine_grid(theta, (2, 3, 4, 5), align_corners=ac)
        np.testing.assert_allclose(F.grid_sample(x, g, align_corners=ac).numpy(), x.numpy(), atol=1e-6)
    c, s = np.cos(0.3), np.sin(0.3)
    check_op(lambda lib, x, t: lib.nn.functional.grid_sample(
        x, lib.nn.functional.affine_grid(t, (2, 3, 6, 5), align_corners=False), align_corners=False),
        (2, 3, 4, 5), np.array([[[c, -s, 0.1], [s, c, -0.2]], [[0.8, 0.1, 0.0], [0.0, 1.3, 0.3]]]))


def test_grid_sample_warns_without_align_corners():
    with pytest.warns(UserWarning, match="grid_sample: Default grid_sample and affine_grid behavior"):
        F.grid_sample(ember.zeros(1, 1, 2, 2), ember.zeros(1, 1, 1, 2))


GRID_ERRORS = [
    (lambda: F.grid_sample(ember.zeros(1, 1, 3, 3), ember.zeros(1, 2, 2, 2), mode="cubic"), ValueError,
     "nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', but got: 'cubic'"),
    (lambda: F.grid_sample(ember.zeros(1, 1, 3, 3), ember.zeros(1, 2, 2, 2), padding_mode="wrap"), ValueError,
     "nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or 'reflection', but got: "
     "'wrap'"),
    (lambda: F.grid_sample(ember.zeros(1, 3, 3), ember.zeros(2, 2, 2), align_corners=False), RuntimeError,
     "grid_sample: expected 4D or 5D input and grid with same number of dimensions, but got input with sizes "
     "[1, 3, 3] and grid with sizes [2, 2, 2]"),
    (lambda: F.grid_sample(ember.zeros(1, 1, 3, 3), ember.zeros(1, 2, 2, 2, 3), align_corners=False),
     RuntimeError, "grid_sample: expected 4D or 5D input and grid with same number of dimensions, but got input "
                   "with sizes [1, 1, 3, 3] and grid with sizes [1, 2, 2, 2, 3]"),
    (lambda: F.grid_sample(ember.zeros(1, 1, 3, 3), ember.zeros(1, 2, 2, 3), align_corners=False), RuntimeError,
     "grid_sample: expected grid to have size 2 in last dimension, but got grid with sizes [1, 2, 2, 3]"),
    (lambda: F.grid_sample(ember.zeros(2, 1, 3, 3), ember.zeros(1, 2, 2, 2), align_corners=False), RuntimeError,
     "grid_sample: expected grid and input to have same batch size, but got input with sizes [2, 1, 3, 3] and "
     "grid with sizes [1, 2, 2, 2]"),
    (lambda: F.grid_sample(ember.zeros(1, 1, 0, 3), ember.zeros(1, 2, 2, 2), align_corners=False), RuntimeError,
     "grid_sample: expected input to have non-empty spatial dimensions, but input has sizes [1, 1, 0, 3] with "
     "dimension 2 being empty"),
    (lambda: F.grid_sample(ember.zeros(1, 1, 2, 3, 3), ember.zeros(1, 2, 2, 2, 3), "bicubic", align_corners=False),
     RuntimeError, "grid_sample: bicubic interpolation only supports 4D input"),
    (lambda: F.grid_sample(ember.zeros(1, 1, 3, 3), ember.zeros(1, 2, 2, 2, dtype=ember.float64),
                           align_corners=False), RuntimeError,
     "grid_sample: expected floating point input and grid of the same dtype, got input float32 and grid float64"),
]


@pytest.mark.parametrize("k", range(len(GRID_ERRORS)))
def test_grid_sample_errors(k):
    raises_exactly(*GRID_ERRORS[k])


# ------------------------------------------------------------------ pdist
PDIST_X = np.array([[1.0, 2.0, 0.5], [1.0, 2.0, 0.5], [0.0, 5.0, 0.5], [-1.0, 2.5, 3.0]])   # rows 0, 1 equal


@pytest.mark.parametrize("p", [2.0, 1.0, 0.5, 3.0, float("inf"), 0.0])
def test_pdist_matches_torch_incl_the_gradient_at_zero_distance(p):
    check_op(lambda lib, x: lib.nn.functional.pdist(x, p), PDIST_X)
    check_op(lambda lib, x: lib.pdist(x, p), (5, 3))


@pytest.mark.parametrize("p", [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, float("inf")])
def test_pdist_at_nan_and_inf_as_torch(p):
    # a NaN difference makes the distance NaN (was skipped as a zero for p not 1), an inf one inf for
    # p = 0 (a count of 1, was NaN) and p = inf (was inf - inf = NaN); gradients as torch's kernel
    x = np.array([[np.nan, 1.0, 2.0], [np.inf, 1.0, 2.0], [1.0, 1.0, 1.0], [0.0, np.nan, 0.0], [0.0, 0.0, 2.0],
                  [0.0, 0.0, 2.0]])
    check_op(lambda lib, a: lib.nn.functional.pdist(a, p), x)
    check_op(lambda lib, a: lib.nn.functional.pdist(a, p), x[1:3])


def test_pdist_small_inputs_and_errors():
    check_op(lambda lib, x: lib.pdist(x), (1, 3))
    check_op(lambda lib, x: lib.pdist(x), (0, 3), grad=False)   # torch 2.13 crashes in this backward
    raises_exactly(lambda: ember.pdist(ember.ones(3)), RuntimeError,
                   "pdist: only supports 2D tensors, got: 1D (shape (3,))")
    raises_exactly(lambda: ember.pdist(ember.ones(3, 2), -1.0), RuntimeError,
                   "pdist: only supports non-negative p values, got -1.0")
