"""AdaptiveLogSoftmaxWithLoss: the efficient softmax of Grave et al. (2016) for large vocabularies."""
from __future__ import annotations

from collections import namedtuple

from .. import _dtype
from .._errors import op_error
from ..ops import creation as C, math as M
from ..ops.shape import cat
from . import functional as F
from .containers import ModuleList, Sequential
from .linear import Linear
from .module import Module

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """The classes split by `cutoffs` into a shortlist, scored by the head with one extra logit per cluster,
    and tail clusters, each scored by a low-rank projection (in_features // div_value**(i+1) wide) given
    its head logit. forward(input, target) returns (output, loss): the target's log-probability per row and
    the mean of their negatives. Weights and their names are torch's (head, tail.i.0, tail.i.1).

    >>> m = ember.nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs=[4, 8])
    >>> out = m(ember.randn(3, 8), ember.tensor([0, 5, 9]))
    >>> out.output.shape, out.loss.shape, m.log_prob(ember.randn(3, 8)).exp().sum(1).round().tolist()
    ((3,), (), [1.0, 1.0, 1.0])
    """

    def __init__(self, in_features: int, n_classes: int, cutoffs, div_value: float = 4.0,
                 head_bias: bool = False, device=None, dtype=None):
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("AdaptiveLogSoftmaxWithLoss: cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ValueError(f"AdaptiveLogSoftmaxWithLoss: cutoffs should be a sequence of unique, positive "
                             f"integers sorted in an increasing order, where each value is between 1 and "
                             f"n_classes-1 = {n_classes - 1}, got {cutoffs}")
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, device=device, dtype=dtype)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hsz = int(in_features // (div_value ** (i + 1)))
            osz = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(in_features, hsz, bias=False, device=device, dtype=dtype),
                                        Linear(hsz, osz, bias=False, device=device, dtype=dtype)))

    def reset_parameters(self) -> None:
        self.head.reset_parameters()
        for i2h, h2o in self.tail:
            i2h.reset_parameters()
            h2o.reset_parameters()

    def forward(self, input_, target_):
        op = "AdaptiveLogSoftmaxWithLoss"
        if target_.ndim == 1:
            if input_.shape[0] != target_.shape[0]:
                raise op_error(op, f"Input and target should have the same size in the batch dimension, got "
                                   f"input {tuple(input_.shape)} and target {tuple(target_.shape)}")
            if input_.ndim != 2:
                raise op_error(op, f"1D target tensor expects 2D input tensors, but found inputs with size "
                                   f"{tuple(input_.shape)}")
        elif target_.ndim == 0:
            if input_.ndim != 1:
                raise op_error(op, f"0D target tensor expects 1D input tensors, but found inputs with size "
                                   f"{tuple(input_.shape)}")
        else:
            raise op_error(op, f"0D or 1D target tensor expected, multi-target not supported, got target "
                               f"{tuple(target_.shape)}")
        batched = target_.ndim > 0
        input = input_ if batched else input_.unsqueeze(0)
        target = target_ if batched else target_.unsqueeze(0)
        t = target.detach().cpu().long().tolist()   # which rows go to which cluster: host bookkeeping
        if t and (min(t) < 0 or max(t) >= self.n_classes):
            raise op_error(op, f"Target values should be in [0, {self.n_classes - 1}], but values in range "
                               f"[{min(t)}, {max(t)}] were found.")
        dev = input.device
        # the head's column for each row: its class in the shortlist, else its cluster's logit
        head_col = list(t)
        output = C.zeros(len(t), dtype=input.dtype, device=dev)
        for i in range(self.n_clusters):
            low, high = self.cutoffs[i], self.cutoffs[i + 1]
            rows = [r for r, c in enumerate(t) if low <= c < high]
            if not rows:
                continue
            for r in rows:
                head_col[r] = self.shortlist_size + i
            rows_t = C.tensor(rows, dtype=_dtype.int64, device=dev)
            cluster_logprob = F.log_softmax(self.tail[i](input.index_select(0, rows_t)), dim=1)   # (R, osz)
            local_t = C.tensor([t[r] - low for r in rows], dtype=_dtype.int64, device=dev)
            local = cluster_logprob.gather(1, local_t.unsqueeze(1)).squeeze(1)
            output = output.index_add(0, rows_t, local)
        head_logprob = F.log_softmax(self.head(input), dim=1)
        head_col_t = C.tensor(head_col, dtype=_dtype.int64, device=dev).reshape(-1, 1)
        output = output + head_logprob.gather(1, head_col_t).squeeze(1)
        loss = M.neg(output).mean()
        return _ASMoutput(output if batched else output.squeeze(0), loss)

    def _get_full_log_prob(self, input, head_output):
        head_logprob = F.log_softmax(head_output, dim=1)
        parts = [head_logprob[:, :self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster_logprob = F.log_softmax(self.tail[i](input), dim=1)
            parts.append(cluster_logprob + head_logprob[:, self.shortlist_size + i].unsqueeze(1))
        return cat(parts, 1)   # (N, n_classes)

    def log_prob(self, input):
        """The log-probability of every class, (N, n_classes) for (N, in_features), (n_classes,) unbatched."""
        batched = input.ndim == 2
        x = input if batched else input.unsqueeze(0)
        out = self._get_full_log_prob(x, self.head(x))
        return out if batched else out.squeeze(0)

    def predict(self, input):
        """The most likely class of each row (argmax of log_prob)."""
        return M.argmax(self.log_prob(input), dim=-1)
