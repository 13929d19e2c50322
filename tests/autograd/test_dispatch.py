"""Dispatch modes see every primitive call; PrimitiveLog records and replays them."""
import threading

import numpy as np
import pytest
import torch

import ember
from ember.utils.dispatch import DispatchMode, PrimitiveLog, current_modes, dispatch
from helpers import raises_exactly


class Names(DispatchMode):
    def __init__(self):
        self.names = []

    def __ember_dispatch__(self, prim, inputs, attrs):
        self.names.append(prim.__name__)
        return prim.apply(*inputs, **attrs)


def test_mode_sees_forward_and_backward_calls():
    x = ember.randn(3, 4, requires_grad=True)
    with Names() as m:
        y = (x * 2).exp().sum()
        y.backward()
    assert m.names[:3] == ["Mul", "Exp", "Sum"]
    assert len(m.names) > 3          # the backward's calls too
    assert current_modes() == ()


def test_mode_can_replace_the_result():
    class Zero(DispatchMode):
        def __ember_dispatch__(self, prim, inputs, attrs):
            out = prim.apply(*inputs, **attrs)
            return out * 0 if prim.__name__ == "Exp" else out   # the Mul inside runs without this mode

    x = ember.ones(3)
    with Zero():
        y = x.exp() + 1
    np.testing.assert_array_equal(y.numpy(), np.ones(3, np.float32))


def test_modes_nest_inner_first_and_are_popped_while_they_run():
    seen = []

    class Tag(DispatchMode):
        def __init__(self, tag):
            self.tag = tag

        def __ember_dispatch__(self, prim, inputs, attrs):
            seen.append((self.tag, prim.__name__, len(current_modes())))
            return prim.apply(*inputs, **attrs)

    with Tag("outer"), Tag("inner"):
        ember.ones(2).neg()
    assert seen == [("inner", "Neg", 1), ("outer", "Neg", 0)]


def test_mode_is_per_thread():
    m = Names()
    other = []
    with m:
        t = threading.Thread(target=lambda: other.append(ember.ones(2).neg()))
        t.start()
        t.join()
    assert m.names == []


def test_exit_out_of_order_raises():
    a, b = Names(), Names()
    a.__enter__()
    b.__enter__()
    with pytest.raises(RuntimeError, match="reverse order"):
        a.__exit__(None, None, None)
    b.__exit__(None, None, None)
    a.__exit__(None, None, None)
    assert current_modes() == ()


def test_dispatch_function_is_the_primitive_call():
    from ember.ops.primitives import Add
    a, b = ember.ones(2), ember.full((2,), 2.0)
    np.testing.assert_array_equal(dispatch(Add, (a, b), {}).numpy(), [3, 3])


def test_primitive_log_replays_a_forward_bit_for_bit():
    ember.manual_seed(0)
    model = ember.nn.Sequential(ember.nn.Linear(5, 8), ember.nn.GELU(), ember.nn.LayerNorm(8),
                                ember.nn.Linear(8, 3))
    x = ember.randn(4, 5)
    log = PrimitiveLog()
    with log:
        y = model(x).softmax(-1)
    assert log.counts() == {"Linear": 2, "Gelu": 1, "LayerNorm": 1, "Softmax": 1}
    values = log.replay()
    assert values[y].tobytes() == y._data.tobytes()


def test_primitive_log_replay_runs_on_copies():
    x = ember.ones(3)
    log = PrimitiveLog()
    with log:
        y = x * 3
    x._data[...] = 7          # the log copied x when it first saw it
    assert (log.replay()[y] == 3).all()
    with pytest.raises(KeyError, match="not seen by the log"):
        log.replay()[ember.ones(1)]


# ---------------------------------------------------------------- post-accumulate-grad hooks
def test_post_accumulate_grad_hook_fires_when_the_leaf_is_final_before_backward_ends():
    ember.manual_seed(0)
    a = ember.randn(3, requires_grad=True)      # used late in the forward: final early in backward
    b = ember.randn(3, requires_grad=True)      # used first and last: final only at the very end
    order = []

    class Watch(DispatchMode):
        def __ember_dispatch__(self, prim, inputs, attrs):
            order.append(prim.__name__)
            return prim.apply(*inputs, **attrs)

    seen = {}

    def hook(name):
        def h(p):
            seen[name] = (len(order), p.grad.numpy().copy())
        return h

    a.register_post_accumulate_grad_hook(hook("a"))
    b.register_post_accumulate_grad_hook(hook("b"))
    h = b.exp()
    for _ in range(5):
        h = h.sin()
    y = (h * a).sum()
    with Watch():
        y.backward()
    assert seen["a"][0] < seen["b"][0] < len(order) + 1   # a's hook ran while backward still ran ops
    assert seen["a"][0] < len(order)
    np.testing.assert_array_equal(seen["a"][1], a.grad.numpy())
    np.testing.assert_array_equal(seen["b"][1], b.grad.numpy())


def test_post_accumulate_grad_hook_matches_torch_rules():
    torch = pytest.importorskip("torch")
    x = ember.ones(2, requires_grad=True)
    calls = []
    handle = x.register_post_accumulate_grad_hook(lambda p: calls.append(p.grad.numpy().copy()))
    (x * 3).sum().backward()
    (x * 3).sum().backward()                    # accumulated: the hook sees the running total
    np.testing.assert_array_equal(calls[1], [6, 6])
    ember.autograd.grad((x * 3).sum(), x)       # no accumulation: no call (as torch)
    assert len(calls) == 2
    handle.remove()
    (x * 3).sum().backward()
    assert len(calls) == 2
    # the hook may change .grad in place, as DDP's all-reduce does
    x.grad = None
    def halve(p):
        p.grad.mul_(0.5)
    x.register_post_accumulate_grad_hook(halve)
    (x * 4).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2, 2])
    t = torch.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="non-leaf"):
        (t * 2).register_post_accumulate_grad_hook(lambda p: None)
    with pytest.raises(RuntimeError, match="non-leaf"):
        (x * 2).register_post_accumulate_grad_hook(lambda p: None)
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        ember.ones(2).register_post_accumulate_grad_hook(lambda p: None)
    y = ember.ones(2, requires_grad=True)
    y.register_post_accumulate_grad_hook(lambda p: p)    # returning the tensor itself is allowed
    y.sum().backward()
    for lib, err in ((ember, RuntimeError), (torch, RuntimeError)):
        for z in (lib.ones(2, requires_grad=True), lib.nn.Parameter(lib.ones(2))):   # a Parameter too
            z.register_post_accumulate_grad_hook(lambda p: p.grad * 2)
            with pytest.raises(err, match="should return None"):
                z.sum().backward()
    for lib in (ember, torch):
        z = lib.ones(2, requires_grad=True)
        z.register_post_accumulate_grad_hook(lambda p: 5)
        with pytest.raises(TypeError, match="hook returned 'int'"):
            z.sum().backward()


def test_grad_accumulation_is_an_assign_seen_by_modes_and_the_fast_path_agrees():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    (x * 3).sum().backward()
    with Names() as m:
        (x * 3).sum().backward()          # accumulates: Assign(op='add') through the dispatcher
    assert m.names[-1] == "Assign"
    (x * 3).sum().backward()              # no mode open: the dispatcher's fast path, same result
    np.testing.assert_array_equal(x.grad.numpy(), [9.0, 9.0])
    assert x.grad._vc[0] == 2             # both accumulations bumped the version


# ---------------------------------------------------------------- the dispatcher and check_attrs
from ember.autograd.dispatch import AttrCheck, attrs_key, check_attrs   # noqa: E402
from ember.autograd.function import Primitive              # noqa: E402
from ember.ops.primitives import Sum                       # noqa: E402


def test_dispatch_passes_the_attributes():
    x = ember.ones(2, 3)
    out = dispatch(Sum, (x,), {"axis": (1,), "keepdims": True})
    assert out.shape == (2, 1)
    with DispatchMode():                                  # the base mode runs the call unchanged
        assert Sum.apply(x, axis=(1,), keepdims=True).shape == (2, 1)


def test_a_mode_open_in_another_thread_leaves_this_thread_alone():
    opened, done = threading.Event(), threading.Event()

    def other():
        with Names():
            opened.set()
            done.wait(10)

    t = threading.Thread(target=other)
    t.start()
    try:
        assert opened.wait(10)
        assert (ember.ones(2) + 1).tolist() == [2.0, 2.0]   # no mode open here: straight to the backend
        assert current_modes() == ()
    finally:
        done.set()
        t.join()


def test_a_fresh_thread_has_no_modes():
    seen = []
    t = threading.Thread(target=lambda: seen.append(current_modes()))
    t.start()
    t.join()
    assert seen == [()]


def test_exit_out_of_order_message_and_exceptions_propagate():
    a, b = Names(), Names()
    a.__enter__()
    b.__enter__()
    raises_exactly(lambda: a.__exit__(None, None, None), RuntimeError,
                   "Names: dispatch modes must be exited in the reverse order they were entered", located=False)
    b.__exit__(None, None, None)
    a.__exit__(None, None, None)
    with pytest.raises(ZeroDivisionError):
        with Names():
            1 / 0
    assert current_modes() == ()


def test_attr_check_counts_the_calls_it_checked():
    m = AttrCheck()
    assert m.calls == 0
    with m:
        ember.ones(2).neg()
    assert m.calls == 1


def test_attrs_key_spells_slices():
    assert attrs_key({"b": slice(1, None, 2), "a": (slice(None), 3)}) == \
        (("a", (("slice", None, None, None), 3)), ("b", ("slice", 1, None, 2)))


class _Inherits(Sum):
    pass                                         # Sum's `attrs` by inheritance


class _Undeclared(Primitive):
    def forward(self, a):
        return a


class _ListDeclared(Primitive):
    attrs = ["k"]                                # not a dict: no attribute is declared

    def forward(self, a):
        return a


def test_check_attrs_inherited_missing_and_not_a_dict():
    check_attrs(_Inherits, {"axis": (0,), "keepdims": False})
    raises_exactly(lambda: check_attrs(_Inherits, {"axis": 0.5}), TypeError,
                   "_Inherits: attribute 'axis' expects ", located=False)
    raises_exactly(lambda: check_attrs(_Undeclared, {}), TypeError,
                   "_Undeclared: the primitive declares no `attrs` (name -> type of each attribute)", located=False)
    raises_exactly(lambda: check_attrs(_ListDeclared, {"k": 1}), TypeError,
                   "_ListDeclared: unknown attribute 'k'; allowed attributes: k", located=False)


def test_every_post_accumulate_grad_hook_runs_and_the_bad_return_message():
    for lib in (ember, torch):
        x = lib.ones(2, requires_grad=True)
        calls = []
        x.register_post_accumulate_grad_hook(lambda p: calls.append(1))
        x.register_post_accumulate_grad_hook(lambda p: calls.append(2))
        x.sum().backward()
        assert calls == [1, 2], lib.__name__
    z = ember.ones(2, requires_grad=True)
    z.register_post_accumulate_grad_hook(lambda p: p.grad * 2)
    with pytest.raises(RuntimeError) as e:
        z.sum().backward()
    assert str(e.value) == ("backward: Tensor post accumulate grad hooks should return None (as torch's; a hook "
                            "may change `param.grad` in place)")


def test_replayed_lookup_of_an_unseen_tensor_message():
    log = PrimitiveLog()
    with log:
        ember.ones(1) * 2
    with pytest.raises(KeyError) as e:
        log.replay()[ember.ones(1)]
    assert e.value.args == ("PrimitiveLog.replay: this tensor's array was not seen by the log (made outside the "
                            "logged region, or rebound to a new array without a primitive)",)
