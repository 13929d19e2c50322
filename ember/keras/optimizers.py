"""Keras's optimizers (names, arguments and defaults: Adam's learning rate is 0.001, SGD's 0.01) over
`ember.optim`'s update rules.

A Keras optimizer is made without its variables and learns them on first use:
`optimizer.apply_gradients(zip(grads, variables))` (TensorFlow's GradientTape habit) or `model.fit`.
`learning_rate` can be read and set at any time (callbacks do). Known differences from Keras: Adam and
RMSprop add `epsilon` where torch does (after the bias-corrected square root, outside the root), which
changes results only when the second moments are about `epsilon` squared. `weight_decay` is Keras's
decoupled decay for every optimizer (`w -= learning_rate * weight_decay * w` before each update, torch's
AdamW rule), not an L2 term added to the gradient; one of `clipnorm` (per variable), `clipvalue` and
`global_clipnorm` at most, as Keras.
"""
from __future__ import annotations

from .. import optim as _optim
from ..autograd.grad_mode import no_grad
from ..nn.utils.clip_grad import clip_grad_norm_, clip_grad_value_

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "get", "serialize"]


class Optimizer:
    """Base: `_make(params)` builds the `ember.optim` optimizer; `_slots` is the number of per-variable
    state tensors Keras counts in `summary()` ("Optimizer params")."""
    _slots = 0

    def __init__(self, learning_rate=0.001, weight_decay=None, clipnorm=None, clipvalue=None, global_clipnorm=None,
                 name=None):
        if not isinstance(learning_rate, (int, float)) or learning_rate < 0:
            raise ValueError(f"{type(self).__name__}: learning_rate must be a non-negative number, got "
                             f"{learning_rate!r}")
        if sum(a is not None for a in (clipnorm, clipvalue, global_clipnorm)) > 1:
            raise ValueError(f"Only one of `clipnorm`, `clipvalue` and `global_clipnorm` can be set. Received: "
                             f"clipnorm={clipnorm}, clipvalue={clipvalue}, global_clipnorm={global_clipnorm}")
        self._learning_rate = float(learning_rate)
        self.weight_decay = weight_decay
        self.clipnorm, self.clipvalue, self.global_clipnorm = clipnorm, clipvalue, global_clipnorm
        self.name = name or type(self).__name__.lower()
        self._impl = None
        self._variables = []
        self.iterations = 0

    # --- the learning rate, settable at any time ----------------------------------------------------
    @property
    def learning_rate(self) -> float:
        return self._learning_rate

    @learning_rate.setter
    def learning_rate(self, value) -> None:
        self._learning_rate = float(value)
        if self._impl is not None:
            for group in self._impl.param_groups:
                group["lr"] = self._learning_rate

    lr = learning_rate

    @property
    def built(self) -> bool:
        return self._impl is not None

    @property
    def variables(self) -> list:
        """What Keras counts as the optimizer's variables: iterations, learning rate, and the slots."""
        return self._variables

    def build(self, var_list) -> None:
        var_list = list(var_list)
        self._impl = self._make(var_list)
        self._vars = var_list
        self._var_ids = {id(v) for v in var_list}
        self._variables = [(), ()] + [tuple(v.shape) for v in var_list for _ in range(self._slots_for(v))]

    def _slots_for(self, v) -> int:
        return self._slots

    def apply_gradients(self, grads_and_vars) -> int:
        """Apply one update: `grads_and_vars` is pairs (gradient, variable), as `zip(grads, variables)`.
        A None gradient leaves its variable as it is."""
        pairs = list(grads_and_vars)
        return self.apply([g for g, _ in pairs], [v for _, v in pairs])

    def apply(self, grads, trainable_variables=None) -> int:
        grads = list(grads)
        variables = list(trainable_variables) if trainable_variables is not None else self._vars
        if len(grads) != len(variables):
            raise ValueError(f"{type(self).__name__}.apply: got {len(grads)} gradients for {len(variables)} "
                             f"variables")
        if self._impl is None:
            self.build(variables)
        elif any(id(v) not in self._var_ids for v in variables):
            unknown = [getattr(v, "path", tuple(v.shape)) for v in variables if id(v) not in self._var_ids]
            raise ValueError(f"{type(self).__name__}: unknown variable(s) {unknown}: this optimizer was built "
                             f"for {len(self._vars)} other variables (make one optimizer per set of variables)")
        for g, v in zip(grads, variables):
            if g is not None and tuple(g.shape) != tuple(v.shape):
                raise ValueError(f"{type(self).__name__}: gradient of shape {tuple(g.shape)} for variable "
                                 f"{getattr(v, 'path', '')} of shape {tuple(v.shape)}")
            v.grad = None if g is None else g.detach()
        with no_grad():
            live = [v for v in variables if v.grad is not None]
            if self.clipvalue is not None:
                clip_grad_value_(live, self.clipvalue)
            if self.clipnorm is not None:
                for v in live:
                    clip_grad_norm_([v], self.clipnorm)
            if self.global_clipnorm is not None:
                clip_grad_norm_(live, self.global_clipnorm)
            if self.weight_decay:   # Keras's decoupled decay, before the update (base_optimizer._apply_weight_decay)
                for v in live:
                    v.mul_(1.0 - self._learning_rate * self.weight_decay)
        self._impl.step()
        for v in self._vars:
            v.grad = None
        self.iterations += 1
        return self.iterations

    def minimize(self, loss, var_list, tape=None) -> None:
        """Gradients of `loss` (taken with `tape`) applied to `var_list`."""
        if tape is None:
            raise ValueError("minimize: pass the GradientTape that recorded `loss` (tape=tape)")
        self.apply_gradients(zip(tape.gradient(loss, var_list), var_list))

    def get_config(self) -> dict:
        config = {"learning_rate": self._learning_rate}
        for k in ("weight_decay", "clipnorm", "clipvalue", "global_clipnorm"):
            if getattr(self, k) is not None:
                config[k] = getattr(self, k)
        return config

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        return f"<keras.optimizers.{type(self).__name__} learning_rate={self._learning_rate}>"


class SGD(Optimizer):
    """`w -= learning_rate * g`, with optional (Nesterov) momentum; Keras's default learning rate 0.01."""

    def __init__(self, learning_rate=0.01, momentum=0.0, nesterov=False, weight_decay=None, **kwargs):
        super().__init__(learning_rate, weight_decay, **kwargs)
        self.momentum, self.nesterov = float(momentum), nesterov

    def _slots_for(self, v):
        return 1 if self.momentum else 0

    def _make(self, params):
        return _optim.SGD(params, lr=self._learning_rate, momentum=self.momentum, nesterov=self.nesterov)

    def get_config(self):
        return {**super().get_config(), "momentum": self.momentum, "nesterov": self.nesterov,
                "weight_decay": self.weight_decay}


class Adam(Optimizer):
    _slots = 2

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, amsgrad=False,
                 weight_decay=None, **kwargs):
        super().__init__(learning_rate, weight_decay, **kwargs)
        self.beta_1, self.beta_2, self.epsilon, self.amsgrad = beta_1, beta_2, epsilon, amsgrad

    def _slots_for(self, v):
        return 3 if self.amsgrad else 2

    def _make(self, params):
        return _optim.Adam(params, lr=self._learning_rate, betas=(self.beta_1, self.beta_2), eps=self.epsilon,
                           amsgrad=self.amsgrad)

    def get_config(self):
        return {**super().get_config(), "beta_1": self.beta_1, "beta_2": self.beta_2, "epsilon": self.epsilon,
                "amsgrad": self.amsgrad, "weight_decay": self.weight_decay}


class AdamW(Adam):
    """Adam with decoupled weight decay (Keras's default weight_decay 0.004)."""

    def __init__(self, learning_rate=0.001, weight_decay=0.004, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 amsgrad=False, **kwargs):
        super().__init__(learning_rate, beta_1, beta_2, epsilon, amsgrad, weight_decay=weight_decay, **kwargs)


class RMSprop(Optimizer):
    def __init__(self, learning_rate=0.001, rho=0.9, momentum=0.0, epsilon=1e-7, centered=False, **kwargs):
        super().__init__(learning_rate, **kwargs)
        self.rho, self.momentum, self.epsilon, self.centered = rho, momentum, epsilon, centered

    def _slots_for(self, v):
        return 1 + (1 if self.momentum else 0) + (1 if self.centered else 0)

    def _make(self, params):
        return _optim.RMSprop(params, lr=self._learning_rate, alpha=self.rho, eps=self.epsilon,
                              momentum=self.momentum, centered=self.centered)

    def get_config(self):
        return {**super().get_config(), "rho": self.rho, "momentum": self.momentum, "epsilon": self.epsilon,
                "centered": self.centered}


class Adagrad(Optimizer):
    _slots = 1

    def __init__(self, learning_rate=0.001, initial_accumulator_value=0.1, epsilon=1e-7, **kwargs):
        super().__init__(learning_rate, **kwargs)
        self.initial_accumulator_value, self.epsilon = initial_accumulator_value, epsilon

    def _make(self, params):
        return _optim.Adagrad(params, lr=self._learning_rate, eps=self.epsilon,
                              initial_accumulator_value=self.initial_accumulator_value)

    def get_config(self):
        return {**super().get_config(), "initial_accumulator_value": self.initial_accumulator_value,
                "epsilon": self.epsilon}


class Adadelta(Optimizer):
    _slots = 2

    def __init__(self, learning_rate=0.001, rho=0.95, epsilon=1e-7, **kwargs):
        super().__init__(learning_rate, **kwargs)
        self.rho, self.epsilon = rho, epsilon

    def _make(self, params):
        return _optim.Adadelta(params, lr=self._learning_rate, rho=self.rho, eps=self.epsilon)

    def get_config(self):
        return {**super().get_config(), "rho": self.rho, "epsilon": self.epsilon}


ALL = {"sgd": SGD, "adam": Adam, "adamw": AdamW, "rmsprop": RMSprop, "adagrad": Adagrad, "adadelta": Adadelta}


def get(identifier) -> Optimizer:
    """'adam' -> Adam() with Keras's defaults; an Optimizer as it is; a dict as `serialize` writes it."""
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, _optim.Optimizer):
        raise TypeError("compile(optimizer=...) takes a Keras optimizer ('adam' or "
                        "ember.keras.optimizers.Adam(...)), not an ember.optim optimizer, which is bound to "
                        "parameters already")
    if isinstance(identifier, dict):
        return ALL[identifier["class_name"].lower()].from_config(identifier.get("config", {}))
    if isinstance(identifier, str) and identifier.lower() in ALL:
        return ALL[identifier.lower()]()
    raise ValueError(f"Could not interpret optimizer identifier: {identifier!r}. Known optimizers: "
                     f"{', '.join(sorted(ALL))}, or an ember.keras.optimizers.Optimizer")


def serialize(optimizer: Optimizer) -> dict:
    return {"class_name": type(optimizer).__name__, "config": optimizer.get_config()}
