"""Keras's weight initialisers by name: `Dense(..., kernel_initializer='he_normal')`.

Each is a callable `init(shape, dtype='float32') -> Tensor`. The random ones take Keras's `seed`: an
integer seed draws the same values at every call (a generator of its own, as Keras); without one they draw
from Ember's global generator, so `ember.manual_seed` makes a model repeatable (Keras's unseeded
initialiser instead picks one random seed per instance and repeats its values: a known difference). Fans follow Keras: a kernel of shape (..., in, out) has
fan_in = in * receptive field and fan_out = out * receptive field. The normal variants of
`VarianceScaling` draw from a normal truncated at two standard deviations, as Keras does.
"""
from __future__ import annotations

import math

from .. import _dtype
from ..random import Generator
from ..nn import init as _init
from ..ops import creation as C

__all__ = ["Initializer", "Zeros", "Ones", "Constant", "RandomNormal", "RandomUniform", "TruncatedNormal",
           "VarianceScaling", "GlorotUniform", "GlorotNormal", "HeNormal", "HeUniform", "LecunNormal",
           "LecunUniform", "Orthogonal", "Identity", "get", "serialize"]


def _dt(dtype):
    return getattr(_dtype, str(dtype or "float32").replace("ember.", ""))


def _fans(shape):
    if len(shape) == 0:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    receptive = math.prod(shape[:-2])
    return shape[-2] * receptive, shape[-1] * receptive


class Initializer:
    name = "initializer"

    def get_config(self) -> dict:
        return {}

    def __call__(self, shape, dtype=None):
        raise NotImplementedError


class _RandomInitializer(Initializer):
    """Keras's RandomInitializer: validates and keeps `seed` (None or an integer), saved in the config."""

    def __init__(self, seed=None):
        if seed is not None and not isinstance(seed, int):
            raise ValueError(f"`seed` argument should be an integer or None. Received: seed={seed!r}")
        self.seed = seed

    def _generator(self):
        return None if self.seed is None else Generator().manual_seed(self.seed)

    def get_config(self):
        return {"seed": self.seed}


class Zeros(Initializer):
    name = "zeros"

    def __call__(self, shape, dtype=None):
        return C.zeros(*shape, dtype=_dt(dtype))


class Ones(Initializer):
    name = "ones"

    def __call__(self, shape, dtype=None):
        return C.ones(*shape, dtype=_dt(dtype))


class Constant(Initializer):
    name = "constant"

    def __init__(self, value=0.0):
        self.value = float(value)

    def get_config(self):
        return {"value": self.value}

    def __call__(self, shape, dtype=None):
        return C.full(tuple(shape), self.value, dtype=_dt(dtype))


class RandomNormal(_RandomInitializer):
    name = "random_normal"

    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        self.mean, self.stddev = mean, stddev
        super().__init__(seed)

    def get_config(self):
        return {**super().get_config(), "mean": self.mean, "stddev": self.stddev}

    def __call__(self, shape, dtype=None):
        return _init.normal_(C.empty(*shape, dtype=_dt(dtype)), self.mean, self.stddev, self._generator())


class RandomUniform(_RandomInitializer):
    name = "random_uniform"

    def __init__(self, minval=-0.05, maxval=0.05, seed=None):
        self.minval, self.maxval = minval, maxval
        super().__init__(seed)

    def get_config(self):
        return {**super().get_config(), "minval": self.minval, "maxval": self.maxval}

    def __call__(self, shape, dtype=None):
        return _init.uniform_(C.empty(*shape, dtype=_dt(dtype)), self.minval, self.maxval, self._generator())


class TruncatedNormal(_RandomInitializer):
    name = "truncated_normal"

    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        self.mean, self.stddev = mean, stddev
        super().__init__(seed)

    def get_config(self):
        return {**super().get_config(), "mean": self.mean, "stddev": self.stddev}

    def __call__(self, shape, dtype=None):
        return _init.trunc_normal_(C.empty(*shape, dtype=_dt(dtype)), self.mean, self.stddev,
                                   self.mean - 2 * self.stddev, self.mean + 2 * self.stddev, self._generator())


class VarianceScaling(_RandomInitializer):
    name = "variance_scaling"

    def __init__(self, scale=1.0, mode="fan_in", distribution="truncated_normal", seed=None):
        if scale <= 0.0:
            raise ValueError(f"VarianceScaling: `scale` must be a positive float, got scale={scale!r}")
        if mode not in ("fan_in", "fan_out", "fan_avg"):
            raise ValueError(f"VarianceScaling: mode must be 'fan_in', 'fan_out' or 'fan_avg', got {mode!r}")
        distribution = str(distribution).lower()    # as Keras: case-insensitive, 'normal' is the truncated one
        if distribution == "normal":
            distribution = "truncated_normal"
        if distribution not in ("truncated_normal", "untruncated_normal", "uniform"):
            raise ValueError(f"VarianceScaling: distribution must be 'truncated_normal', 'untruncated_normal' "
                             f"or 'uniform', got {distribution!r}")
        self.scale, self.mode, self.distribution = scale, mode, distribution
        super().__init__(seed)

    def get_config(self):
        return {**super().get_config(), "scale": self.scale, "mode": self.mode, "distribution": self.distribution}

    def __call__(self, shape, dtype=None):
        fan_in, fan_out = _fans(tuple(shape))
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2}[self.mode]
        scale = self.scale / max(1.0, n)
        t = C.empty(*shape, dtype=_dt(dtype))
        if self.distribution == "uniform":
            limit = math.sqrt(3.0 * scale)
            return _init.uniform_(t, -limit, limit, self._generator())
        if self.distribution == "untruncated_normal":
            return _init.normal_(t, 0.0, math.sqrt(scale), self._generator())
        std = math.sqrt(scale) / 0.87962566103423978   # the std of a unit normal truncated at +-2
        return _init.trunc_normal_(t, 0.0, std, -2 * std, 2 * std, self._generator())


def _scaling(cls_name, scale, mode, distribution):
    class _Named(VarianceScaling):
        name = cls_name

        def __init__(self, seed=None):
            super().__init__(scale, mode, distribution, seed)

        def get_config(self):
            return {"seed": self.seed}
    return _Named


GlorotUniform = _scaling("glorot_uniform", 1.0, "fan_avg", "uniform")
GlorotNormal = _scaling("glorot_normal", 1.0, "fan_avg", "truncated_normal")
HeNormal = _scaling("he_normal", 2.0, "fan_in", "truncated_normal")
HeUniform = _scaling("he_uniform", 2.0, "fan_in", "uniform")
LecunNormal = _scaling("lecun_normal", 1.0, "fan_in", "truncated_normal")
LecunUniform = _scaling("lecun_uniform", 1.0, "fan_in", "uniform")
for _cls, _n in [(GlorotUniform, "GlorotUniform"), (GlorotNormal, "GlorotNormal"), (HeNormal, "HeNormal"),
                 (HeUniform, "HeUniform"), (LecunNormal, "LecunNormal"), (LecunUniform, "LecunUniform")]:
    _cls.__name__ = _cls.__qualname__ = _n


class Orthogonal(_RandomInitializer):
    name = "orthogonal"

    def __init__(self, gain=1.0, seed=None):
        self.gain = gain
        super().__init__(seed)

    def get_config(self):
        return {**super().get_config(), "gain": self.gain}

    def __call__(self, shape, dtype=None):
        shape = tuple(shape)
        if len(shape) < 2:
            raise ValueError(f"Orthogonal: the tensor to initialize must be at least two-dimensional. Received: "
                             f"shape={shape} of rank {len(shape)}.")
        rows = math.prod(shape[:-1])
        flat = _init.orthogonal_(C.empty(rows, shape[-1], dtype=_dt(dtype)), self.gain, self._generator())
        return flat.reshape(shape)


class Identity(Initializer):
    name = "identity"

    def __init__(self, gain=1.0):
        self.gain = gain

    def get_config(self):
        return {"gain": self.gain}

    def __call__(self, shape, dtype=None):
        if len(shape) != 2:
            raise ValueError(f"Identity initializer needs a 2-D shape, got {tuple(shape)}")
        return C.eye(shape[0], shape[1], dtype=_dt(dtype)) * self.gain


ALL = {c.name: c for c in [Zeros, Ones, Constant, RandomNormal, RandomUniform, TruncatedNormal,
                           VarianceScaling, GlorotUniform, GlorotNormal, HeNormal, HeUniform, LecunNormal,
                           LecunUniform, Orthogonal, Identity]}
# Keras also takes the class names ('GlorotUniform') and a few aliases
_ALIASES = {"uniform": "random_uniform", "normal": "random_normal", "zero": "zeros", "one": "ones"}


def get(identifier) -> Initializer:
    """The initialiser named `identifier` ('glorot_uniform', 'zeros', 'GlorotUniform', ...), an instance as
    it is, or a dict {'class_name': ..., 'config': ...} as `serialize` writes it."""
    if isinstance(identifier, Initializer) or (callable(identifier) and not isinstance(identifier, (str, dict))):
        return identifier
    if isinstance(identifier, dict):
        return get(identifier["class_name"]).__class__(**identifier.get("config", {}))
    if isinstance(identifier, str):
        key = _ALIASES.get(identifier, identifier)
        if key not in ALL:
            key = next((n for n, c in ALL.items() if c.__name__ == identifier), key)
        if key in ALL:
            return ALL[key]()
    raise ValueError(f"Could not interpret initializer identifier: {identifier!r}. Known initializers: "
                     f"{', '.join(sorted(ALL))}")


def serialize(init) -> dict:
    if not isinstance(init, Initializer):
        raise ValueError(f"initializer {init!r} is not a Keras initializer and cannot be saved")
    return {"class_name": init.name, "config": init.get_config()}
