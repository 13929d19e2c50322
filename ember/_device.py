"""`ember.device`: where a tensor lives ("cpu", "cuda", "cuda:1")."""
from __future__ import annotations

__all__ = ["device", "get_default_device", "set_default_device"]

_CACHE: dict = {}


class device:
    """A device: a backend type and an index. Equal devices are the same object.

    >>> ember.device("cuda:1").index
    1
    """
    __slots__ = ("type", "index")

    def __new__(cls, type_or_str="cpu", index: int | None = None):
        if isinstance(type_or_str, device):
            return type_or_str
        key = (type_or_str, index)
        d = _CACHE.get(key)
        if d is not None:
            return d
        typ = type_or_str
        if isinstance(typ, int):
            index, typ = typ, "cuda"
        elif ":" in typ:
            typ, _, idx = typ.partition(":")
            if not idx.isdigit():
                raise ValueError(f"device: invalid device string {type_or_str!r}")
            index = int(idx)
        if typ not in ("cpu", "cuda", "meta"):
            raise ValueError(f"device: unknown device type {typ!r}; expected 'cpu', 'cuda' or 'meta'")
        if typ == "cuda" and index is None:
            index = 0
        canon = (typ, index)
        d = _CACHE.get(canon)
        if d is None:
            d = object.__new__(cls)
            object.__setattr__(d, "type", typ)
            object.__setattr__(d, "index", index)
            _CACHE[canon] = d
        _CACHE[key] = d
        return d

    def __setattr__(self, name, value):
        raise AttributeError("device is immutable")

    def __repr__(self):
        return f"device(type='{self.type}')" if self.index is None else \
            f"device(type='{self.type}', index={self.index})"

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other):
        if isinstance(other, str):
            other = device(other)
        return self is other

    def __hash__(self):
        return hash((self.type, self.index))

    def __reduce__(self):
        return (device, (str(self),))

    def __enter__(self):
        """`with ember.device("meta"): nn.Linear(...)`: factory functions inside create on this device
        (torch's device context); the previous default comes back at the end of the block."""
        global DEFAULT
        _ENTERED.append(DEFAULT)
        DEFAULT = self
        return self

    def __exit__(self, *exc):
        global DEFAULT
        DEFAULT = _ENTERED.pop()
        return False


CPU = device("cpu")

# where factory functions (zeros, tensor, arange, rand, ...) put a tensor when no device= is given:
# read only by ember/ops/creation.py's _resolve_device. One for the process (torch's is per thread).
DEFAULT = CPU
_ENTERED: list = []   # the defaults that `with device(...)` blocks replaced, innermost last


def get_default_device() -> device:
    """The device factory functions use when no device= is given (torch.get_default_device).

    >>> ember.get_default_device()
    device(type='cpu')
    """
    return DEFAULT


def set_default_device(dev) -> None:
    """Make factory functions (zeros, ones, tensor, arange, rand, the windows ...) create tensors on `dev`
    when no device= is given; None restores the CPU. As torch.set_default_device; ops on existing
    tensors keep their inputs' device.

    >>> ember.set_default_device("meta"); ember.zeros(2).device
    device(type='meta')
    >>> ember.set_default_device(None); ember.zeros(2).device
    device(type='cpu')
    """
    global DEFAULT
    if dev is not None and not isinstance(dev, (str, int, device)):
        raise TypeError(f"set_default_device: expected a device, a string or None, got {type(dev).__name__} "
                        f"{dev!r}")
    DEFAULT = CPU if dev is None else device(dev)
