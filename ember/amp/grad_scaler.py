"""GradScaler: loss scaling for float16 training, with torch's API and bookkeeping (torch.amp.GradScaler).

One step: `scaler.scale(loss).backward()`; optionally `scaler.unscale_(opt)` (to clip true gradients);
`scaler.step(opt)` unscales if needed and skips the step when a gradient is inf or NaN;
`scaler.update()` shrinks the scale after an overflow (x backoff_factor) and grows it after
`growth_interval` clean steps in a row (x growth_factor).
"""
from __future__ import annotations

import math
from collections import defaultdict
from enum import Enum

from .. import _dtype
from .._tensor import Tensor

__all__ = ["GradScaler", "OptState"]


class OptState(Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _refresh_per_optimizer_state() -> dict:
    return {"stage": OptState.READY, "found_inf_per_device": {}}


class GradScaler:
    """Scale the loss so small float16 gradients do not flush to zero, and unscale before the step.

    >>> import ember.nn as nn
    >>> model = nn.Linear(3, 1)
    >>> opt = ember.optim.SGD(model.parameters(), lr=0.1)
    >>> scaler = ember.amp.GradScaler("cpu")   # torch's default is "cuda" (off, with a warning, without a GPU)
    >>> scaler.scale(model(ember.ones(2, 3)).sum()).backward()
    >>> scaler.step(opt); scaler.update()
    >>> scaler.get_scale()
    65536.0
    """

    def __init__(self, device: str = "cuda", init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000, enabled: bool = True) -> None:
        if not isinstance(device, str):
            raise TypeError(f"GradScaler: device must be a device type string ('cpu', 'cuda'), got {device!r}")
        self._device = device
        self._enabled = enabled
        if device == "cuda" and enabled:
            from .. import cuda
            if not cuda.is_available():
                import warnings
                warnings.warn("ember.amp.GradScaler is enabled, but CUDA is not available. Disabling.",
                              stacklevel=2)
                self._enabled = False
        if self._enabled:
            if not growth_factor > 1.0:
                raise ValueError(f"GradScaler: growth_factor should be > 1, got {growth_factor!r}")
            if not backoff_factor < 1.0:
                raise ValueError(f"GradScaler: backoff_factor should be < 1, got {backoff_factor!r}")
            if isinstance(growth_interval, bool) or not isinstance(growth_interval, int) or growth_interval < 1:
                raise ValueError(f"GradScaler: growth_interval should be a positive integer, got {growth_interval!r}")
            self._init_scale = init_scale
            self._scale = None           # a 0-d float32 tensor, made on the first scale()
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker = None  # clean steps in a row (a Python int: it never leaves the host)
            self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _check_scale_growth_tracker(self, funcname: str):
        fix = "This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration."
        if self._scale is None:
            raise RuntimeError(f"GradScaler.{funcname}: attempted {funcname} but _scale is None. {fix}")
        return self._scale, self._growth_tracker

    def _lazy_init_scale_growth_tracker(self, device) -> None:
        from ..ops.creation import full
        self._scale = full((), float(self._init_scale), dtype=_dtype.float32, device=device)
        self._growth_tracker = self._init_growth_tracker

    def scale(self, outputs):
        """`outputs` times the scale: a tensor, or (nested) lists and tuples of tensors.

        >>> ember.amp.GradScaler("cpu", init_scale=4.0).scale(ember.ones(2)).tolist()
        [4.0, 4.0]
        """
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            if self._scale is None:
                self._lazy_init_scale_growth_tracker(outputs.device)
            return outputs * self._scale.to(outputs.device)

        def apply_scale(val):
            if isinstance(val, Tensor):
                if self._scale is None:
                    self._lazy_init_scale_growth_tracker(val.device)
                return val * self._scale.to(val.device)
            if isinstance(val, (list, tuple)):
                return type(val)(apply_scale(v) for v in val)
            raise ValueError(f"GradScaler.scale: outputs must be a Tensor or an iterable of Tensors, got "
                             f"{type(val).__name__}")
        return apply_scale(outputs)

    def _unscale_grads_(self, optimizer, inv_scale, allow_fp16: bool) -> dict:
        from ..autograd.grad_mode import no_grad
        from ..ops.math import isfinite
        found = {}
        with no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    if not allow_fp16 and p.grad.dtype is _dtype.float16:
                        raise ValueError("GradScaler.unscale_: attempting to unscale FP16 gradients (keep the "
                                         "parameters in float32 and let autocast make the float16 copies)")
                    g = p.grad
                    dev = str(g.device)
                    bad = float(not bool(isfinite(g).all()))
                    found[dev] = max(found.get(dev, 0.0), bad)
                    g.mul_(inv_scale.to(g.device))
        return found

    def unscale_(self, optimizer) -> None:
        """Divide `optimizer`'s gradients by the scale in place (once per step, before step()), e.g. to clip
        them; records whether any is inf or NaN."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        # the reciprocal in float64, then float32, as torch
        from ..ops.creation import full
        inv_scale = full((), float(_dtype.float32.np.type(1.0 / float(self._scale.item()))),
                         dtype=_dtype.float32, device=self._scale.device)
        found = self._unscale_grads_(optimizer, inv_scale, False)
        state["found_inf_per_device"] = found
        state["stage"] = OptState.UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """Unscale `optimizer`'s gradients (if unscale_ was not called) and run `optimizer.step()` unless one
        is inf or NaN; returns what optimizer.step returned, or None for a skipped step."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale_growth_tracker("step")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if len(state["found_inf_per_device"]) == 0:
            raise RuntimeError("GradScaler.step: no inf checks were recorded for this optimizer (no parameter "
                               "has a gradient: was backward() called on the scaled loss?)")
        retval = None
        if not sum(state["found_inf_per_device"].values()):
            retval = optimizer.step(*args, **kwargs)
        state["stage"] = OptState.STEPPED
        return retval

    def update(self, new_scale=None) -> None:
        """End the iteration: set the scale to `new_scale` if given, else back off after an inf/NaN
        gradient or grow after `growth_interval` clean steps."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if isinstance(new_scale, Tensor):
                if new_scale.numel() != 1 or new_scale.requires_grad:
                    raise ValueError("GradScaler.update: new_scale should be a float or a 1-element tensor "
                                     "with requires_grad=False")
                new_scale = float(new_scale.item())
            elif not isinstance(new_scale, float):
                raise ValueError(f"GradScaler.update: new_scale should be a float or a 1-element tensor, got "
                                 f"{new_scale!r}")
            self._scale.fill_(new_scale)
        else:
            found_infs = [v for s in self._per_optimizer_states.values() for v in s["found_inf_per_device"].values()]
            if len(found_infs) == 0:
                raise RuntimeError("GradScaler.update: no inf checks were recorded prior to update() (call "
                                   "step() or unscale_() first)")
            self._update_scale(sum(found_infs) > 0)
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _update_scale(self, found_inf: bool) -> None:
        """torch's _amp_update_scale_, in float32 as its kernel."""
        f32 = _dtype.float32.np.type
        scale = f32(self._scale.item())
        if found_inf:
            self._scale.fill_(float(scale * f32(self._backoff_factor)))
            self._growth_tracker = 0
            return
        successful = self._growth_tracker + 1
        if successful == self._growth_interval:
            grown = scale * f32(self._growth_factor)
            if math.isfinite(float(grown)):
                self._scale.fill_(float(grown))
            self._growth_tracker = 0
        else:
            self._growth_tracker = successful

    # --- inspection and state ----------------------------------------------------------------------
    def get_scale(self) -> float:
        """The current scale (1.0 when disabled; init_scale before the first scale())."""
        if not self._enabled:
            return 1.0
        return float(self._init_scale) if self._scale is None else float(self._scale.item())

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        if not self._enabled:
            return 0
        return self._init_growth_tracker if self._growth_tracker is None else self._growth_tracker

    def is_enabled(self) -> bool:
        return self._enabled

    def state_dict(self) -> dict:
        """scale, growth_factor, backoff_factor, growth_interval and _growth_tracker ({} when disabled).

        >>> ember.amp.GradScaler("cpu", init_scale=8.0).state_dict()["scale"]
        8.0
        """
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict: dict) -> None:
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled "
                               "instance of GradScaler.")
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale.fill_(float(state_dict["scale"]))
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._growth_tracker is not None:
            self._growth_tracker = state_dict["_growth_tracker"]
