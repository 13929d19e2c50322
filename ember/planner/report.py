"""`ember.summary`: the per-layer table and the `Summary` object with the planner's answers."""
from __future__ import annotations

from collections import namedtuple

from .. import _dtype
from ..nn.module import Module
from .devices import get_device
from .dryrun import OPTIMIZERS, check_optimizer, count_forward, dry_run_step, make_batch, meta_twin

__all__ = ["summary", "Summary", "StepTime"]

MiB = 1 << 20
GiB = 1 << 30

StepTime = namedtuple("StepTime", "flops at_peak at_efficiency efficiency")
StepTime.__doc__ = ("Seconds per training step: `flops` of one step (forward, backward, update, counted on "
                    "meta), `at_peak` at the device's peak FLOP/s, `at_efficiency` at `efficiency` of it.")


def _per_sample(total: int, batch: int):
    return total // batch if total % batch == 0 else total / batch


class Summary:
    """What `ember.summary` found. Per-sample counts are at the summary's batch size divided by it.

    Attributes: `rows` (one per module call), `total_params`, `trainable_params`, `param_bytes`,
    `activation_values` and `activation_bytes` (per sample: the model's input and the output of every
    layer, except what an in-place activation, a view or dropout leaves in place, as the notes count),
    `macs` (multiply-adds of convolutions, linear layers and matmuls, per sample: the notes' "FLOPs"),
    `flops` (per sample, forward), `saved_bytes` (what Ember's autograd keeps for backward at the
    summary's batch size, from a dry run), `output_shape`.
    """

    def __init__(self, model: Module, input_size, batch_size, dtype, input_dtype, loss_fn, rows, output_shape,
                 name=None):
        self._model = model
        self._loss_fn = loss_fn
        self._plans: dict = {}
        self.name = name or type(model).__name__
        self.input_size = tuple(input_size)
        self.batch_size = batch_size
        self.dtype = dtype
        self.input_dtype = input_dtype
        self.rows = rows
        self.output_shape = output_shape
        self.total_params = sum(p.numel() for p in model.parameters())
        self.trainable_params = sum(p.numel() for p in model.parameters() if p.requires_grad)
        self.param_bytes = self.total_params * dtype.itemsize
        input_values = 1
        for s in self.input_size:
            input_values *= s
        self.activation_values = input_values + _per_sample(sum(r.activations for r in rows), batch_size)
        self.activation_bytes = self.activation_values * dtype.itemsize
        self.macs = _per_sample(sum(r.macs for r in rows), batch_size)
        self.flops = round(sum(r.flops for r in rows) / batch_size)   # BatchNorm's per-channel math is per batch

    # --- the notes' rule of thumb -------------------------------------------------------------
    def training_bytes(self, batch_size: int | None = None, optimizer: str = "sgd-momentum") -> int:
        """The notes' estimate: weights x 2 (plain SGD: weights and grads), x 3 with momentum, x 4 with
        Adam; activations x 2 (forward and backward) x batch size. VGG16 at 224x224 and batch 128 with
        momentum: 17,263,601,120 bytes (16.08 GiB), as the notes add it up.

        >>> s = ember.summary(ember.nn.Linear(784, 10), (784,), verbose=False)
        >>> s.training_bytes(128, "sgd-momentum") == 3 * 7850 * 4 + 2 * 128 * (784 + 10) * 4
        True
        """
        b = self.batch_size if batch_size is None else _check_batch(batch_size)
        mult = OPTIMIZERS[check_optimizer(optimizer)][1]
        return self.param_bytes * mult + 2 * b * self.activation_bytes

    # --- the exact answer: a dry run of training steps on meta --------------------------------
    def plan(self, batch_size: int | None = None, optimizer: str = "sgd-momentum"):
        """The `StepPlan` of two training steps at `batch_size` (cached)."""
        b = self.batch_size if batch_size is None else _check_batch(batch_size)
        key = (b, check_optimizer(optimizer))
        if key not in self._plans:
            self._plans[key] = dry_run_step(self._model, self.input_size, b, key[1], self.dtype,
                                            self.input_dtype, self._loss_fn)
        return self._plans[key]

    @property
    def saved_bytes(self) -> int:
        """Bytes the graph keeps for backward after forward and loss, at the summary's batch size."""
        return self.plan().saved

    def peak_training_bytes(self, batch_size: int | None = None, optimizer: str = "sgd-momentum") -> int:
        """The most bytes live at once during a training step (weights, grads, optimizer state, the
        batch, saved tensors and the backend's scratch), from a dry run on meta."""
        return self.plan(batch_size, optimizer).peak

    def fits(self, device, batch_size: int | None = None, optimizer: str = "sgd-momentum") -> bool:
        return self.peak_training_bytes(batch_size, optimizer) <= _memory_of(device)

    def max_batch_size(self, device, optimizer: str = "sgd-momentum", rule: str = "peak") -> int:
        """The largest batch whose planned peak (`rule='peak'`, dry runs) or notes' estimate
        (`rule='notes'`) fits in `device`'s memory (a name or a byte count); 0 if none does."""
        mem = _memory_of(device)
        if rule == "notes":
            fixed = self.training_bytes(0, optimizer)
            return max(0, (mem - fixed) // (2 * self.activation_bytes)) if self.activation_bytes else 0
        if rule != "peak":
            raise ValueError(f"max_batch_size: rule must be 'peak' or 'notes', got {rule!r}")

        def fits(b):
            return self.peak_training_bytes(b, optimizer) <= mem
        if not fits(1):
            return 0
        # the peak grows (nearly) linearly with the batch: guess from two points, then search exactly
        p1, p2 = self.peak_training_bytes(1, optimizer), self.peak_training_bytes(2, optimizer)
        guess = max(1, int((mem - p1) // max(p2 - p1, 1)) + 1)
        lo, hi = 1, None    # fits(lo) is True, fits(hi) is False
        b = guess
        while hi is None:
            if fits(b):
                lo, b = b, b * 2
            else:
                hi = b
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if fits(mid):
                lo = mid
            else:
                hi = mid
        return lo

    def step_time(self, batch_size: int | None = None, device="A100 40GB", efficiency: float = 0.5,
                  optimizer: str = "sgd-momentum") -> StepTime:
        """Seconds per training step on `device` in the summary's dtype: the step's FLOPs (counted on
        meta: forward, backward, optimizer update) over the device's peak, and over `efficiency` of it
        (0.3 to 0.6 of peak is what well-tuned convnet and transformer training reaches)."""
        if not 0 < efficiency <= 1:
            raise ValueError(f"step_time: efficiency must be in (0, 1], got {efficiency!r}")
        dev = get_device(device)
        flops = self.plan(batch_size, optimizer).step_flops
        peak = dev.peak(self.dtype.name)
        return StepTime(flops, flops / peak, flops / (peak * efficiency), efficiency)

    # --- printing -----------------------------------------------------------------------------
    def table(self) -> str:
        """The per-layer table: module path (class), output shape, parameters, activation values and
        multiply-adds per sample."""
        b = self.batch_size
        head = ("Layer (type)", "Output shape", "Param #", "Activations", "Mult-adds")
        body = []
        for r in self.rows:
            if not (r.leaf or r.params or r.macs):
                continue
            label = "  " * max(r.depth - 1, 0) + (f"{r.name} ({r.kind})" if r.name else f"({r.kind})")
            body.append((label, _fmt_shape(r.output_shape), f"{r.params:,}",
                         f"{_per_sample(r.activations, b):,}", f"{_per_sample(r.macs, b):,}"))
        widths = [max(len(h), *(len(row[i]) for row in body)) if body else len(h) for i, h in enumerate(head)]
        line = "-" * (sum(widths) + 2 * (len(widths) - 1))

        def fmt(cells):
            return "  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))
        out = [line, fmt(head), "=" * len(line)] + [fmt(r) for r in body] + [line]
        return "\n".join(out)

    def totals(self) -> str:
        it = self.dtype.itemsize
        return "\n".join([
            f"Model: {self.name}, input {self.input_size} {self.input_dtype.name}, dtype {self.dtype.name}, "
            f"counted at batch {self.batch_size}",
            f"Total params: {self.total_params:,} ({_mib(self.param_bytes)})",
            f"Trainable params: {self.trainable_params:,}",
            f"Activation values per sample: {self.activation_values:,} ({_mib(self.activation_bytes)}, "
            f"{it} bytes each)",
            f"Mult-adds per sample: {self.macs:,} ({self.macs / 1e9:.3f} G)",
            f"FLOPs per sample (forward): {self.flops:,}",
        ])

    def report(self, batch_size: int | None = None, optimizer: str = "sgd-momentum", device=None,
               efficiency: float = 0.5) -> str:
        """The table, the totals, and the training plan at `batch_size` (on `device`, if given)."""
        b = self.batch_size if batch_size is None else batch_size
        plan = self.plan(b, optimizer)
        rule = self.training_bytes(b, optimizer)
        lines = [self.table(), self.totals(), "",
                 f"Training at batch {b} with {check_optimizer(optimizer)}:",
                 f"  notes' estimate (weights x {OPTIMIZERS[check_optimizer(optimizer)][1]}, activations x 2): "
                 f"{rule:,} bytes ({_gib(rule)})",
                 f"  saved for backward (dry run): {plan.saved:,} bytes ({_gib(plan.saved)})",
                 f"  peak (dry run on meta): {plan.peak:,} bytes ({_gib(plan.peak)})"]
        if device is not None:
            dev = get_device(device)
            if dev.memory is None:
                lines.append(f"  {dev.name}: memory is the host's RAM; pass it as a byte count to plan for it")
            else:
                verdict = "fits" if plan.peak <= dev.memory else "does NOT fit"
                lines.append(f"  {dev.name} ({_gib(dev.memory)}): {verdict}; max batch "
                             f"{self.max_batch_size(dev, optimizer)} (dry runs), "
                             f"{self.max_batch_size(dev, optimizer, rule='notes')} (notes' estimate)")
            if self.dtype.name in dev.peak_flops:
                t = self.step_time(b, dev, efficiency, optimizer)
                lines.append(f"  step time: {t.flops / 1e12:.3f} TFLOP per step; {t.at_peak * 1e3:.1f} ms at "
                             f"{dev.name}'s peak, {t.at_efficiency * 1e3:.1f} ms at {efficiency:.0%} of it")
        return "\n".join(lines)

    def __str__(self):
        return self.table() + "\n" + self.totals()

    def __repr__(self):
        return (f"<Summary {self.name}: {self.total_params:,} params, {self.activation_values:,} activation "
                f"values and {self.macs:,} mult-adds per sample>")


def _check_batch(b) -> int:
    if isinstance(b, bool) or not isinstance(b, int) or b < 0:
        raise ValueError(f"planner: batch_size must be a non-negative integer, got {b!r}")
    return b


def _memory_of(device) -> int:
    dev = get_device(device)
    if dev.memory is None:
        raise ValueError(f"planner: {dev.name} uses the host's RAM; pass the memory as a byte count")
    return dev.memory


def _fmt_shape(shape) -> str:
    if shape and isinstance(shape[0], tuple):
        return ", ".join(str(list(s)) for s in shape)
    return str(list(shape))


def _mib(n) -> str:
    return f"{n / MiB:,.2f} MiB"


def _gib(n) -> str:
    return f"{n / GiB:,.2f} GiB"


def summary(model: Module, input_size, batch_size: int = 1, dtype="float32", device=None, *,
            input_dtype=None, loss_fn=None, optimizer: str = "sgd-momentum", verbose: bool = True,
            name: str | None = None, efficiency: float = 0.5) -> Summary:
    """Plan `model` for inputs of `input_size` (without the batch dim): print a table per layer and
    return a `Summary` (parameters, activations, multiply-adds; the notes' training estimate, and the
    exact peak of a training step from a dry run on the `meta` device). Nothing is allocated and the
    model is not changed. With `device` (a name in `ember.planner.DEVICES` or a byte count) the printed
    report says whether a step at `batch_size` fits, the largest batch that does, and the step time.

    >>> model = ember.nn.Sequential(ember.nn.Linear(784, 100, device="meta"), ember.nn.ReLU(),
    ...                             ember.nn.Linear(100, 10, device="meta"))
    >>> s = ember.summary(model, (784,), batch_size=32, verbose=False)
    >>> s.total_params, s.activation_values, s.macs
    (79510, 994, 79400)
    >>> s.fits("GTX 1080", 32), s.max_batch_size(10**7) > 32
    (True, True)
    """
    if not isinstance(model, Module):
        raise TypeError(f"summary: model must be an ember.nn.Module, got {type(model).__name__}")
    from ..nn.parameter import is_lazy
    lazy = [k for k, t in list(model.named_parameters()) + list(model.named_buffers()) if is_lazy(t)]
    if lazy:
        raise ValueError(f"summary: the model has uninitialized parameters ({', '.join(lazy)}) of lazy modules "
                         f"(nn.LazyLinear ...): run one forward with a dummy batch first, which gives them "
                         f"their shapes")
    if isinstance(input_size, int):
        input_size = (input_size,)
    input_size = tuple(int(s) for s in input_size)
    _check_batch(batch_size)
    if batch_size < 1:
        raise ValueError(f"summary: batch_size must be at least 1, got {batch_size}")
    dt = _dtype.to_dtype(dtype)
    in_dt = _dtype.to_dtype(input_dtype) if input_dtype is not None else dt
    if device is not None:
        get_device(device)   # an unknown name fails before any work
    check_optimizer(optimizer)
    twin = meta_twin(model, dt)
    twin.train()
    x = make_batch(input_size, batch_size, in_dt)
    rows, out, _ = count_forward(twin, x)
    out_shape = tuple(out.shape) if hasattr(out, "shape") else ()
    s = Summary(model, input_size, batch_size, dt, in_dt, loss_fn, rows, out_shape, name=name)
    if verbose:
        print(s.report(batch_size, optimizer, device, efficiency))
    return s
