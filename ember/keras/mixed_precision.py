"""`keras.mixed_precision`: the dtype-policy names Keras keeps from TensorFlow's Keras (re-exports only).

>>> ember.keras.mixed_precision.set_global_policy("mixed_float16")
>>> ember.keras.layers.Dense(2).compute_dtype
'float16'
>>> ember.keras.mixed_precision.set_global_policy("float32")
"""
from .dtype_policies import DTypePolicy, dtype_policy, set_dtype_policy

Policy = DTypePolicy
set_global_policy = set_dtype_policy
global_policy = dtype_policy

__all__ = ["DTypePolicy", "Policy", "set_global_policy", "global_policy", "set_dtype_policy", "dtype_policy"]
