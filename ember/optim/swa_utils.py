"""torch.optim.swa_utils: averaged copies of a model (stochastic weight averaging, exponential moving
averages), SWA's learning-rate schedule and the pass that recomputes BatchNorm statistics.

>>> model = ember.nn.Linear(2, 1)
>>> ema = ember.optim.swa_utils.AveragedModel(model, multi_avg_fn=ember.optim.swa_utils.get_ema_multi_avg_fn(0.9))
>>> ema.update_parameters(model)          # the first call copies the weights
>>> with ember.no_grad():
...     _ = model.weight.add_(1.0)
>>> ema.update_parameters(model)          # then 0.9 * average + 0.1 * model
>>> bool(ember.allclose(ema.module.weight, model.weight - 0.9))
True
"""
from __future__ import annotations

import copy
import itertools
import math
from typing import Any, Callable, Iterable

from ..autograd import no_grad
from ..nn.module import Module
from .lr_scheduler import LRScheduler
from .optimizer import Optimizer

__all__ = ["AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn", "get_swa_multi_avg_fn",
           "get_ema_avg_fn", "get_swa_avg_fn"]


def _check_decay(decay) -> None:
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")


def get_ema_multi_avg_fn(decay: float = 0.999) -> Callable:
    """An in-place EMA over lists: average <- decay * average + (1 - decay) * model (a lerp for floats)."""
    _check_decay(decay)

    def ema_update(ema_params, current_params, num_averaged) -> None:
        with no_grad():
            for p_ema, p_model in zip(ema_params, current_params):
                if p_ema.dtype.is_floating_point:
                    p_ema.lerp_(p_model, 1 - decay)
                else:
                    p_ema.copy_(p_ema * decay + p_model * (1 - decay))
    return ema_update


def get_swa_multi_avg_fn() -> Callable:
    """An in-place running mean over lists: average <- average + (model - average) / (n + 1)."""
    def swa_update(averaged_params, current_params, num_averaged) -> None:
        with no_grad():
            for p_avg, p_model in zip(averaged_params, current_params):
                if p_avg.dtype.is_floating_point:
                    p_avg.lerp_(p_model, 1 / (float(num_averaged) + 1))
                else:
                    p_avg.copy_(p_avg + (p_model - p_avg) / (num_averaged + 1))
    return swa_update


def get_ema_avg_fn(decay: float = 0.999) -> Callable:
    """EMA of one tensor: returns decay * average + (1 - decay) * model."""
    _check_decay(decay)

    def ema_update(ema_param, current_param, num_averaged):
        with no_grad():
            return decay * ema_param + (1 - decay) * current_param
    return ema_update


def get_swa_avg_fn() -> Callable:
    """Running mean of one tensor: returns average + (model - average) / (n + 1)."""
    def swa_update(averaged_param, current_param, num_averaged):
        with no_grad():
            return averaged_param + (current_param - averaged_param) / (num_averaged + 1)
    return swa_update


class AveragedModel(Module):
    """A deep copy of `model` (`.module`) whose parameters (and buffers, with `use_buffers=True`) hold a
    running average of `model`'s, updated by `update_parameters(model)`: an equal-weight mean (SWA) by
    default, or `avg_fn(average, model, n)` per tensor / `multi_avg_fn(averages, models, n)` per list
    (e.g. `get_ema_multi_avg_fn(0.999)`). The first update copies; `n_averaged` counts the updates. Without
    `use_buffers` the buffers (BatchNorm statistics) are copied from `model` at each update."""

    def __init__(self, model: Module, device=None, avg_fn: Callable | None = None,
                 multi_avg_fn: Callable | None = None, use_buffers: bool = False) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        from ..ops.creation import tensor
        from .. import _dtype
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", tensor(0, dtype=_dtype.int64, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def update_parameters(self, model: Module) -> None:
        """Fold `model`'s current weights into the average (copy them on the first call)."""
        if self.use_buffers:
            own = list(itertools.chain(self.module.parameters(), self.module.buffers()))
            theirs = list(itertools.chain(model.parameters(), model.buffers()))
        else:
            own, theirs = list(self.parameters()), list(model.parameters())
        averages = [p.detach() for p in own]
        current = [q.detach().to(p.device) for p, q in zip(own, theirs)]
        n = int(self.n_averaged.item())
        with no_grad():
            if n == 0:
                for a, c in zip(averages, current):
                    a.copy_(c)
            elif self.avg_fn is not None:
                for a, c in zip(averages, current):
                    a.copy_(self.avg_fn(a, c, self.n_averaged.to(a.device)))
            else:
                fn = self.multi_avg_fn or get_swa_multi_avg_fn()
                for device in dict.fromkeys(a.device for a in averages):   # one call per device, as torch
                    pairs = [(a, c) for a, c in zip(averages, current) if a.device == device]
                    fn([a for a, _ in pairs], [c for _, c in pairs], self.n_averaged.to(device))
            if not self.use_buffers:
                for b_avg, b_model in zip(self.module.buffers(), model.buffers()):
                    b_avg.detach().copy_(b_model.detach().to(b_avg.device))
            self.n_averaged += 1


def update_bn(loader: Iterable[Any], model: Module, device=None) -> None:
    """Recompute the BatchNorm running statistics of `model` with one pass over `loader` (batches that are
    tensors, or lists/tuples whose first item is the input): the statistics are reset and averaged over
    the pass (momentum None), then each layer's momentum and the model's mode are restored."""
    from ..nn.normalization import _BatchNorm, _InstanceNorm
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm) and not isinstance(module, _InstanceNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    with no_grad():
        for batch in loader:
            if isinstance(batch, (list, tuple)):
                batch = batch[0]
            if device is not None:
                batch = batch.to(device)
            model(batch)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each group's lr to `swa_lr` over `anneal_epochs` steps ('cos' or 'linear'), then hold it.

    >>> opt = ember.optim.SGD([ember.zeros(1, requires_grad=True)], lr=0.1)
    >>> sched = ember.optim.swa_utils.SWALR(opt, swa_lr=0.05, anneal_epochs=2, anneal_strategy="linear")
    >>> lrs = []
    >>> for _ in range(3):
    ...     opt.step(); sched.step(); lrs.append(round(sched.get_last_lr()[0], 6))
    >>> lrs
    [0.075, 0.05, 0.05]
    """

    def __init__(self, optimizer: Optimizer, swa_lr, anneal_epochs: int = 10, anneal_strategy: str = "cos",
                 last_epoch: int = -1) -> None:
        groups = optimizer.param_groups
        if isinstance(swa_lr, (list, tuple)):
            if len(swa_lr) != len(groups):
                raise ValueError(f"swa_lr must have the same length as optimizer.param_groups: "
                                 f"swa_lr has {len(swa_lr)}, optimizer.param_groups has {len(groups)}")
            swa_lrs = list(swa_lr)
        else:
            swa_lrs = [swa_lr] * len(groups)
        for lr, group in zip(swa_lrs, groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._anneal_strategy = anneal_strategy
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    def _anneal(self, t: float) -> float:
        return (1 - math.cos(math.pi * t)) / 2 if self._anneal_strategy == "cos" else t

    def get_lr(self) -> list[float]:
        # torch's recursion: recover the lr the schedule started from out of the current one, then move
        # alpha of the way towards swa_lr
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_alpha = self._anneal(max(0, min(1, (step - 1) / max(1, self.anneal_epochs))))
        groups = self.optimizer.param_groups
        starts = [g["swa_lr"] if prev_alpha == 1 else (g["lr"] - prev_alpha * g["swa_lr"]) / (1 - prev_alpha)
                  for g in groups]
        alpha = self._anneal(max(0, min(1, step / max(1, self.anneal_epochs))))
        return [g["swa_lr"] * alpha + lr * (1 - alpha) for g, lr in zip(groups, starts)]
