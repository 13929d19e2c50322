"""ember/func.py: torch.func's transforms (grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian, vmap,
stack_module_state) against torch.func on the same data: values, result structure, nesting, composition
with ordinary autograd, and torch's errors."""
import numpy as np
import pytest
import torch
import torch.func

import ember
import ember.func

RNG = np.random.default_rng(0)
A = RNG.standard_normal((4, 3))
B = RNG.standard_normal((4, 3))
V = RNG.standard_normal(3)


def t(lib, a, **kw):
    return lib.tensor(a, dtype=lib.float64, **kw)


def close(e, tt):
    """Same structure (tuples, lists, dicts), shapes and values."""
    if isinstance(tt, torch.Tensor):
        assert isinstance(e, ember.Tensor), type(e)
        assert tuple(e.shape) == tuple(tt.shape)
        np.testing.assert_allclose(e.detach().numpy(), tt.detach().numpy(), rtol=1e-10, atol=1e-12)
    elif isinstance(tt, dict):
        assert isinstance(e, dict) and list(e) == list(tt)
        for k in tt:
            close(e[k], tt[k])
    elif isinstance(tt, (tuple, list)):
        assert type(e) is type(tt) and len(e) == len(tt)
        for x, y in zip(e, tt):
            close(x, y)
    else:
        assert e == tt


def both(fn):
    res = {L.__name__: fn(L) for L in (ember, torch)}
    close(res["ember"], res["torch"])
    return res["ember"]


CASES = {
    "grad": lambda L: L.func.grad(lambda x: (x.sin() * x).sum())(t(L, A)),
    "grad_argnums": lambda L: L.func.grad(lambda x, y: (x * y.exp()).sum(), argnums=(0, 1))(t(L, A), t(L, B)),
    "grad_argnum_1": lambda L: L.func.grad(lambda x, y: (x * y.exp()).sum(), argnums=1)(t(L, A), t(L, B)),
    "grad_negative_argnum": lambda L: L.func.grad(lambda x, y: (x * y ** 2).sum(), argnums=-1)(t(L, A), t(L, B)),
    "grad_dict": lambda L: L.func.grad(lambda d: (d["a"] * d["b"][0]).sum())({"a": t(L, A), "b": [t(L, B)]}),
    "grad_unused_is_zero": lambda L: L.func.grad(lambda x, y: x.sum(), argnums=(0, 1))(t(L, A), t(L, B)),
    "grad_has_aux": lambda L: L.func.grad(lambda x: ((x ** 2).sum(), {"m": x.mean()}), has_aux=True)(t(L, A)),
    "grad_and_value": lambda L: L.func.grad_and_value(lambda x: (x ** 3).sum())(t(L, A)),
    "grad_and_value_aux": lambda L: L.func.grad_and_value(lambda x: ((x ** 3).sum(), x * 2),
                                                          has_aux=True)(t(L, A)),
    "grad_of_grad": lambda L: L.func.grad(lambda x: L.func.grad(lambda y: (y.sin() ** 2).sum())(x).sum())(t(L, V)),
    "jacrev": lambda L: L.func.jacrev(lambda x: x.exp() * x.roll(1))(t(L, V)),
    "jacrev_argnums": lambda L: L.func.jacrev(lambda x, y: x @ y.T, argnums=(0, 1))(t(L, A[:2]), t(L, B[:3])),
    "jacrev_dict_out": lambda L: L.func.jacrev(lambda x: {"s": x.sum(), "p": x * 2})(t(L, V)),
    "jacrev_aux": lambda L: L.func.jacrev(lambda x: (x ** 2, x.sum()), has_aux=True)(t(L, V)),
    "jacfwd": lambda L: L.func.jacfwd(lambda x: x.tanh() * x[0])(t(L, V)),
    "jacfwd_argnums": lambda L: L.func.jacfwd(lambda x, y: (x * y).sum(0), argnums=(0, 1))(t(L, A), t(L, B)),
    "hessian": lambda L: L.func.hessian(lambda x: (x.sin() * x.roll(1)).sum())(t(L, V)),
    "hessian_matrix_input": lambda L: L.func.hessian(lambda x: (x @ x.T).tanh().sum())(t(L, A[:2, :2])),
    "vjp": lambda L: (lambda o, fn: (o, fn(t(L, B))))(*L.func.vjp(lambda x: x ** 2 * x.sum(), t(L, A))),
    "vjp_two_primals": lambda L: (lambda o, fn: (o, fn(t(L, B[:, 0]))))(*L.func.vjp(lambda x, y: x @ y, t(L, A),
                                                                                   t(L, V))),
    "jvp": lambda L: L.func.jvp(lambda x: (x ** 2).cumsum(0), (t(L, A),), (t(L, B),)),
    "jvp_two_outputs": lambda L: L.func.jvp(lambda x, y: (x * y, (x - y).sum()), (t(L, V), t(L, V[::-1].copy())),
                                            (t(L, V), t(L, V))),
    "vmap": lambda L: L.func.vmap(lambda a, b: (a * b).sum())(t(L, A), t(L, B)),
    "vmap_in_dims": lambda L: L.func.vmap(lambda a, b: a @ b, in_dims=(1, None))(t(L, A), t(L, B)),
    "vmap_out_dims": lambda L: L.func.vmap(lambda a: (a.outer(a), a.sum()), out_dims=(2, 0))(t(L, A)),
    "vmap_nested_in_dims": lambda L: L.func.vmap(lambda d: d["x"] * d["y"], in_dims=({"x": 0, "y": None},))(
        {"x": t(L, A), "y": t(L, V)}),
    "vmap_non_tensor_arg": lambda L: L.func.vmap(lambda a, k: a * k, in_dims=(0, None))(t(L, A), 3.0),
    "vmap_unbatched_output": lambda L: L.func.vmap(lambda a: L.ones(2, dtype=L.float64))(t(L, A)),
    "vmap_vmap": lambda L: L.func.vmap(L.func.vmap(L.dot))(t(L, A).reshape(2, 2, 3), t(L, B).reshape(2, 2, 3)),
    "vmap_grad": lambda L: L.func.vmap(L.func.grad(lambda w, x: (w * x).sin().sum()), in_dims=(None, 0))(
        t(L, V), t(L, A)),
    "vmap_jacrev": lambda L: L.func.vmap(L.func.jacrev(lambda x: x.softmax(-1)))(t(L, A)),
    "torch_vmap": lambda L: L.vmap(L.trace)(t(L, A.reshape(3, 2, 2))),
    "linearize": lambda L: (lambda o, fn: (o, fn(t(L, B)), fn(t(L, A))))(*L.func.linearize(lambda x: x.sin() * x, t(L, A))),
    "functionalize": lambda L: L.func.functionalize(lambda x: x.clone().mul_(2).add_(1))(t(L, A)),
    "debug_unwrap": lambda L: L.func.debug_unwrap(t(L, A)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_transform_matches_torch_func(name):
    both(CASES[name])


def _model(L):
    m = L.nn.Sequential(L.nn.Linear(3, 5), L.nn.Tanh(), L.nn.Linear(5, 2)).double()
    with L.no_grad():
        for i, p in enumerate(m.parameters()):
            p.copy_(L.tensor(np.cos(np.arange(p.numel()) + i).reshape(tuple(p.shape))))
    return m


def test_per_sample_gradients_and_maml_through_functional_call():
    y = np.array([0, 1, 1, 0])

    def run(L):
        m = _model(L)
        params = {k: v.detach() for k, v in m.named_parameters()}

        def loss(p, x, target):
            return L.nn.functional.cross_entropy(L.func.functional_call(m, p, (x.unsqueeze(0),)), target.unsqueeze(0))
        per_sample = L.func.vmap(L.func.grad(loss), in_dims=(None, 0, 0))(params, t(L, A), L.tensor(y))

        def inner(p, x):   # one SGD step, differentiated through (second order)
            g = L.func.grad(lambda q: L.func.functional_call(m, q, (x,)).pow(2).mean())(p)
            return {k: p[k] - 0.1 * g[k] for k in p}
        meta = L.func.grad(lambda p, x: L.func.functional_call(m, inner(p, x), (x,)).pow(2).mean())(params, t(L, A))
        ntk = L.func.jacrev(lambda p, x: L.func.functional_call(m, p, (x,)))(params, t(L, A[:2]))
        return per_sample, meta, ntk
    per_sample, _, _ = both(run)
    assert not any(g.requires_grad for g in per_sample.values())


def test_results_stay_differentiable_when_the_function_reads_a_tensor_that_requires_grad():
    def run(L):
        w = t(L, V, requires_grad=True)
        g = L.func.grad(lambda x: (w * x ** 2).sum())(t(L, V))           # closes over w
        assert g.requires_grad
        g.sum().backward()
        x = t(L, V, requires_grad=True)                                   # the input itself requires grad
        h = L.func.jacrev(lambda x: x.sin())(x)
        (hx,) = L.autograd.grad(h.sum(), x)
        plain = L.func.grad(lambda x: (x ** 2).sum())(t(L, V))
        with L.no_grad():
            under_no_grad = L.func.grad(lambda x: (w * x).sum())(t(L, V))
        return w.grad, hx, plain.requires_grad, under_no_grad.requires_grad, under_no_grad
    assert both(run)[2:4] == (False, False)


def test_stack_module_state_and_an_ensemble_through_vmap():
    def run(L):
        models = [_model(L) for _ in range(3)]
        with L.no_grad():
            for i, m in enumerate(models):
                m[0].bias.add_(i)
        params, buffers = L.func.stack_module_state(models)
        out = L.func.vmap(lambda p, b, x: L.func.functional_call(models[0], (p, b), (x,)), in_dims=(0, 0, None))(
            params, buffers, t(L, A))
        return {k: tuple(v.shape) for k, v in params.items()}, params["0.bias"].requires_grad, out
    both(run)


def test_vmap_randomness_as_torch():
    for L in (ember, torch):
        with pytest.raises(RuntimeError, match="called random operation while in randomness error mode"):
            L.func.vmap(lambda a: L.nn.functional.dropout(a, 0.5))(L.ones(3, 4))
        same = L.func.vmap(lambda a: a + L.rand(4), randomness="same")(L.zeros(3, 4))
        diff = L.func.vmap(lambda a: a + L.rand(4), randomness="different")(L.zeros(3, 4))
        assert bool((same == same[0]).all()) and not bool((diff == diff[0]).all())
        with pytest.raises(RuntimeError, match="Only allowed values for randomness"):
            L.func.vmap(lambda a: a, randomness="sometimes")


@pytest.mark.parametrize("call, exc, match", [
    (lambda L: L.func.grad(lambda x: x ** 2)(L.ones(2)), RuntimeError,
     r"Expected f\(\*args\) to return a scalar Tensor, got tensor with 1 dims"),
    (lambda L: L.func.grad(lambda x: x.sum())(L.ones(2, dtype=L.int64)), RuntimeError,
     "only Tensors of floating point dtype can require gradients"),
    (lambda L: L.func.grad(lambda x: x.sum(), argnums=2)(L.ones(2)), RuntimeError,
     "Got argnum=2, but only 1 positional inputs"),
    (lambda L: L.func.grad(lambda x: x.sum(), has_aux=True)(L.ones(2)), RuntimeError,
     "output of function f should be a tuple"),
    (lambda L: L.func.vmap(lambda a, b: a + b)(L.ones(3, 2), L.ones(4, 2)), ValueError,
     r"Expected all tensors to have the same size in the mapped dimension, got sizes \[3, 4\]"),
    (lambda L: L.func.vmap(lambda a: 3)(L.ones(3)), ValueError, "must only return Tensors"),
    (lambda L: L.func.vmap(lambda a, k: a * k)(L.ones(3), 2.0), ValueError, "cannot vmap over non-Tensor"),
    (lambda L: L.func.vmap(lambda a: a, in_dims=2)(L.ones(3, 2)), ValueError,
     "expected in_dim to satisfy -2 <= in_dim < 2"),
    (lambda L: L.func.vmap(lambda a, b: a, in_dims=(0,))(L.ones(3), L.ones(3)), ValueError,
     "in_dims is not compatible with the structure of `inputs`"),
], ids=["grad_not_scalar", "grad_int_input", "argnums_range", "aux_not_tuple", "vmap_sizes", "vmap_non_tensor_out",
        "vmap_non_tensor_in", "vmap_in_dim_range", "vmap_in_dims_structure"])
def test_errors_as_torch(call, exc, match):
    for L in (ember, torch):
        with pytest.raises(exc, match=match):
            call(L)


def test_replace_all_batch_norm_modules_drops_running_statistics_as_torch():
    def run(L):
        m = L.nn.Sequential(L.nn.Conv2d(1, 2, 1), L.nn.BatchNorm2d(2), L.nn.Sequential(L.nn.BatchNorm1d(3)))
        assert L.func.replace_all_batch_norm_modules_(m) is m
        bns = [m[1], m[2][0]]
        return [(b.running_mean, b.running_var, b.num_batches_tracked, b.track_running_stats) for b in bns], \
            sorted(m.state_dict())
    both(run)
