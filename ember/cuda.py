"""ember.cuda: is_available, device_count, synchronize (the CUDA backend loads on first use), and torch's
legacy CUDA tensor types (ember.cuda.FloatTensor, ...)."""
from __future__ import annotations

from . import backends
from . import _dtype
from .ops.aliases import tensor_type

__all__ = ["is_available", "device_count", "synchronize", "manual_seed", "manual_seed_all", "FloatTensor",
           "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor", "IntTensor", "ShortTensor", "CharTensor",
           "ByteTensor", "BoolTensor"]

# torch.cuda's legacy tensor types: `ember.cuda.FloatTensor(2, 3)` makes a float32 CUDA tensor,
# `isinstance(x, ember.cuda.FloatTensor)` checks for one (ember.FloatTensor and kin are the CPU ones)
FloatTensor = tensor_type("FloatTensor", _dtype.float32, cuda=True)
DoubleTensor = tensor_type("DoubleTensor", _dtype.float64, cuda=True)
HalfTensor = tensor_type("HalfTensor", _dtype.float16, cuda=True)
BFloat16Tensor = tensor_type("BFloat16Tensor", _dtype.bfloat16, cuda=True)
LongTensor = tensor_type("LongTensor", _dtype.int64, cuda=True)
IntTensor = tensor_type("IntTensor", _dtype.int32, cuda=True)
ShortTensor = tensor_type("ShortTensor", _dtype.int16, cuda=True)
CharTensor = tensor_type("CharTensor", _dtype.int8, cuda=True)
ByteTensor = tensor_type("ByteTensor", _dtype.uint8, cuda=True)
BoolTensor = tensor_type("BoolTensor", _dtype.bool, cuda=True)


def is_available() -> bool:
    return backends.is_available("cuda")


def device_count() -> int:
    return backends.get("cuda").device_count() if is_available() else 0


def synchronize(device=None) -> None:
    if is_available():
        backends.get("cuda").synchronize(device)


def manual_seed(seed: int) -> None:
    """ember.manual_seed: the generator is counter-based (Philox), so one seed gives the same numbers on every device."""
    from .random import manual_seed as _ms
    _ms(seed)


manual_seed_all = manual_seed
