"""DataParallel: one process, the batch split over several devices (torch.nn.DataParallel).

Each forward replicates the module onto every device (`param.to(device)`: differentiable, so gradients
flow back through the copies and are *summed* into the original parameters), scatters the inputs along
`dim`, runs the replicas, and gathers the outputs onto `output_device`. The replicas run one after the
other in this thread (on CUDA the kernels are asynchronous, so devices still overlap; on CPU device ids
it is a correctness tool, not a speed-up).

CPU device ids for testing: `device_ids=["cpu:0", "cpu:1"]` are two distinct Ember devices backed by the
host, so the replica copies, the scatter and the gather all really happen.
"""
from __future__ import annotations

import copy

from ..module import Module
from ..._device import device as _device
from ..._tensor import Tensor

__all__ = ["DataParallel"]


def _as_device(d):
    if isinstance(d, _device):
        return d
    if isinstance(d, int):
        return _device("cuda", d)
    return _device(d)


class DataParallel(Module):
    """>>> dp = nn.DataParallel(model, device_ids=["cpu:0", "cpu:1"])
    >>> out = dp(x)              # x split in 2 along dim 0, out gathered on cpu:0
    >>> out.sum().backward()     # model's parameters get the summed gradients
    """

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0):
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DataParallel: module must be an nn.Module, got {type(module).__name__}")
        self.module = module
        if device_ids is None:
            from ... import cuda
            n = cuda.device_count() if cuda.is_available() else 0
            device_ids = list(range(n))
        self.device_ids = [_as_device(d) for d in device_ids]
        if not self.device_ids:     # no accelerator: run the module as is (torch's behaviour)
            self.output_device = None
        else:
            self.output_device = _as_device(output_device) if output_device is not None else self.device_ids[0]
        self.dim = dim

    def forward(self, *inputs, **kwargs):
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        chunks = _scatter(inputs, kwargs, self.device_ids, self.dim)
        if not chunks:
            raise ValueError("DataParallel: no tensor input to split along dim "
                             f"{self.dim}")
        devices = self.device_ids[:len(chunks)]
        if len(devices) == 1:
            args, kw = chunks[0]
            return _moved(self.module(*args, **kw), self.output_device)
        outputs = []
        for dev, (args, kw) in zip(devices, chunks):
            outputs.append(replicate(self.module, dev)(*args, **kw))
        return gather(outputs, self.output_device, self.dim)


def replicate(module: Module, device) -> Module:
    """A copy of `module` on `device` whose parameters are `p.to(device)` (part of the graph: gradients
    reach the originals) and whose buffers are copies."""
    memo = {}
    for p in module.parameters():
        memo[id(p)] = p.to(device)
    for b in module.buffers():
        memo[id(b)] = b.detach().to(device)
    return copy.deepcopy(module, memo)


def _split(t: Tensor, n: int, dim: int):
    return t.chunk(n, dim)


def _scatter(inputs, kwargs, devices, dim):
    """[(args, kwargs)] per device; tensors split along `dim`, other values passed to every replica."""
    n = len(devices)
    sizes = [a.shape[dim] for a in list(inputs) + list(kwargs.values()) if isinstance(a, Tensor)]
    if not sizes:
        return []
    n = min(n, sizes[0])

    def part(a, i, dev):
        if isinstance(a, Tensor):
            return _split(a, n, dim)[i].to(dev)
        if isinstance(a, (list, tuple)):
            return type(a)(part(x, i, dev) for x in a)
        return a
    return [(tuple(part(a, i, devices[i]) for a in inputs), {k: part(v, i, devices[i]) for k, v in kwargs.items()})
            for i in range(n)]


def _moved(out, dev):
    if isinstance(out, Tensor):
        return out.to(dev)
    if isinstance(out, (list, tuple)):
        return type(out)(_moved(o, dev) for o in out)
    if isinstance(out, dict):
        return {k: _moved(v, dev) for k, v in out.items()}
    return out


def gather(outputs, device, dim: int = 0):
    """Concatenate the replicas' outputs along `dim` on `device` (tuples and dicts element-wise)."""
    from ...ops.shape import cat
    first = outputs[0]
    if isinstance(first, Tensor):
        if first.dim() == 0:      # a scalar per replica (a loss): stacked, as torch
            from ...ops.shape import stack
            return stack([o.to(device) for o in outputs])
        return cat([o.to(device) for o in outputs], dim)
    if isinstance(first, (list, tuple)):
        return type(first)(gather([o[i] for o in outputs], device, dim) for i in range(len(first)))
    if isinstance(first, dict):
        return {k: gather([o[k] for o in outputs], device, dim) for k in first}
    return outputs
