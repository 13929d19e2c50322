"""ember.keras.optimizers against torch.optim (same starting weights and gradients), with Keras 3's rules
(optimizers/base_optimizer.py): decoupled `weight_decay` for every optimizer, one clipping option at most."""
import numpy as np
import pytest
import torch

import ember
from ember import keras
from ember.keras import optimizers

W0 = [np.array([[0.5, -1.0, 2.0], [0.25, 3.0, -0.5]]), np.array([1.0, -2.0])]
GRADS = [[np.array([[0.1, -0.2, 0.3], [0.4, 0.5, -0.6]]), np.array([2.0, -0.5])],
         [np.array([[-0.3, 0.2, 0.1], [0.0, 0.7, 0.2]]), np.array([-1.0, 1.5])],
         [np.array([[0.5, 0.5, -0.5], [1.0, -1.0, 0.3]]), np.array([0.2, 0.1])]]


def run_keras(opt):
    ws = [ember.nn.Parameter(ember.tensor(w)) for w in W0]
    for gs in GRADS:
        opt.apply_gradients(zip([ember.tensor(g) for g in gs], ws))
    return [w.detach().numpy() for w in ws]


def run_torch(make, before_step=None):
    ws = [torch.nn.Parameter(torch.tensor(w)) for w in W0]
    opt = make(ws)
    for gs in GRADS:
        for w, g in zip(ws, gs):
            w.grad = torch.tensor(g)
        if before_step:
            before_step(ws)
        opt.step()
    return [w.detach().numpy() for w in ws]


def assert_same(a, b):
    for x, y in zip(a, b):
        np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-12)


def test_adam_weight_decay_is_decoupled_as_keras():
    """Keras 3 decays every variable by lr * weight_decay before the update (torch's AdamW), for Adam too;
    Ember's Adam used to add an L2 term to the gradient (torch's Adam(weight_decay=...))."""
    got = run_keras(optimizers.Adam(0.1, weight_decay=0.5))
    assert_same(got, run_torch(lambda p: torch.optim.AdamW(p, lr=0.1, eps=1e-7, weight_decay=0.5)))
    assert_same(run_keras(optimizers.AdamW(0.1)),
                run_torch(lambda p: torch.optim.AdamW(p, lr=0.1, eps=1e-7, weight_decay=0.004)))
    assert_same(run_keras(optimizers.AdamW(0.1, weight_decay=0.5, amsgrad=True)),
                run_torch(lambda p: torch.optim.AdamW(p, lr=0.1, eps=1e-7, weight_decay=0.5, amsgrad=True)))
    assert_same(run_keras(optimizers.Adam(0.1)), run_torch(lambda p: torch.optim.Adam(p, lr=0.1, eps=1e-7)))


@pytest.mark.parametrize("name, make_keras, make_torch", [
    ("sgd", lambda: optimizers.SGD(0.1, momentum=0.9, weight_decay=0.5),
     lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9)),
    ("rmsprop", lambda: optimizers.RMSprop(0.1, weight_decay=0.5),
     lambda p: torch.optim.RMSprop(p, lr=0.1, alpha=0.9, eps=1e-7)),
    ("adagrad", lambda: optimizers.Adagrad(0.1, weight_decay=0.5),
     lambda p: torch.optim.Adagrad(p, lr=0.1, eps=1e-7, initial_accumulator_value=0.1)),
    ("adadelta", lambda: optimizers.Adadelta(0.1, weight_decay=0.5),
     lambda p: torch.optim.Adadelta(p, lr=0.1, rho=0.95, eps=1e-7)),
])
def test_weight_decay_of_every_optimizer_is_applied_before_the_update(name, make_keras, make_torch):
    def decay(ws):
        with torch.no_grad():
            for w in ws:
                w.mul_(1 - 0.1 * 0.5)
    opt = make_keras()
    assert_same(run_keras(opt), run_torch(make_torch, decay))
    assert opt.get_config()["weight_decay"] == 0.5
    assert type(optimizers.get(optimizers.serialize(opt))).__name__ == type(opt).__name__
    assert optimizers.get(optimizers.serialize(opt)).weight_decay == 0.5


def test_weight_decay_follows_the_current_learning_rate():
    opt = optimizers.SGD(0.1, weight_decay=0.5)
    w = ember.nn.Parameter(ember.tensor([2.0], dtype=ember.float64))
    opt.apply_gradients([(ember.tensor([0.0], dtype=ember.float64), w)])
    opt.learning_rate = 0.2
    opt.apply_gradients([(ember.tensor([0.0], dtype=ember.float64), w)])
    assert w.item() == pytest.approx(2.0 * (1 - 0.05) * (1 - 0.1), rel=1e-12)
    opt.apply_gradients([(None, w)])                  # no gradient: no update, no decay (Keras filters it)
    assert w.item() == pytest.approx(2.0 * (1 - 0.05) * (1 - 0.1), rel=1e-12)


def test_clipping_options_against_torch():
    def clip(fn):
        return lambda ws: fn(ws)
    per_var = lambda ws: [torch.nn.utils.clip_grad_norm_([w], 0.5) for w in ws]   # noqa: E731
    assert_same(run_keras(optimizers.SGD(0.1, clipnorm=0.5)),
                run_torch(lambda p: torch.optim.SGD(p, lr=0.1), clip(per_var)))
    assert_same(run_keras(optimizers.SGD(0.1, global_clipnorm=0.5)),
                run_torch(lambda p: torch.optim.SGD(p, lr=0.1), lambda ws: torch.nn.utils.clip_grad_norm_(ws, 0.5)))
    assert_same(run_keras(optimizers.SGD(0.1, clipvalue=0.25)),
                run_torch(lambda p: torch.optim.SGD(p, lr=0.1), lambda ws: torch.nn.utils.clip_grad_value_(ws, 0.25)))


def test_only_one_clipping_option():
    with pytest.raises(ValueError, match=r"^Only one of `clipnorm`, `clipvalue` and `global_clipnorm` can be set. "
                                         r"Received: clipnorm=1.0, clipvalue=0.5, global_clipnorm=None$"):
        optimizers.Adam(clipnorm=1.0, clipvalue=0.5)
    with pytest.raises(ValueError, match=r"clipnorm=None, clipvalue=0.5, global_clipnorm=2.0$"):
        optimizers.SGD(clipvalue=0.5, global_clipnorm=2.0)


def test_a_compiled_model_decays_its_weights():
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1, use_bias=False, kernel_initializer="ones")])
    model.compile(optimizers.SGD(0.1, weight_decay=0.5), "mse")
    model.fit(np.zeros((4, 2), np.float32), np.zeros(4, np.float32), batch_size=4, verbose=0)   # zero gradient
    np.testing.assert_allclose(model.get_weights()[0], np.full((2, 1), 0.95), rtol=1e-6)


def test_keras_defaults_and_configs():
    """Keras 3's defaults (optimizers/*.py) and the config each optimizer saves."""
    sgd = optimizers.SGD()
    assert sgd.get_config() == {"learning_rate": 0.01, "momentum": 0.0, "nesterov": False, "weight_decay": None}
    assert optimizers.Adam().get_config() == {"learning_rate": 0.001, "beta_1": 0.9, "beta_2": 0.999,
                                              "epsilon": 1e-7, "amsgrad": False, "weight_decay": None}
    assert optimizers.AdamW().get_config()["weight_decay"] == 0.004
    assert optimizers.RMSprop().get_config() == {"learning_rate": 0.001, "rho": 0.9, "momentum": 0.0,
                                                 "epsilon": 1e-7, "centered": False}
    assert optimizers.Adagrad().get_config() == {"learning_rate": 0.001, "initial_accumulator_value": 0.1,
                                                 "epsilon": 1e-7}
    assert optimizers.Adadelta().get_config() == {"learning_rate": 0.001, "rho": 0.95, "epsilon": 1e-7}
    assert optimizers.SGD(clipnorm=1.0).get_config()["clipnorm"] == 1.0
    assert optimizers.Adam(global_clipnorm=2.0).get_config()["global_clipnorm"] == 2.0
    assert optimizers.Adam(clipvalue=0.5).get_config()["clipvalue"] == 0.5
    for name, cls in optimizers.ALL.items():
        opt = optimizers.get(name.upper())
        assert type(opt) is cls and opt.name == cls.__name__.lower()
        back = optimizers.get(optimizers.serialize(opt))
        assert type(back) is cls and back.get_config() == opt.get_config()
    assert optimizers.SGD(name="mine").name == "mine"
    assert repr(optimizers.Adam(0.5)) == "<keras.optimizers.Adam learning_rate=0.5>"


def test_bad_arguments_and_identifiers():
    with pytest.raises(ValueError, match=r"^Adam: learning_rate must be a non-negative number, got -0.1$"):
        optimizers.Adam(-0.1)
    with pytest.raises(ValueError, match=r"^SGD: learning_rate must be a non-negative number, got '0.1'$"):
        optimizers.SGD("0.1")
    assert optimizers.SGD(0).learning_rate == 0.0
    with pytest.raises(TypeError, match=r"not an ember.optim optimizer"):
        optimizers.get(ember.optim.SGD([ember.nn.Parameter(ember.zeros(1))], lr=0.1))
    with pytest.raises(ValueError, match=r"^Could not interpret optimizer identifier: 'lion'. Known optimizers: "
                                         r"adadelta, adagrad, adam, adamw, rmsprop, sgd, or an "):
        optimizers.get("lion")
    with pytest.raises(ValueError, match=r"^Could not interpret optimizer identifier: None"):
        optimizers.get(None)


def test_variables_learning_rate_and_apply_errors():
    w, b = ember.nn.Parameter(ember.ones(2, 3)), ember.nn.Parameter(ember.zeros(3))
    opt = optimizers.SGD(0.5, momentum=0.9)
    assert not opt.built and opt.variables == []
    opt.build([w, b])
    assert opt.built and opt.variables == [(), (), (2, 3), (3,)]          # iterations, lr, one momentum each
    assert optimizers.SGD(0.5).variables == [] and len(_built(optimizers.SGD(0.5), w, b).variables) == 2
    assert len(_built(optimizers.Adam(), w, b).variables) == 2 + 4
    assert len(_built(optimizers.Adam(amsgrad=True), w, b).variables) == 2 + 6
    assert len(_built(optimizers.RMSprop(momentum=0.9, centered=True), w, b).variables) == 2 + 6
    assert len(_built(optimizers.RMSprop(), w, b).variables) == 2 + 2
    assert len(_built(optimizers.Adagrad(), w, b).variables) == 2 + 2
    assert len(_built(optimizers.Adadelta(), w, b).variables) == 2 + 4
    opt.learning_rate = 0.25                              # reaches the built optimizer's groups
    assert opt.lr == 0.25 and opt._impl.param_groups[0]["lr"] == 0.25
    g = ember.ones(2, 3)
    assert opt.apply([g, None]) == 1                      # variables it was built with
    np.testing.assert_allclose(w.detach().numpy(), np.full((2, 3), 0.75))
    assert w.grad is None and b.grad is None
    with pytest.raises(ValueError, match=r"^SGD.apply: got 1 gradients for 2 variables$"):
        opt.apply([g])
    with pytest.raises(ValueError, match=r"^SGD: gradient of shape \(3,\) for variable  of shape \(2, 3\)$"):
        opt.apply_gradients([(ember.ones(3), w)])
    with pytest.raises(ValueError, match=r"^SGD: unknown variable\(s\) \[\(4,\)\]: this optimizer was built for 2 "
                                         r"other variables"):
        opt.apply_gradients([(ember.ones(4), ember.nn.Parameter(ember.ones(4)))])


def _built(opt, *variables):
    opt.build(variables)
    return opt


def test_minimize_with_a_tape():
    w = ember.nn.Parameter(ember.tensor([1.0, -2.0], dtype=ember.float64))
    opt = optimizers.SGD(0.1)
    with ember.GradientTape() as tape:
        loss = (w * w).sum()
    opt.minimize(loss, [w], tape=tape)
    np.testing.assert_allclose(w.detach().numpy(), [0.8, -1.6])
    assert opt.iterations == 1
    with pytest.raises(ValueError, match=r"^minimize: pass the GradientTape that recorded `loss` \(tape=tape\)$"):
        opt.minimize(loss, [w])


@pytest.mark.parametrize("make_keras, make_torch", [
    (lambda: optimizers.Adam(0.1, beta_1=0.5, beta_2=0.7, epsilon=1e-3),
     lambda p: torch.optim.Adam(p, lr=0.1, betas=(0.5, 0.7), eps=1e-3)),
    (lambda: optimizers.AdamW(0.1, weight_decay=0.2, beta_1=0.5, beta_2=0.7, amsgrad=True),
     lambda p: torch.optim.AdamW(p, lr=0.1, betas=(0.5, 0.7), eps=1e-7, weight_decay=0.2, amsgrad=True)),
    (lambda: optimizers.SGD(0.1, momentum=0.9, nesterov=True),
     lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True)),
    (lambda: optimizers.RMSprop(0.1, rho=0.8, momentum=0.5, epsilon=1e-3, centered=True),
     lambda p: torch.optim.RMSprop(p, lr=0.1, alpha=0.8, eps=1e-3, momentum=0.5, centered=True)),
    (lambda: optimizers.Adagrad(0.1, initial_accumulator_value=0.5, epsilon=1e-3),
     lambda p: torch.optim.Adagrad(p, lr=0.1, eps=1e-3, initial_accumulator_value=0.5)),
    (lambda: optimizers.Adadelta(0.5, rho=0.7, epsilon=1e-3),
     lambda p: torch.optim.Adadelta(p, lr=0.5, rho=0.7, eps=1e-3)),
])
def test_every_option_reaches_the_update(make_keras, make_torch):
    assert_same(run_keras(make_keras()), run_torch(make_torch))


def test_adamw_defaults_and_options():
    opt = optimizers.AdamW(clipnorm=1.0, name="w")
    assert (opt.learning_rate, opt.weight_decay, opt.clipnorm, opt.name) == (0.001, 0.004, 1.0, "w")
    assert optimizers.get({"class_name": "Adam"}).get_config() == optimizers.Adam().get_config()


def test_messages_name_the_variable():
    w = keras.Variable(np.zeros((2, 3), np.float32), name="kernel")
    w.path = "dense/kernel"
    other = keras.Variable(np.zeros(4, np.float32), name="bias")
    other.path = "dense/bias"
    opt = optimizers.SGD()
    with pytest.raises(ValueError, match=r"^SGD: gradient of shape \(3,\) for variable dense/kernel of shape "
                                         r"\(2, 3\)$"):
        opt.apply_gradients([(ember.ones(3), w)])
    opt.apply_gradients([(ember.ones(2, 3), w)])
    with pytest.raises(ValueError, match=r"^SGD: unknown variable\(s\) \['dense/bias'\]: this optimizer was built "
                                         r"for 1 other variables \(make one optimizer per set of variables\)$"):
        opt.apply_gradients([(ember.ones(2, 3), w), (ember.ones(4), other)])
    with pytest.raises(TypeError, match=r"^compile\(optimizer=...\) takes a Keras optimizer \('adam' or "
                                        r"ember.keras.optimizers.Adam\(...\)\), not an ember.optim optimizer, which is "
                                        r"bound to parameters already$"):
        optimizers.get(ember.optim.SGD([ember.nn.Parameter(ember.zeros(1))], lr=0.1))
