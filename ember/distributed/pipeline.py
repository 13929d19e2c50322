"""A GPipe-style pipeline over processes: rank r holds stage r of a Sequential.

`train_step(x, target)` splits the batch into `chunks` micro-batches; every stage runs all forwards (the
activation of micro-batch m goes to the next rank as soon as it is computed), then all backwards in
reverse order (the gradient of each stage's input goes back to the previous rank). Each micro-batch's
loss is weighted by its share of the batch, so with a mean-reduced loss the accumulated gradients equal
those of the unsplit model on the whole batch.

    pipe = Pipeline(nn.Sequential(l1, relu, l2, relu, l3), chunks=4)      # under ember run -n 2
    loss = pipe.train_step(x, y, F.cross_entropy)    # rank 0 needs x, the last rank y; loss on the last
    opt.step()                                       # each rank's optimizer over pipe.stage.parameters()
"""
from __future__ import annotations

from .. import _dtype
from .._tensor import Tensor
from . import _core as dist

__all__ = ["Pipeline", "split_balance"]

_ACT_HDR, _ACT, _GRAD = 7201, 7202, 7203
_DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool"]
_MAX_DIM = 8


def split_balance(n_layers: int, n_stages: int) -> list[int]:
    """Layers per stage, as even as possible (earlier stages take the remainder)."""
    if n_layers < n_stages:
        raise ValueError(f"Pipeline: {n_layers} layers cannot fill {n_stages} stages")
    q, r = divmod(n_layers, n_stages)
    return [q + (i < r) for i in range(n_stages)]


class Pipeline:
    def __init__(self, module, balance: list[int] | None = None, chunks: int = 4):
        from ..nn.containers import Sequential
        if not isinstance(module, Sequential):
            raise TypeError(f"Pipeline: expected an nn.Sequential, got {type(module).__name__}")
        if chunks < 1:
            raise ValueError(f"Pipeline: chunks must be >= 1, got {chunks}")
        self.world = dist.get_world_size()
        self.rank = dist.get_rank()
        layers = list(module)
        balance = split_balance(len(layers), self.world) if balance is None else list(balance)
        if len(balance) != self.world or sum(balance) != len(layers) or min(balance) < 1:
            raise ValueError(f"Pipeline: balance {balance} must give each of the {self.world} ranks at least one "
                             f"layer and sum to {len(layers)}")
        start = sum(balance[:self.rank])
        self.stage = Sequential(*layers[start:start + balance[self.rank]])
        self.chunks = chunks
        self.first = self.rank == 0
        self.last = self.rank == self.world - 1

    def parameters(self):
        return self.stage.parameters()

    def _send_act(self, t: Tensor):
        from ..ops.creation import tensor
        shape = list(t.shape)
        if len(shape) > _MAX_DIM:
            raise ValueError(f"Pipeline: activations of more than {_MAX_DIM} dims are not supported ({shape})")
        hdr = tensor([_DTYPES.index(t.dtype.name), len(shape)] + shape + [0] * (_MAX_DIM - len(shape)),
                     dtype=_dtype.int64)
        dist.send(hdr, self.rank + 1, tag=_ACT_HDR)
        dist.send(t.detach(), self.rank + 1, tag=_ACT)

    def _recv_act(self) -> Tensor:
        from ..ops.creation import empty, zeros
        hdr = zeros(2 + _MAX_DIM, dtype=_dtype.int64)
        dist.recv(hdr, self.rank - 1, tag=_ACT_HDR)
        h = [int(v) for v in hdr.tolist()]
        t = empty(tuple(h[2:2 + h[1]]), dtype=getattr(_dtype, _DTYPES[h[0]]))
        dist.recv(t, self.rank - 1, tag=_ACT)
        return t

    def train_step(self, x: Tensor | None = None, target: Tensor | None = None, loss_fn=None):
        """One forward and backward of the whole batch in micro-batches; gradients accumulate into the
        stage's `.grad`. Returns the batch loss (a float) on the last rank, None elsewhere."""
        from ..ops.creation import empty
        if self.first and x is None:
            raise ValueError("Pipeline.train_step: rank 0 needs the input batch x")
        if self.last and (target is None or loss_fn is None):
            raise ValueError("Pipeline.train_step: the last rank needs target and loss_fn")
        xs = list(x.chunk(self.chunks, 0)) if self.first else None
        ts = list(target.chunk(self.chunks, 0)) if self.last else None
        n_total = target.shape[0] if self.last else None
        n_micro = len(xs) if self.first else None
        # every rank learns the number of micro-batches (chunk may give fewer than asked)
        if self.world > 1:
            box = [n_micro]
            dist.broadcast_object_list(box, src=0)
            n_micro = box[0]
        inputs, outputs, losses = [], [], []
        for m in range(n_micro):                       # all forwards
            inp = xs[m] if self.first else self._recv_act().requires_grad_()
            out = self.stage(inp)
            inputs.append(inp)
            if self.last:
                loss = loss_fn(out, ts[m]) * (ts[m].shape[0] / n_total)
                losses.append(loss)
            else:
                self._send_act(out)
                outputs.append(out)
        for m in reversed(range(n_micro)):             # all backwards, last micro-batch first
            if self.last:
                losses[m].backward()
            else:
                g = empty(tuple(outputs[m].shape), dtype=outputs[m].dtype)
                dist.recv(g, self.rank + 1, tag=_GRAD)
                outputs[m].backward(g)
            if not self.first:
                gi = inputs[m].grad
                dist.send(gi, self.rank - 1, tag=_GRAD)
        if self.last:
            return float(sum(float(v) for v in losses))
        return None
