"""grad_fn.next_functions: the recorded graph walked as in torch (node names, AccumulateGrad for leaves, None for
inputs that need no gradient)."""
import torch

import ember


def test_next_functions_walk_the_graph_as_torchs():
    def walk(lib):
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        b = lib.tensor([3.0, 4.0])
        out = ((a * b).exp() + a).sum()
        names, stack = [], [(out.grad_fn, "")]
        while stack:
            fn, path = stack.pop()
            if fn is None:
                names.append(path + "None")
                continue
            name = type(fn).__name__ if lib is torch else fn.name
            names.append(path + name.replace("Backward0", "").replace("Backward", ""))
            if name == "AccumulateGrad":
                assert fn.variable is a
            stack.extend((f, path + "  ") for f, _ in fn.next_functions)
        return names

    assert walk(ember) == walk(torch)


def test_accumulate_grad_equality_hash_and_repr():
    # torch hands out one AccumulateGrad object per leaf; Ember makes one per look-up that compares equal
    x, w = ember.ones(2, requires_grad=True), ember.ones(2, requires_grad=True)
    a = (x * 2).grad_fn.next_functions[0][0]
    b = (x + 1).grad_fn.next_functions[0][0]
    c = (w * 2).grad_fn.next_functions[0][0]
    assert a == b and hash(a) == hash(b) and len({a, b, c}) == 2
    assert a != c and a != "AccumulateGrad"
    assert a.variable is x and repr(a) == "<AccumulateGrad>"
    t = torch.ones(2, requires_grad=True)
    assert (t * 2).grad_fn.next_functions[0][0] == (t + 1).grad_fn.next_functions[0][0]
