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
