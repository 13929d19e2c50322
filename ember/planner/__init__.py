"""The hardware planner: parameters, activations, multiply-adds, and whether training fits a device.

    s = ember.summary(model, (3, 224, 224), batch_size=128, device="GTX 1080")
    s.training_bytes(128, "sgd-momentum")      # the notes' rule of thumb
    s.peak_training_bytes(128, "sgd-momentum") # exact: a dry run of training steps on device='meta'
    s.max_batch_size("GTX 1080")

Modules: `devices` (the table of GPUs and CPUs), `tracker` (the dispatch mode that counts bytes and
multiply-adds), `dryrun` (runs on meta, and the measured peak on the CPU), `report` (`summary`, the
`Summary` object and its table), `cli` (`ember summary`). See docs/planner.md. `import ember` imports
only this file and the device table: the rest (and ember.nn) loads on the first call.
"""
from .devices import DEVICES, Device, get_device

__all__ = ["summary", "Summary", "StepTime", "DEVICES", "Device", "get_device", "PlanError", "dry_run_step",
           "measure_training_peak", "meta_twin"]

_LAZY = {"Summary": "report", "StepTime": "report", "PlanError": "dryrun", "dry_run_step": "dryrun",
         "measure_training_peak": "dryrun", "meta_twin": "dryrun"}


def summary(model, input_size, batch_size=1, dtype="float32", device=None, **kwargs):
    """Print a per-layer table of `model` for inputs of `input_size` and return a `Summary`: see
    `ember.planner.report.summary` and docs/planner.md.

    >>> s = ember.summary(ember.nn.Linear(784, 10), (784,), verbose=False)
    >>> s.total_params, s.macs
    (7850, 7840)
    """
    from .report import summary as _summary
    return _summary(model, input_size, batch_size, dtype, device, **kwargs)


def __getattr__(name):
    if name in _LAZY:
        import importlib
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'ember.planner' has no attribute {name!r}")
