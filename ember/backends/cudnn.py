"""`ember.backends.cudnn`: torch.backends.cudnn's flags, so that training scripts written for torch
(`torch.backends.cudnn.benchmark = True`, `... .deterministic = True`) run unchanged.

Ember's CUDA backend does not call cuDNN (its convolutions are CuPy GEMMs and kernels, backends/
cuda.py), so the flags are kept and change nothing: `is_available()` is False and `version()` None.

>>> ember.backends.cudnn.benchmark = True
>>> ember.backends.cudnn.is_available()
False
"""
from __future__ import annotations

__all__ = ["enabled", "benchmark", "deterministic", "allow_tf32", "benchmark_limit", "is_available", "version"]

enabled = True          # torch's defaults
benchmark = False
deterministic = False
allow_tf32 = True
benchmark_limit = None   # as torch where cuDNN is absent (10 in its CUDA build)


def is_available() -> bool:
    """Whether Ember uses cuDNN: never (see the module's docstring)."""
    return False


def version() -> None:
    """The cuDNN version Ember uses: None, as torch's when cuDNN is not available."""
    return None
