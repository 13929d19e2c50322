"""ember/nn/utils: gradient clipping and parameter vectors, against torch."""
import math

import numpy as np
import pytest
import torch

import ember


def _pair(rng):
    shapes = [(3, 4), (5,), (2, 2, 2)]
    grads = [rng.standard_normal(s) * 3 for s in shapes]
    e = [ember.nn.Parameter(ember.zeros(*s, dtype=ember.float64)) for s in shapes]
    t = [torch.nn.Parameter(torch.zeros(*s, dtype=torch.float64)) for s in shapes]
    for p, q, g in zip(e, t, grads):
        p.grad, q.grad = ember.tensor(g), torch.tensor(g)
    return e, t


@pytest.mark.parametrize("max_norm,norm_type", [(1.0, 2.0), (100.0, 2.0), (0.5, 1.0), (2.0, math.inf), (1.0, 3.0)])
def test_clip_grad_norm(max_norm, norm_type):
    e, t = _pair(np.random.default_rng(0))
    ne = ember.nn.utils.clip_grad_norm_(e, max_norm, norm_type)
    nt = torch.nn.utils.clip_grad_norm_(t, max_norm, norm_type)
    assert float(ne) == pytest.approx(float(nt), rel=1e-10)
    for p, q in zip(e, t):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-10)


def test_clip_grad_norm_nonfinite():
    p = ember.nn.Parameter(ember.zeros(2))
    p.grad = ember.tensor([float("inf"), 1.0])
    with pytest.raises(RuntimeError, match="non-finite"):
        ember.nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)


def test_clip_grad_value():
    e, t = _pair(np.random.default_rng(1))
    ember.nn.utils.clip_grad_value_(e, 1.5)
    torch.nn.utils.clip_grad_value_(t, 1.5)
    for p, q in zip(e, t):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy())


def test_parameter_vector_round_trip():
    m = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.Linear(4, 2))
    v = ember.nn.utils.parameters_to_vector(m.parameters())
    assert v.shape == (3 * 4 + 4 + 4 * 2 + 2,)
    ember.nn.utils.vector_to_parameters(v.detach() * 2, m.parameters())
    v2 = ember.nn.utils.parameters_to_vector(m.parameters())
    np.testing.assert_allclose(v2.detach().numpy(), 2 * v.detach().numpy(), rtol=1e-6)
    assert m[0].weight.is_leaf
    with pytest.raises(ValueError, match="elements"):
        ember.nn.utils.vector_to_parameters(ember.zeros(3), m.parameters())


def test_vector_to_parameters_checks_like_torch():
    for L in (torch, ember):
        with pytest.raises(TypeError):
            L.nn.utils.vector_to_parameters([1.0] * 7, [L.zeros(2, 2), L.zeros(3)])
    with pytest.raises(ValueError, match=r"vector_to_parameters: expected a 1-D vector, got shape \(7, 1\)"):
        ember.nn.utils.vector_to_parameters(ember.zeros(7, 1), [ember.zeros(7)])
    with pytest.raises(ValueError, match="vector_to_parameters: vector has 6 elements, parameters need 7"):
        ember.nn.utils.vector_to_parameters(ember.zeros(6), [ember.zeros(2, 2), ember.zeros(3)])


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, float("inf")])
def test_get_total_norm_and_clip_grads_with_norm_as_torch(norm_type):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in [(3, 4), (5,), ()]]
    for lib in (torch, ember):
        got = lib.nn.utils.get_total_norm([lib.tensor(a) for a in arrays], norm_type)
        ps = [lib.nn.Parameter(lib.zeros(a.shape)) for a in arrays]
        for p, a in zip(ps, arrays):
            p.grad = lib.tensor(a)
        lib.nn.utils.clip_grads_with_norm_(ps, 1.0, got)
        if lib is torch:
            want, want_grads = got.item(), [p.grad.numpy() for p in ps]
    np.testing.assert_allclose(got.item(), want, rtol=1e-6)
    for p, w in zip(ps, want_grads):
        np.testing.assert_allclose(p.grad.numpy(), w, rtol=1e-6)
    for lib in (torch, ember):
        assert lib.nn.utils.get_total_norm([]).item() == 0.0
        with pytest.raises(RuntimeError, match="is non-finite, so it cannot be clipped"):
            lib.nn.utils.get_total_norm([lib.tensor([float("inf")])], error_if_nonfinite=True)


def test_clip_grad_norm_without_underscore_warns_as_torch():
    for lib in (torch, ember):
        w = lib.nn.Parameter(lib.ones(3))
        (w * 2).sum().backward()
        with pytest.warns(FutureWarning, match="clip_grad_norm` is now deprecated in favor of"):
            total = lib.nn.utils.clip_grad_norm(w, 1.0)
        np.testing.assert_allclose(float(total), 12 ** 0.5, rtol=1e-6)
        np.testing.assert_allclose(w.grad.tolist(), [2 / (12 ** 0.5 + 1e-6)] * 3, rtol=1e-5)
