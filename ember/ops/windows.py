"""Window functions for signal processing: hann, hamming, blackman, bartlett and kaiser, as torch's.

Each window of length N is symmetric over N points (`periodic=False`) or the first N points of the
symmetric window of length N + 1 (`periodic=True`, torch's default, the form spectral analysis wants).
Length 0 gives an empty tensor and length 1 the single value 1. The values are computed on the host in
float64 and cast to the asked dtype, as `linspace` is.
"""
from __future__ import annotations

from .. import _dtype
from .._errors import op_error
from ..backends import host
from .creation import _from_host, _resolve_device

__all__ = ["hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"]


def _check(op: str, window_length, dtype):
    if isinstance(window_length, bool) or not hasattr(window_length, "__index__"):
        raise op_error(op, f"window_length must be an int, got {type(window_length).__name__} "
                           f"{window_length!r}", TypeError)
    if window_length < 0:
        raise op_error(op, f"requires non-negative window_length, got window_length={window_length}")
    dt = _dtype.to_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
    if not dt.is_floating_point:
        raise op_error(op, f"expects floating point dtypes, got: {dt.name}")
    return dt


def _window(op: str, window_length, periodic: bool, dtype, device, requires_grad: bool, kind: str, **params):
    """The window of `kind` (host.window: its symmetric form over N > 1 points) in torch's conventions."""
    dt = _check(op, window_length, dtype)
    window_length = int(window_length)
    if window_length <= 1:
        values = host.ones((window_length,), dt.np)
    else:
        points = window_length + 1 if periodic else window_length
        values = host.window(kind, points, **params)[:window_length].astype(dt.np)
    t = _from_host(values, _resolve_device(device))
    return t.requires_grad_(True) if requires_grad else t


def hamming_window(window_length: int, periodic: bool = True, alpha: float = 0.54, beta: float = 0.46, *,
                   dtype=None, device=None, requires_grad: bool = False):
    """The generalised Hamming window `alpha - beta * cos(2 pi n / (N - 1))` (torch.hamming_window).

    >>> ember.hamming_window(4, periodic=False).tolist()
    [0.07999999821186066, 0.7699999809265137, 0.7699999809265137, 0.07999999821186066]
    """
    return _window("hamming_window", window_length, periodic, dtype, device, requires_grad, "hamming", alpha=alpha,
                   beta=beta)


def hann_window(window_length: int, periodic: bool = True, *, dtype=None, device=None,
                requires_grad: bool = False):
    """The Hann window `0.5 - 0.5 * cos(2 pi n / (N - 1))` (torch.hann_window).

    >>> ember.hann_window(4).tolist()
    [0.0, 0.5, 1.0, 0.5]
    """
    return _window("hann_window", window_length, periodic, dtype, device, requires_grad, "hamming", alpha=0.5,
                   beta=0.5)


def blackman_window(window_length: int, periodic: bool = True, *, dtype=None, device=None,
                    requires_grad: bool = False):
    """The Blackman window `0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1))`.

    >>> [round(v, 4) for v in ember.blackman_window(4, dtype=ember.float64).tolist()]
    [-0.0, 0.34, 1.0, 0.34]
    """
    return _window("blackman_window", window_length, periodic, dtype, device, requires_grad, "blackman")


def bartlett_window(window_length: int, periodic: bool = True, *, dtype=None, device=None,
                    requires_grad: bool = False):
    """The triangular Bartlett window `1 - |2 n / (N - 1) - 1|` (torch.bartlett_window).

    >>> ember.bartlett_window(4).tolist()
    [0.0, 0.5, 1.0, 0.5]
    """
    return _window("bartlett_window", window_length, periodic, dtype, device, requires_grad, "bartlett")


def kaiser_window(window_length: int, periodic: bool = True, beta: float = 12.0, *, dtype=None, device=None,
                  requires_grad: bool = False):
    """The Kaiser window `I0(beta * sqrt(1 - ((n - a) / a)^2)) / I0(beta)`, a = (N - 1) / 2.

    >>> [round(v, 4) for v in ember.kaiser_window(5, periodic=False, beta=3.0).tolist()]
    [0.2049, 0.7269, 1.0, 0.7269, 0.2049]
    """
    return _window("kaiser_window", window_length, periodic, dtype, device, requires_grad, "kaiser", beta=beta)
