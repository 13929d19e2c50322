"""`ember.accelerator`: the device-agnostic accelerator API of `torch.accelerator`.

Ember's one accelerator is CUDA (through CuPy, loaded on first use; `EMBER_FAKE_CUDA=1` fakes one).
Without a usable accelerator, as in torch, `is_available()` is False, `current_accelerator()` is None,
`device_count()` is 0, and the calls that need a device raise RuntimeError.

>>> dev = ember.accelerator.current_accelerator() or ember.device("cpu")
>>> ember.ones(2, device=dev).device.type in ("cpu", "cuda")
True
"""
from __future__ import annotations

from ._device import device as _device
from . import cuda as _cuda

__all__ = ["is_available", "current_accelerator", "device_count", "current_device_index", "current_device_idx",
           "set_device_index", "set_device_idx", "synchronize", "device_index"]

_NONE = "Cannot access accelerator device when none is available."
_current = [0]   # the current device index (CuPy keeps its own per thread; this is the one we set)


def is_available() -> bool:
    return _cuda.is_available()


def current_accelerator(check_available: bool = False):
    """`ember.device('cuda')` when CUDA is usable, else None."""
    return _device("cuda") if is_available() else None


def device_count() -> int:
    return _cuda.device_count()


def _require(op):
    if not is_available():
        raise RuntimeError(f"{op}: {_NONE}")


def _index(device, op) -> int:
    """The device index of an int, 'cuda:1' or ember.device('cuda', 1), checked against device_count()."""
    if isinstance(device, bool) or device is None:
        raise TypeError(f"{op}: expected a device index, a device or a device string, got {device!r}")
    if not isinstance(device, int):
        d = _device(device)
        if d.type != "cuda":
            raise ValueError(f"{op}: {d} is not the current accelerator's device type (cuda)")
        device = d.index
    if not 0 <= device < device_count():
        raise RuntimeError(f"{op}: device index {device} is out of range; {device_count()} device(s) available")
    return device


def current_device_index() -> int:
    _require("current_device_index")
    return _current[0]


current_device_idx = current_device_index


def set_device_index(device, /) -> None:
    """Make `device` (an index, 'cuda:1' or an ember.device) the current accelerator device."""
    _require("set_device_index")
    idx = _index(device, "set_device_index")
    from . import backends
    if not getattr(backends.get("cuda"), "FAKE", False):
        backends.get("cuda").xp.cuda.Device(idx).use()
    _current[0] = idx


set_device_idx = set_device_index


def synchronize(device=None, /) -> None:
    """Wait for every queued kernel on `device` (the current one by default) to finish."""
    _require("synchronize")
    idx = _current[0] if device is None else _index(device, "synchronize")
    _cuda.synchronize(_device("cuda", idx))


class device_index:
    """Context manager: the current device index is `device` inside the block (None: unchanged).

    >>> with ember.accelerator.device_index(None):
    ...     pass
    """

    def __init__(self, device, /) -> None:
        self.idx = device
        self.prev_idx = -1

    def __enter__(self) -> None:
        if self.idx is not None:
            self.prev_idx = current_device_index()
            set_device_index(self.idx)

    def __exit__(self, *exc_info) -> None:
        if self.idx is not None:
            set_device_index(self.prev_idx)
