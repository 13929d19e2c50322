"""ember/autograd/tape.py: GradientTape in TensorFlow's style."""
import numpy as np
import pytest

import ember


def test_watch_constant_and_gradient():
    x = ember.tensor([1.0, 2.0])
    with ember.GradientTape() as tape:
        tape.watch(x)
        y = (x * x * x).sum()
    g = tape.gradient(y, x)
    assert g.tolist() == [3.0, 12.0]
    assert tape.watched_variables()[0] is x


def test_variables_requiring_grad_are_tracked_without_watch():
    w = ember.tensor([2.0], requires_grad=True)
    with ember.GradientTape() as tape:
        y = (w * 5).sum()
    assert tape.gradient(y, w).tolist() == [5.0]
    assert w.grad is None           # the tape does not touch .grad


def test_non_persistent_second_call_errors_persistent_works():
    x = ember.tensor(3.0)
    with ember.GradientTape() as tape:
        tape.watch(x)
        y = x * x
        z = y * x
    assert tape.gradient(z, x).item() == 27.0
    with pytest.raises(RuntimeError, match="only be called once on a non-persistent tape"):
        tape.gradient(y, x)
    x = ember.tensor(3.0)
    with ember.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        z = y * x
    assert tape.gradient(z, x).item() == 27.0
    assert tape.gradient(y, x).item() == 6.0
    assert tape.gradient(z, x).item() == 27.0


def test_gradient_of_lists_and_dicts_and_unconnected():
    a = ember.tensor([1.0, 2.0], requires_grad=True)
    b = ember.tensor(3.0, requires_grad=True)
    c = ember.tensor(1.0, requires_grad=True)
    with ember.GradientTape(persistent=True) as tape:
        y = (a * b).sum()
    ga, gb = tape.gradient(y, [a, b])
    assert ga.tolist() == [3.0, 3.0] and gb.item() == 3.0
    d = tape.gradient(y, {"a": a, "c": c})
    assert set(d) == {"a", "c"} and d["a"].tolist() == [3.0, 3.0] and d["c"] is None
    dz = tape.gradient(y, {"c": c}, unconnected_gradients="zero")
    assert dz["c"].item() == 0.0


def test_tape_records_inside_no_grad_and_nests():
    x = ember.tensor(2.0)
    with ember.no_grad():
        with ember.GradientTape() as outer:
            outer.watch(x)
            with ember.GradientTape() as inner:
                inner.watch(x)
                y = x ** 3
            dy = inner.gradient(y, x)
        assert not ember.is_grad_enabled()
    assert dy.item() == 12.0


def test_watch_integer_tensor_errors():
    with ember.GradientTape() as tape:
        with pytest.raises(TypeError, match="floating point"):
            tape.watch(ember.tensor([1, 2]))


def test_jacobian():
    x = ember.tensor([1.0, 2.0])
    with ember.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
    j = tape.jacobian(y, x)
    np.testing.assert_allclose(j.tolist(), [[2.0, 0.0], [0.0, 4.0]])


def test_nested_tapes_give_second_derivatives():
    # TensorFlow's idiom for a Hessian: the inner gradient is recorded by the outer tape
    x = ember.tensor([0.3, -1.2], dtype=ember.float64)
    with ember.GradientTape() as outer:
        outer.watch(x)
        with ember.GradientTape() as inner:
            inner.watch(x)
            y = (x ** 3 + x.sin()).sum()
        g = inner.gradient(y, x)
    h = outer.gradient(g, x)
    xn = x.detach().numpy()
    np.testing.assert_allclose(g.detach().numpy(), 3 * xn ** 2 + np.cos(xn), rtol=1e-12)
    np.testing.assert_allclose(h.numpy(), 6 * xn - np.sin(xn), rtol=1e-12)


def test_single_tape_gradient_records_nothing():
    x = ember.tensor(2.0)
    with ember.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    g = tape.gradient(y, x)
    assert g.grad_fn is None and not g.requires_grad


def test_watch_a_list_and_tensors_already_requiring_grad():
    a, b = ember.tensor([1.0, 2.0]), ember.tensor(3.0, requires_grad=True)
    with ember.GradientTape() as tape:
        tape.watch([a, b])
        y = (a * b).sum()
    watched = tape.watched_variables()
    assert isinstance(watched, tuple) and len(watched) == 2 and watched[0] is a and watched[1] is b
    ga, gb = tape.gradient(y, [a, b])
    assert ga.tolist() == [3.0, 3.0] and gb.item() == 3.0
    assert a.requires_grad and a.is_leaf


def test_list_of_targets_and_output_gradients():
    x = ember.tensor([1.0, 2.0])
    with ember.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y1, y2 = x * x, x * 3
    assert tape.gradient([y1, y2], x).tolist() == [5.0, 7.0]                     # sum of both targets
    g = tape.gradient(y1, x, output_gradients=[ember.tensor([1.0, -1.0])])
    assert g.tolist() == [2.0, -4.0]


def test_unconnected_zero_keeps_the_connected_gradients():
    a = ember.tensor([1.0, 2.0], requires_grad=True)
    c = ember.tensor([5.0], requires_grad=True)
    with ember.GradientTape(persistent=True) as tape:
        y = (a * a).sum()
    ga, gc = tape.gradient(y, [a, c], unconnected_gradients="zero")
    assert ga.tolist() == [2.0, 4.0] and gc.tolist() == [0.0]
    ga, gc = tape.gradient(y, [a, c])
    assert ga.tolist() == [2.0, 4.0] and gc is None
    with pytest.raises(ValueError, match=r"^GradientTape.gradient: unconnected_gradients must be 'none' or "
                                         r"'zero', got 'zeros'$"):
        tape.gradient(y, a, unconnected_gradients="zeros")


def test_non_persistent_error_message():
    x = ember.tensor(3.0)
    with ember.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    tape.gradient(y, x)
    with pytest.raises(RuntimeError) as e:
        tape.gradient(y, x)
    assert str(e.value) == ("GradientTape.gradient can only be called once on a non-persistent tape; "
                            "use GradientTape(persistent=True)")


def test_jacobian_rows_that_do_not_depend_on_the_source_are_zero():
    x, z = ember.tensor([1.0, 2.0]), ember.tensor([3.0, 4.0])
    with ember.GradientTape(persistent=True) as tape:
        tape.watch([x, z])
        y = ember.cat([x * 2, z * 3])
    np.testing.assert_allclose(tape.jacobian(y, z).tolist(), [[0, 0], [0, 0], [3, 0], [0, 3]])
    np.testing.assert_allclose(tape.jacobian(y, x).tolist(), [[2, 0], [0, 2], [0, 0], [0, 0]])
    with ember.GradientTape(persistent=True) as tape:    # a source the target does not use at all
        tape.watch([x, z])
        y = x * 2
    np.testing.assert_allclose(tape.jacobian(y, z).tolist(), [[0, 0], [0, 0]])


def test_tape_lets_exceptions_through_and_restores_grad_mode():
    with ember.no_grad():
        with pytest.raises(KeyError):
            with ember.GradientTape():
                assert ember.is_grad_enabled()
                raise KeyError("x")
        assert not ember.is_grad_enabled()
    x = ember.tensor(2.0)
    with ember.GradientTape() as tape:     # the failed tape left no trace: this one is not nested
        tape.watch(x)
        y = x * x
    assert tape.gradient(y, x).requires_grad is False
