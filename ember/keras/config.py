"""`keras.config`: the global settings ember.keras keeps (re-exports only)."""
from .backend import floatx
from .dtype_policies import dtype_policy, set_dtype_policy

__all__ = ["floatx", "dtype_policy", "set_dtype_policy"]
