"""ember/nn/init.py: statistics of each initialiser, gains against torch."""
import math

import numpy as np
import pytest
import torch

import ember
from ember.nn import init


@pytest.mark.parametrize("name,param", [("linear", None), ("conv2d", None), ("sigmoid", None), ("tanh", None),
                                        ("relu", None), ("leaky_relu", None), ("leaky_relu", 0.2), ("selu", None)])
def test_calculate_gain(name, param):
    assert init.calculate_gain(name, param) == pytest.approx(torch.nn.init.calculate_gain(name, param))


def _t(*shape):
    return ember.empty(*shape)


def test_distributions():
    ember.manual_seed(0)
    w = init.uniform_(_t(200, 300), -2, 3).numpy()
    assert w.min() >= -2 and w.max() < 3 and abs(w.mean() - 0.5) < 0.05
    w = init.normal_(_t(200, 300), 1.0, 2.0).numpy()
    assert abs(w.mean() - 1) < 0.05 and abs(w.std() - 2) < 0.05
    assert (init.constant_(_t(3), 0.5).numpy() == 0.5).all()
    assert (init.zeros_(_t(3)).numpy() == 0).all() and (init.ones_(_t(3)).numpy() == 1).all()
    np.testing.assert_array_equal(init.eye_(_t(2, 3)).numpy(), np.eye(2, 3))
    fan_in, fan_out = 300, 200
    w = init.xavier_uniform_(_t(200, 300), gain=2.0).numpy()
    assert abs(w.max() - 2 * math.sqrt(6 / (fan_in + fan_out))) < 0.01
    w = init.xavier_normal_(_t(200, 300)).numpy()
    assert abs(w.std() - math.sqrt(2 / (fan_in + fan_out))) < 0.002
    w = init.kaiming_uniform_(_t(200, 300), a=math.sqrt(5)).numpy()
    assert abs(w.max() - 1 / math.sqrt(fan_in)) < 0.002
    w = init.kaiming_normal_(_t(200, 300), mode="fan_out", nonlinearity="relu").numpy()
    assert abs(w.std() - math.sqrt(2 / fan_out)) < 0.003
    w = init.kaiming_normal_(_t(16, 8, 3, 3)).numpy()
    assert abs(w.std() - math.sqrt(2 / (1 + 0.01 ** 2) / 72)) < 0.01
    w = init.trunc_normal_(_t(200, 300), mean=0.5, std=1.0, a=-1.0, b=1.5).numpy()
    assert w.min() >= -1.0 and w.max() <= 1.5
    ref = torch.nn.init.trunc_normal_(torch.empty(200, 300), mean=0.5, std=1.0, a=-1.0, b=1.5).numpy()
    assert abs(w.mean() - ref.mean()) < 0.02 and abs(w.std() - ref.std()) < 0.02


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 2, 3)])
def test_orthogonal(shape):
    w = init.orthogonal_(_t(*shape), gain=2.0).numpy().reshape(shape[0], -1)
    small = min(w.shape)
    g = w @ w.T if w.shape[0] == small else w.T @ w
    np.testing.assert_allclose(g, 4 * np.eye(small), atol=1e-5)


def test_dirac_and_errors():
    w = init.dirac_(_t(2, 2, 3, 3))
    x = ember.randn(1, 2, 5, 5)
    np.testing.assert_allclose(ember.nn.functional.conv2d(x, w, padding=1).numpy(), x.numpy(), rtol=1e-6)
    with pytest.raises(ValueError, match="fewer than 2"):
        init.xavier_uniform_(_t(3))
    with pytest.raises(ValueError, match="Unsupported"):
        init.calculate_gain("swish")


@pytest.mark.parametrize("shape", [(3, 4), (5, 3, 2, 2), (4, 2, 3), (6, 1, 2, 3, 2)])
def test_fan_in_and_fan_out_as_torch(shape):
    ours = init._calculate_fan_in_and_fan_out(ember.empty(*shape))
    assert ours == torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(*shape))


def test_init_on_parameters_keeps_leaf():
    p = ember.nn.Parameter(ember.empty(3, 3))
    init.kaiming_uniform_(p)
    assert p.is_leaf and p.requires_grad and p.grad_fn is None


@pytest.mark.parametrize("shape,sparsity", [((10, 4), 0.1), ((10, 4), 0.55), ((7, 3), 0.0), ((5, 2), 1.0),
                                            ((300, 200), 0.3)])
def test_sparse_zeros_per_column_and_std_as_torch(shape, sparsity):
    torch.manual_seed(0)
    ember.manual_seed(0)
    t = torch.nn.init.sparse_(torch.empty(*shape), sparsity, std=0.5)
    e = init.sparse_(_t(*shape), sparsity, std=0.5)
    t_zeros, e_zeros = (t == 0).sum(0).tolist(), (e == 0).sum(dim=0).tolist()
    assert e_zeros == t_zeros == [math.ceil(sparsity * shape[0])] * shape[1]
    if shape == (300, 200):
        nonzero = e.numpy()[e.numpy() != 0]
        assert abs(nonzero.std() - 0.5) < 0.01 and abs(nonzero.mean()) < 0.01
        assert len({tuple(np.flatnonzero(c == 0)) for c in e.numpy().T}) > 150   # the rows differ by column


def test_sparse_generator_reproduces_and_errors():
    a = init.sparse_(_t(8, 5), 0.5, generator=ember.Generator().manual_seed(3))
    b = init.sparse_(_t(8, 5), 0.5, generator=ember.Generator().manual_seed(3))
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    p = ember.nn.Parameter(ember.empty(4, 3))
    assert init.sparse_(p, 0.25) is p and p.is_leaf and p.requires_grad and p.grad_fn is None
    for L in (torch, ember):
        with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
            L.nn.init.sparse_(L.empty(3), 0.5)


DEPRECATED = [("uniform", (3, 4), (-1.0, 1.0)), ("normal", (3, 4), (0.0, 2.0)), ("constant", (3, 4), (0.5,)),
              ("eye", (3, 4), ()), ("dirac", (4, 2, 3), ()), ("xavier_uniform", (3, 4), ()),
              ("xavier_normal", (3, 4), (2.0,)), ("kaiming_uniform", (3, 4), ()), ("kaiming_normal", (3, 4), ()),
              ("orthogonal", (3, 4), ()), ("sparse", (6, 4), (0.5,))]


@pytest.mark.parametrize("name,shape,args", DEPRECATED, ids=[d[0] for d in DEPRECATED])
def test_deprecated_names_warn_and_call_the_underscore_version(name, shape, args):
    results = []
    for L, make in ((torch, torch.empty), (ember, ember.empty)):
        L.manual_seed(0)
        expected = getattr(L.nn.init, name + "_")(make(*shape), *args).numpy()
        L.manual_seed(0)
        with pytest.warns(FutureWarning, match=f"`nn.init.{name}` is now deprecated in favor of `nn.init.{name}_`"):
            t = make(*shape)
            out = getattr(L.nn.init, name)(t, *args)
        assert out is t
        np.testing.assert_array_equal(out.numpy(), expected)   # the same draws as the underscore version
        results.append(out.numpy())
    if name in ("constant", "eye", "dirac"):   # deterministic: equal to torch's
        np.testing.assert_array_equal(results[1], results[0])
    assert init.uniform.__name__ == "uniform"
