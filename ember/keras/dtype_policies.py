"""Keras's dtype policies: the dtype a layer computes in and the dtype it keeps its weights in.

`DTypePolicy("float64")` computes and keeps weights in float64; `"mixed_float16"` / `"mixed_bfloat16"`
compute in the 16-bit type and keep float32 weights, which a layer reads cast to the compute dtype inside
`call` (so their gradients arrive in float32). A layer's `dtype=` takes a policy or its name; without one
it takes the global policy (`keras.config.set_dtype_policy`, or `keras.mixed_precision.set_global_policy`),
float32 until set. `keras.backend.clear_session()` sets it back to float32, as Keras's does.

>>> ember.keras.DTypePolicy("mixed_float16").compute_dtype
'float16'
"""
from __future__ import annotations

from .. import _dtype

__all__ = ["DTypePolicy", "FloatDTypePolicy", "get", "serialize", "deserialize", "set_dtype_policy",
           "dtype_policy"]

_NAMES = ("float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool")
_ALIASES = {"float": "float32", "double": "float64", "half": "float16", "int": "int64"}
_GLOBAL: list = [None]


def standardize_dtype(dtype) -> str:
    """A dtype's name ('float64') from a name, an Ember dtype or a NumPy dtype; ValueError otherwise."""
    name = getattr(dtype, "name", None) if not isinstance(dtype, str) else dtype
    if name is None and hasattr(dtype, "dtype"):   # a NumPy scalar type, np.float64
        name = getattr(dtype(0).dtype, "name", None) if callable(dtype) else None
    name = _ALIASES.get(name, name)
    if name not in _NAMES:
        raise ValueError(f"Invalid dtype: {dtype!r}")
    return name


class DTypePolicy:
    """A layer's compute and variable dtypes, from a policy name ('float32', 'float64', 'mixed_float16',
    'mixed_bfloat16', or any dtype name); None means the global policy's name."""

    def __init__(self, name=None):
        if name is None:
            name = dtype_policy().name
        if not isinstance(name, str):
            raise TypeError(f"'name' must be a string, such as 'mixed_float16'. Received: name={name} "
                            f"(of type {type(name)})")
        self._name = name
        self._compute_dtype, self._variable_dtype = self._parse_name(name)

    @staticmethod
    def _parse_name(name):
        if name == "mixed_float16":
            return "float16", "float32"
        if name == "mixed_bfloat16":
            return "bfloat16", "float32"
        try:
            dtype = standardize_dtype(name)
        except ValueError:
            raise ValueError(f"Cannot convert '{name}' to a mixed precision DTypePolicy. Valid policies include "
                             f"'mixed_float16', 'mixed_bfloat16', and the name of any float dtype such as "
                             f"'float32'.") from None
        return dtype, dtype

    @property
    def name(self) -> str:
        return self._name

    @property
    def compute_dtype(self) -> str:
        """The dtype of a layer's inputs, computations and outputs."""
        return self._compute_dtype

    @property
    def variable_dtype(self) -> str:
        """The dtype a layer makes its weights in."""
        return self._variable_dtype

    @property
    def quantization_mode(self):
        return None

    def get_config(self) -> dict:
        return {"name": self._name}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        return f'<DTypePolicy "{self._name}">'

    def __eq__(self, other):
        return isinstance(other, DTypePolicy) and self._name == other._name

    def __hash__(self):
        return hash(self._name)


class FloatDTypePolicy(DTypePolicy):
    """Keras's alias of `DTypePolicy`."""


def get(identifier) -> DTypePolicy:
    """A layer's `dtype=` argument as a policy: None (the global policy), a policy, its name, a dtype, or
    a serialised policy ({'class_name': 'DTypePolicy', 'config': {'name': ...}})."""
    if identifier is None:
        return dtype_policy()
    if isinstance(identifier, DTypePolicy):
        return identifier
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str):
        return DTypePolicy(identifier)
    try:
        return DTypePolicy(standardize_dtype(identifier))
    except (ValueError, TypeError):
        raise ValueError(f"Cannot interpret `dtype` argument. Expected a string or an instance of DTypePolicy. "
                         f"Received: identifier={identifier}") from None


def serialize(policy) -> dict:
    return {"module": "keras", "class_name": "DTypePolicy", "config": policy.get_config(), "registered_name": None}


def deserialize(config) -> DTypePolicy:
    if config.get("class_name") not in ("DTypePolicy", "FloatDTypePolicy", "Policy"):
        raise ValueError(f"Unknown dtype policy: {config.get('class_name')!r} (ember.keras has DTypePolicy only)")
    return DTypePolicy.from_config(config.get("config", {}))


def set_dtype_policy(policy) -> None:
    """Set the policy of every layer made from now on without a `dtype` (Keras's
    `keras.config.set_dtype_policy`, alias `keras.mixed_precision.set_global_policy`)."""
    if not isinstance(policy, DTypePolicy):
        if not isinstance(policy, str):
            raise ValueError(f"Invalid `policy` argument. Expected the string name of a policy (such as "
                             f"'mixed_float16') or a `DTypePolicy` instance. Received: policy={policy} "
                             f"(of type {type(policy)})")
        policy = DTypePolicy(policy)
    _GLOBAL[0] = policy


def dtype_policy() -> DTypePolicy:
    """The global policy (float32 unless set)."""
    if _GLOBAL[0] is None:
        _GLOBAL[0] = DTypePolicy("float32")
    return _GLOBAL[0]


def reset() -> None:
    _GLOBAL[0] = None


def to_ember(name: str):
    return getattr(_dtype, name)
