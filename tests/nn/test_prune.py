"""ember/nn/utils/prune.py: pruning by masks, against torch.nn.utils.prune (same weights, same masks)."""
import numpy as np
import pytest
import torch
import torch.nn.utils.prune  # noqa: F401  (torch, like Ember, imports prune on demand)

import ember
import ember.nn.utils.prune  # noqa: F401

RNG = np.random.default_rng(0)
W1 = RNG.permutation(24).reshape(6, 4) / 10 - 1.2      # distinct |w|: no ties for topk to break
W2 = RNG.permutation(12).reshape(2, 6) / 7 - 0.8
X = RNG.standard_normal((5, 4))


def _net(lib):
    net = lib.nn.Sequential(lib.nn.Linear(4, 6), lib.nn.Tanh(), lib.nn.Linear(6, 2)).double()
    with lib.no_grad():
        net[0].weight.copy_(lib.tensor(W1))
        net[2].weight.copy_(lib.tensor(W2))
        net[0].bias.fill_(0.1)
        net[2].bias.fill_(-0.2)
    return net


def _state(lib, net):
    x = lib.tensor(X)
    out = net(x)
    out.sum().backward()
    return (np.asarray(out.detach().numpy()), sorted(n for n, _ in net.named_parameters()),
            sorted(n for n, _ in net.named_buffers()),
            {n: np.asarray(b.numpy()) for n, b in net.named_buffers()},
            {n: np.asarray(p.grad.numpy()) for n, p in net.named_parameters()})


def _same(a, b):
    assert a[1] == b[1] and a[2] == b[2]
    np.testing.assert_allclose(a[0], b[0], rtol=1e-12)
    for k in a[3]:
        np.testing.assert_array_equal(a[3][k], b[3][k], err_msg=k)
    for k in a[4]:
        np.testing.assert_allclose(a[4][k], b[4][k], rtol=1e-12, err_msg=k)


def test_iterative_pruning_and_remove_like_torch():
    def run(lib):
        P = lib.nn.utils.prune
        net = _net(lib)
        P.l1_unstructured(net[0], "weight", amount=0.25)             # 6 smallest |w|
        P.ln_structured(net[0], "weight", amount=2, n=1, dim=0)     # then 2 rows of the rest
        P.l1_unstructured(net[0], "weight", amount=3,               # then 3 more, by other scores
                          importance_scores=lib.tensor(W1[::-1].copy()))
        P.custom_from_mask(net[2], "bias", mask=lib.tensor([1.0, 0.0]))
        P.identity(net[2], "weight")
        first = _state(lib, net)
        kinds = [type(h).__name__ for h in net[0]._forward_pre_hooks.values()]
        pruned = (P.is_pruned(net), P.is_pruned(net[1]))
        net.zero_grad()
        P.remove(net[0], "weight")
        return first, kinds, pruned, _state(lib, net), type(net[0].weight).__name__
    e, t = run(ember), run(torch)
    _same(e[0], t[0])
    assert e[1:3] == t[1:3] and e[4] == t[4]
    _same(e[3], t[3])


def test_global_unstructured_like_torch():
    def run(lib):
        net = _net(lib)
        params = [(net[0], "weight"), (net[2], "weight")]
        lib.nn.utils.prune.l1_unstructured(net[2], "weight", amount=2)
        lib.nn.utils.prune.global_unstructured(params, pruning_method=lib.nn.utils.prune.L1Unstructured,
                                               amount=0.4)
        return _state(lib, net)
    _same(run(ember), run(torch))


def test_random_pruning_counts():
    lin = ember.nn.Linear(5, 4)
    ember.nn.utils.prune.random_unstructured(lin, "weight", amount=0.3)
    assert int(lin.weight_mask.sum()) == 20 - 6 and int((lin.weight == 0).sum()) >= 6
    ember.nn.utils.prune.random_structured(lin, "weight", amount=2, dim=1)
    cols = lin.weight_mask.sum(0).numpy()
    assert (cols == 0).sum() == 2


@pytest.mark.parametrize("call,exc", [
    (lambda P, m: P.l1_unstructured(m, "weight", amount=1.5), ValueError),
    (lambda P, m: P.l1_unstructured(m, "weight", amount="a"), TypeError),
    (lambda P, m: P.l1_unstructured(m, "weight", amount=100), ValueError),
    (lambda P, m: P.ln_structured(m, "bias", amount=1, n=2, dim=0), ValueError),
    (lambda P, m: P.remove(m, "weight"), ValueError),
    (lambda P, m: P.global_unstructured([(m, "weight")], P.LnStructured, amount=1, n=2), TypeError),
])
def test_errors_like_torch(call, exc):
    for lib in (torch, ember):
        with pytest.raises(exc):
            call(lib.nn.utils.prune, lib.nn.Linear(4, 3))
