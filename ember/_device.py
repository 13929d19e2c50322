"""`ember.device`: where a tensor lives ("cpu", "cuda", "cuda:1")."""
from __future__ import annotations

__all__ = ["device"]

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
            typ, index = "cuda", typ
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


CPU = device("cpu")
