"""ember.cuda: is_available, device_count, synchronize (the CUDA backend loads on first use)."""
from __future__ import annotations

from . import backends

__all__ = ["is_available", "device_count", "synchronize", "manual_seed", "manual_seed_all"]


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
