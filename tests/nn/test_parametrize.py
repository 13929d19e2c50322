"""ember/nn/utils: weight_norm / spectral_norm (hook forms, weight_norm.py and spectral_norm.py), parametrize
and parametrizations, against torch: values, gradients, state_dict keys, SGD training."""
import copy
import warnings

import numpy as np
import pytest
import torch

import ember
from helpers import check_op, raises_as_torch
from .nn_helpers import check_module

warnings.filterwarnings("ignore", message=".*weight_norm.* is deprecated", category=FutureWarning)

LAYERS = [
    ("linear", lambda L: L.nn.Linear(5, 3), (4, 5)),
    ("conv2d", lambda L: L.nn.Conv2d(3, 4, 3, padding=1), (2, 3, 5, 5)),
    ("convT2d", lambda L: L.nn.ConvTranspose2d(3, 4, 3), (2, 3, 4, 4)),
]


def _fixed_buffers(m, L):
    """Power-iteration vectors are random: set every float buffer to the same unit vectors on both sides."""
    rng = np.random.default_rng(0)
    with L.no_grad():
        for _, b in m.named_buffers():
            if b.dtype.is_floating_point:
                a = rng.standard_normal(tuple(b.shape))
                b.copy_(L.tensor(a / np.linalg.norm(a), dtype=b.dtype))
    return m


def _norms(L):
    U = L.nn.utils
    return {
        "weight_norm": lambda m: U.weight_norm(m),
        "weight_norm_dim1": lambda m: U.weight_norm(m, dim=1),
        "weight_norm_dimNone": lambda m: U.weight_norm(m, dim=None),
        "weight_norm_bias": lambda m: U.weight_norm(m, name="bias"),
        "spectral_norm": lambda m: _fixed_buffers(U.spectral_norm(m), L),
        "spectral_norm_2it": lambda m: _fixed_buffers(U.spectral_norm(m, n_power_iterations=2, dim=1), L),
        "p_weight_norm": lambda m: U.parametrizations.weight_norm(m),
        "p_weight_norm_dim1": lambda m: U.parametrizations.weight_norm(m, dim=1),
        "p_weight_norm_dimNone": lambda m: U.parametrizations.weight_norm(m, dim=None),
        "p_spectral_norm": lambda m: _fixed_buffers(U.parametrizations.spectral_norm(m), L),
        "p_spectral_norm_bias": lambda m: U.parametrizations.spectral_norm(m, name="bias", dim=0),
        "p_spectral_norm_3it": lambda m: _fixed_buffers(U.parametrizations.spectral_norm(m, n_power_iterations=3,
                                                                                         dim=-1), L),
    }


NORMS = list(_norms(torch))


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name,make,shape", LAYERS, ids=[c[0] for c in LAYERS])
def test_normalized_layer_values_and_gradients(norm, name, make, shape):
    # the parameters (weight_g/weight_v, weight_orig, parametrizations.weight.original0/1 ...) are set from
    # torch's, so the output, the input's and every parameter's gradient, and the power-iteration buffers
    # after the forward are compared, in train and eval mode
    check_module(lambda L: _norms(L)[norm](make(L)), shape)


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name,make,shape", LAYERS[:2], ids=[c[0] for c in LAYERS[:2]])
def test_normalized_layer_state_dict_and_sgd_training_match_torch(norm, name, make, shape):
    torch.manual_seed(0)
    t = _norms(torch)[norm](make(torch))
    e = _norms(ember)[norm](make(ember))
    assert list(e.state_dict()) == list(t.state_dict())
    assert [k for k, _ in e.named_parameters()] == [k for k, _ in t.named_parameters()]
    e.load_state_dict({k: v.detach().numpy() for k, v in t.state_dict().items()})
    x = np.random.default_rng(1).standard_normal(shape)
    ot = torch.optim.SGD(t.parameters(), lr=0.1, momentum=0.9)
    oe = ember.optim.SGD(e.parameters(), lr=0.1, momentum=0.9)
    for _ in range(3):
        for L, m, opt in ((torch, t, ot), (ember, e, oe)):
            opt.zero_grad()
            (m(L.tensor(x, dtype=L.float32)) ** 2).mean().backward()
            opt.step()
    for (k, a), (_, b) in zip(t.state_dict().items(), e.state_dict().items()):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-4, atol=1e-5, err_msg=k)
    np.testing.assert_allclose(e.weight.detach().numpy(), t.weight.detach().numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name,make,shape", LAYERS, ids=[c[0] for c in LAYERS])
def test_remove_hook_norms_leaves_the_normalized_weight(name, make, shape):
    for apply, remove in (("weight_norm", "remove_weight_norm"), ("spectral_norm", "remove_spectral_norm")):
        torch.manual_seed(0)
        t = getattr(torch.nn.utils, apply)(make(torch))
        e = getattr(ember.nn.utils, apply)(make(ember))
        e.load_state_dict({k: v.numpy() for k, v in t.state_dict().items()})
        getattr(torch.nn.utils, remove)(t)
        getattr(ember.nn.utils, remove)(e)
        assert [k for k, _ in e.named_parameters()] == [k for k, _ in t.named_parameters()]
        assert type(e.weight) is ember.nn.Parameter and not e._forward_pre_hooks
        np.testing.assert_allclose(e.weight.detach().numpy(), t.weight.detach().numpy(), rtol=1e-5, atol=1e-6)
        with pytest.raises(ValueError, match=f"{apply} of 'weight' not found in"):
            getattr(ember.nn.utils, remove)(e)


def test_hook_norm_errors_as_torchs():
    m = ember.nn.utils.weight_norm(ember.nn.Linear(3, 2))
    with pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks on the same parameter weight"):
        ember.nn.utils.weight_norm(m)
    m = ember.nn.utils.spectral_norm(ember.nn.Linear(3, 2))
    with pytest.raises(RuntimeError, match="Cannot register two spectral_norm hooks on the same parameter weight"):
        ember.nn.utils.spectral_norm(m)
    with pytest.raises(ValueError, match="Expected n_power_iterations to be positive, but got n_power_iterations=0"):
        ember.nn.utils.spectral_norm(ember.nn.Linear(3, 2), n_power_iterations=0)
    with pytest.raises(ValueError, match="`SpectralNorm` cannot be applied as parameter `bias` is None"):
        ember.nn.utils.spectral_norm(ember.nn.Linear(3, 2, bias=False), name="bias")
    for fn in (ember.nn.utils.weight_norm, ember.nn.utils.spectral_norm):
        with pytest.raises(ValueError, match="can't have uninitialized parameters. Make sure to run the dummy forward"):
            fn(ember.nn.LazyLinear(3))
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-2, 1\] but got 2\)"):
        ember.nn.utils.parametrizations.spectral_norm(ember.nn.Linear(3, 2), dim=2)
    with pytest.raises(ValueError, match="has no parameter or buffer with name 'kernel'"):
        ember.nn.utils.parametrizations.spectral_norm(ember.nn.Linear(3, 2), name="kernel")


class Symmetric(ember.nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).transpose(-1, -2)

    def right_inverse(self, A):
        return A.triu()


class TSymmetric(torch.nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).transpose(-1, -2)

    def right_inverse(self, A):
        return A.triu()


class Scale(ember.nn.Module):
    def forward(self, X):
        return X * 2

    def right_inverse(self, A):
        return A / 2


class TScale(torch.nn.Module):
    def forward(self, X):
        return X * 2

    def right_inverse(self, A):
        return A / 2


def _param(L, m):
    P = L.nn.utils.parametrize
    P.register_parametrization(m, "weight", Symmetric() if L is ember else TSymmetric())
    P.register_parametrization(m, "weight", Scale() if L is ember else TScale())   # chained
    return m


def test_register_parametrization_values_gradients_and_keys():
    check_module(lambda L: _param(L, L.nn.Linear(4, 4)), (3, 4))
    t, e = _param(torch, torch.nn.Linear(4, 4)), _param(ember, ember.nn.Linear(4, 4))
    assert list(e.state_dict()) == list(t.state_dict()) == ["bias", "parametrizations.weight.original"]
    assert type(e).__name__ == type(t).__name__ == "ParametrizedLinear"
    assert ember.nn.utils.parametrize.type_before_parametrizations(e) is ember.nn.Linear
    assert type(ember.nn.Linear(2, 2)) is ember.nn.Linear       # the class of other instances is untouched
    P = ember.nn.utils.parametrize
    assert P.is_parametrized(e) and P.is_parametrized(e, "weight") and not P.is_parametrized(e, "bias")
    assert not P.is_parametrized(ember.nn.Linear(2, 2))
    # assignment goes through right_inverse, in place (the optimizer's Parameter is the same object)
    orig = e.parametrizations.weight.original
    A = np.arange(16.0).reshape(4, 4).astype(np.float32)
    A = A + A.T
    e.weight = ember.tensor(A)
    assert e.parametrizations.weight.original is orig
    np.testing.assert_allclose(e.weight.detach().numpy(), A)
    with pytest.raises(KeyError, match="attribute 'weight' already exists"):
        e.weight = ember.nn.Parameter(ember.zeros(4, 4))
    with P.cached():
        assert e.weight is e.weight
    assert e.weight is not e.weight
    m = copy.deepcopy(e)
    np.testing.assert_allclose(m.weight.detach().numpy(), A)


@pytest.mark.parametrize("leave", [True, False])
def test_remove_parametrizations(leave):
    t, e = _param(torch, torch.nn.Linear(4, 4)), _param(ember, ember.nn.Linear(4, 4))
    e.load_state_dict({k: v.detach().numpy() for k, v in t.state_dict().items()})
    torch.nn.utils.parametrize.remove_parametrizations(t, "weight", leave_parametrized=leave)
    ember.nn.utils.parametrize.remove_parametrizations(e, "weight", leave_parametrized=leave)
    assert type(e) is ember.nn.Linear and not hasattr(e, "parametrizations")
    assert type(e.weight) is ember.nn.Parameter and list(e.state_dict()) == list(t.state_dict()) == ["bias", "weight"]
    np.testing.assert_allclose(e.weight.detach().numpy(), t.weight.detach().numpy(), rtol=1e-6)
    with pytest.raises(ValueError, match="does not have a parametrization on weight"):
        ember.nn.utils.parametrize.remove_parametrizations(e, "weight")
    w = ember.nn.utils.parametrizations.weight_norm(ember.nn.Linear(3, 2))
    with pytest.raises(ValueError, match=r"Cannot leave unparametrized \(`leave_parametrized=False`\) a tensor"):
        ember.nn.utils.parametrize.remove_parametrizations(w, "weight", leave_parametrized=False)
    before = w.weight.detach().numpy()
    ember.nn.utils.parametrize.remove_parametrizations(w, "weight")
    assert [k for k, _ in w.named_parameters()] == ["bias", "weight"]            # torch's order too
    np.testing.assert_allclose(w.weight.detach().numpy(), before)


def test_register_parametrization_errors_as_torchs():
    P = ember.nn.utils.parametrize

    class Double(ember.nn.Module):
        def forward(self, X):
            return ember.cat([X, X])

    with pytest.raises(ValueError, match=r"may not change the shape of the tensor, unless `unsafe` flag is enabled.\n"
                                         r"unparametrized shape: \(2, 3\)\nparametrized shape: \(4, 3\)"):
        P.register_parametrization(ember.nn.Linear(3, 2), "weight", Double())
    m = P.register_parametrization(ember.nn.Linear(3, 2), "weight", Double(), unsafe=True)
    assert m.weight.shape == (4, 3)
    with pytest.raises(ValueError, match="does not have a parameter, a buffer, or a parametrized element with name 'w'"):
        P.register_parametrization(ember.nn.Linear(3, 2), "w", Double())

    class NoInverse(ember.nn.Module):
        def forward(self, X):
            return X

    m = P.register_parametrization(ember.nn.Linear(3, 2), "weight", NoInverse())
    with pytest.raises(RuntimeError, match="parametrization NoInverse does not implement right_inverse."):
        m.weight = ember.zeros(2, 3)
    for L in (torch, ember):   # torch refuses pickling a parametrized module too
        lin = L.nn.Linear(3, 2)
        L.nn.utils.parametrize.register_parametrization(lin, "weight", L.nn.Identity())
        with pytest.raises(RuntimeError, match="Serialization of parametrized modules is only supported through "
                                               "state_dict()"):
            lin.__getstate__()


def test_transfer_parametrizations_and_params_and_parametrization_list():
    P = ember.nn.utils.parametrize
    src = _param(ember, ember.nn.Linear(4, 4))
    assert isinstance(src.parametrizations.weight, P.ParametrizationList) and len(src.parametrizations.weight) == 2
    dst = P.transfer_parametrizations_and_params(src, ember.nn.Linear(4, 4))
    assert P.is_parametrized(dst, "weight") and [type(p) for p in dst.parametrizations.weight] == [Symmetric, Scale]
    assert dst.parametrizations.weight.original is src.parametrizations.weight.original
    np.testing.assert_allclose(dst.weight.detach().numpy(), src.weight.detach().numpy())
    with pytest.raises(ValueError, match="ParametrizationList requires one or more modules."):
        P.ParametrizationList([], ember.zeros(2))


# orthogonal: (map, weight shape, use_trivialization); the Cayley and matrix_exp maps cannot be inverted
# without the trivialization, so those keep their original weight at registration
ORTH = [(m, s, t) for m in ("matrix_exp", "cayley", "householder", None)
        for s in ((4, 4), (5, 3), (3, 5), (2, 4, 3)) for t in (True, False)
        if t or m in ("householder", None)]


class _Holder:
    @staticmethod
    def make(L, W):
        m = L.nn.Module()
        m.weight = L.nn.Parameter(L.tensor(W))
        return m


def _orthogonal_pair(orth_map, shape, triv, W):
    """The same weight W made orthogonal by torch and by Ember; a non-square weight's base (its random
    completion) is copied from torch's."""
    torch.manual_seed(0)
    t = torch.nn.utils.parametrizations.orthogonal(_Holder.make(torch, W), orthogonal_map=orth_map,
                                                   use_trivialization=triv)
    e = ember.nn.utils.parametrizations.orthogonal(_Holder.make(ember, W), orthogonal_map=orth_map,
                                                   use_trivialization=triv)
    if triv and shape[-1] != shape[-2]:
        with ember.no_grad():
            e.parametrizations.weight[0].base.copy_(ember.tensor(t.parametrizations.weight[0].base.numpy()))
    return t, e


@pytest.mark.parametrize("orth_map,shape,triv", ORTH)
def test_orthogonal_weight_after_registration_as_torch(orth_map, shape, triv):
    W = np.random.default_rng(0).standard_normal(shape)
    t, e = _orthogonal_pair(orth_map, shape, triv, W)
    np.testing.assert_allclose(e.weight.detach().numpy(), t.weight.detach().numpy(), atol=1e-12)
    np.testing.assert_allclose(e.parametrizations.weight.original.detach().numpy(),
                               t.parametrizations.weight.original.detach().numpy(), atol=1e-12)
    assert [k for k, _ in e.named_buffers()] == [k for k, _ in t.named_buffers()]
    assert list(e.state_dict()) == list(t.state_dict())
    Q = e.weight.detach()   # orthonormal columns (rows if wide)
    G = Q.mT @ Q if shape[-2] >= shape[-1] else Q @ Q.mT
    np.testing.assert_allclose(G.numpy(), np.broadcast_to(np.eye(G.shape[-1]), G.shape), atol=1e-12)
    # an already orthogonal square weight is kept as it is
    if shape == (4, 4) and triv:
        Q = np.linalg.qr(W)[0]
        _, e = _orthogonal_pair(orth_map, shape, triv, Q)
        np.testing.assert_allclose(e.weight.detach().numpy(), Q, atol=1e-12)


@pytest.mark.parametrize("orth_map,shape,triv", ORTH)
def test_orthogonal_map_values_and_gradients(orth_map, shape, triv):
    # the parametrization applied to any `original` X (near the registered one), values and gradients
    W = np.random.default_rng(0).standard_normal(shape)
    t, e = _orthogonal_pair(orth_map, shape, triv, W)
    X = t.parametrizations.weight.original.detach().numpy() + \
        0.3 * np.random.default_rng(1).standard_normal(shape)
    models = {torch: t, ember: e}

    def run(L, x):   # the parametrization (its `base` buffer) where check_op put x: cpu, or cuda in the fake pass
        return models[L].parametrizations.weight[0].to(x.dtype).to(x.device)(x)
    check_op(run, X, check_dtype=False)


def test_orthogonal_layer_trains_as_torch():
    W = np.random.default_rng(0).standard_normal((4, 4))
    t, e = _orthogonal_pair("cayley", (4, 4), True, W)
    x = np.random.default_rng(1).standard_normal((3, 4))
    for L, m in ((torch, t), (ember, e)):
        opt = L.optim.SGD(m.parameters(), lr=0.1)
        for _ in range(3):
            opt.zero_grad()
            (L.tensor(x) @ m.weight.T).pow(2).sum().backward()
            opt.step()
    np.testing.assert_allclose(e.weight.detach().numpy(), t.weight.detach().numpy(), atol=1e-10)
    Q = e.weight.detach().numpy()
    np.testing.assert_allclose(Q.T @ Q, np.eye(4), atol=1e-10)


@pytest.mark.parametrize("orth_map,shape,triv", [("matrix_exp", (4, 4), True), ("householder", (5, 3), False),
                                                 ("householder", (3, 5), False), ("cayley", (2, 3, 5), True)])
def test_orthogonal_assignment_uses_right_inverse_as_torch(orth_map, shape, triv):
    rng = np.random.default_rng(0)
    t, e = _orthogonal_pair(orth_map, shape, triv, rng.standard_normal(shape))
    Q = np.linalg.qr(rng.standard_normal(shape if shape[-2] >= shape[-1] else shape[:-2] + shape[::-1][:2]))[0]
    if shape[-2] < shape[-1]:
        Q = np.swapaxes(Q, -1, -2)
    torch.manual_seed(1)
    t.weight = torch.tensor(Q)
    e.weight = ember.tensor(Q)
    if triv and shape[-1] != shape[-2]:
        with ember.no_grad():
            e.parametrizations.weight[0].base.copy_(ember.tensor(t.parametrizations.weight[0].base.numpy()))
    np.testing.assert_allclose(e.parametrizations.weight.original.detach().numpy(),
                               t.parametrizations.weight.original.detach().numpy(), atol=1e-12)
    np.testing.assert_allclose(e.weight.detach().numpy(), Q, atol=1e-12)


def test_orthogonal_errors_as_torch():
    def holder(L, shape=(3, 3)):
        return _Holder.make(L, np.ones(shape))
    P = lambda L: L.nn.utils.parametrizations  # noqa: E731
    raises_as_torch(lambda L: P(L).orthogonal(holder(L, (3,))), ValueError,
                    "Expected a matrix or batch of matrices. Got a tensor of 1 dimensions.")
    raises_as_torch(lambda L: P(L).orthogonal(holder(L), orthogonal_map="qr"), ValueError,
                    'orthogonal_map has to be one of "matrix_exp", "cayley", "householder". Got: qr')
    raises_as_torch(lambda L: P(L).orthogonal(holder(L), name="bias"), ValueError,
                    "has no parameter or buffer with name 'bias'")

    def bad_shape(L):
        m = P(L).orthogonal(holder(L))
        m.weight = L.eye(4)
    raises_as_torch(bad_shape, ValueError, "Expected a matrix or batch of matrices of shape (3, 3). Got a tensor "
                    "of shape (4, 4).", "Expected a matrix or batch of matrices of shape torch.Size([3, 3]). Got a "
                    "tensor of shape torch.Size([4, 4]).")

    def no_inverse(L):
        m = P(L).orthogonal(holder(L), orthogonal_map="cayley", use_trivialization=False)
        m.weight = L.eye(3)
    raises_as_torch(no_inverse, NotImplementedError, "It is not possible to assign to the matrix exponential or "
                    "the Cayley parametrizations when use_trivialization=False.")
