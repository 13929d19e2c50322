"""Variable-length sequences for the recurrent layers, with torch's names and semantics.

A batch of sequences of different lengths is either *padded* (one tensor, shorter sequences filled up with
`padding_value`) or *packed*: a `PackedSequence` keeps only the real steps, time-major. Its `data` holds,
for each time step t, the steps of the sequences still running at t (the longest first), and
`batch_sizes[t]` says how many there are:

    lengths 3, 2, 1:   a0 b0 c0 | a1 b1 | a2        data (6, *), batch_sizes [3, 2, 1]

RNN, LSTM and GRU accept a PackedSequence and return one: each sequence stops at its own length (its final
hidden state is the one after its last real step, not after the padding). Everything here is made of
Tensor ops, so gradients flow back to the padded input.
"""
from __future__ import annotations

from typing import NamedTuple

from ..._errors import op_error
from ..._dtype import int64
from ..._tensor import Tensor
from ...ops import creation as C, shape as S

__all__ = ["PackedSequence", "pad_sequence", "unpad_sequence", "pack_padded_sequence",
           "pad_packed_sequence", "pack_sequence", "unpack_sequence", "invert_permutation"]


class PackedSequence(NamedTuple):
    """data (sum of lengths, *); batch_sizes (max length,) int64 on the CPU; sorted_indices: the batch
    order in `data` (longest first) as indices of the original batch, or None when the batch was given
    sorted; unsorted_indices: its inverse."""
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None = None
    unsorted_indices: Tensor | None = None

    def to(self, *args, **kwargs) -> "PackedSequence":
        """`data` (and the index tensors, to its device) moved or cast; batch_sizes stays on the CPU."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        move = (lambda t: None if t is None else t.to(data.device))
        return PackedSequence(data, self.batch_sizes, move(self.sorted_indices), move(self.unsorted_indices))

    @property
    def is_cuda(self) -> bool:
        return self.data.is_cuda

    def is_pinned(self) -> bool:
        return self.data.is_pinned()


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The permutation p' with p'[p[i]] = i (None for None)."""
    if permutation is None:
        return None
    out = C.empty_like(permutation)
    out[permutation] = C.arange(permutation.numel(), dtype=permutation.dtype, device=permutation.device)
    return out


def _lengths_list(op, lengths, batch):
    if isinstance(lengths, Tensor):
        if lengths.ndim != 1 or lengths.dtype.is_floating_point:
            raise op_error(op, f"expected `lengths` to be a 1D integer tensor, got {lengths.ndim}D "
                               f"{lengths.dtype}")
        lengths = lengths.tolist()
    lengths = [int(n) for n in lengths]
    if len(lengths) != batch:
        raise op_error(op, f"expected {batch} lengths (one per sequence of the batch), got {len(lengths)}")
    return lengths


def pad_sequence(sequences, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """Stack tensors of shape (L_i, *) into (max L, B, *) (batch_first: (B, max L, *)), padded with
    `padding_value` on the right (or on the left with padding_side='left')."""
    op = "pad_sequence"
    if isinstance(sequences, Tensor):
        sequences = list(sequences.unbind(0))
    if not sequences:
        raise op_error(op, "received an empty list of sequences")
    if padding_side not in ("left", "right"):
        raise op_error(op, f"padding_side must be 'left' or 'right', got {padding_side!r}", ValueError)
    trailing = tuple(sequences[0].shape[1:])
    for k, s in enumerate(sequences):
        if s.ndim == 0 or tuple(s.shape[1:]) != trailing:
            raise op_error(op, f"sequence {k} has shape {tuple(s.shape)}; every sequence must have shape "
                               f"(L, {', '.join(map(str, trailing))})" if trailing else
                               f"sequence {k} has shape {tuple(s.shape)}; every sequence must be (L, *) "
                               f"with the same trailing dims as sequence 0")
    longest = max(s.shape[0] for s in sequences)
    rows = []
    for s in sequences:
        short = longest - s.shape[0]
        if short:
            fill = C.full((short,) + trailing, padding_value, dtype=s.dtype, device=s.device)
            s = S.cat([s, fill] if padding_side == "right" else [fill, s], 0)
        rows.append(s)
    return S.stack(rows, 0 if batch_first else 1)


def unpad_sequence(padded_sequences: Tensor, lengths, batch_first: bool = False) -> list[Tensor]:
    """The inverse of pad_sequence (right padding): the list of (L_i, *) tensors."""
    x = padded_sequences if batch_first else padded_sequences.transpose(0, 1)
    lengths = _lengths_list("unpad_sequence", lengths, x.shape[0])
    return [x[i, :n] for i, n in enumerate(lengths)]


def pack_padded_sequence(input: Tensor, lengths, batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded batch (T, B, *) (batch_first: (B, T, *)) of sequences with the given lengths.

    enforce_sorted=True expects lengths in decreasing order (as torch, e.g. for ONNX export); with False
    the batch is sorted here and `sorted_indices` records the order."""
    op = "pack_padded_sequence"
    if input.ndim < 2:
        raise op_error(op, f"expected input of at least 2 dims (T, B, *), got shape {tuple(input.shape)}")
    batch_dim = 0 if batch_first else 1
    lengths = _lengths_list(op, lengths, input.shape[batch_dim])
    T = input.shape[1 - batch_dim]
    if any(n <= 0 for n in lengths):
        raise op_error(op, f"Length of all samples has to be greater than 0, but found an element in "
                           f"'lengths' that is <= 0 (lengths {lengths})")
    if max(lengths) > T:
        raise op_error(op, f"a length {max(lengths)} is longer than the input's {T} time steps "
                           f"(input shape {tuple(input.shape)}, batch_first={batch_first})")
    sorted_indices = None
    if enforce_sorted:
        if any(a < b for a, b in zip(lengths, lengths[1:])):
            raise op_error(op, f"`lengths` array must be sorted in decreasing order when `enforce_sorted` "
                               f"is True (got {lengths}). You can pass `enforce_sorted=False` to "
                               f"pack_padded_sequence and/or pack_sequence to sidestep this requirement")
    else:
        order = sorted(range(len(lengths)), key=lambda i: -lengths[i])   # stable, as torch's sort
        sorted_indices = C.tensor(order, dtype=int64, device=input.device)
        lengths = [lengths[i] for i in order]
        input = input.index_select(batch_dim, sorted_indices)
    x = input.transpose(0, 1) if batch_first else input          # (T, B, *)
    batch_sizes = [sum(1 for n in lengths if n > t) for t in range(lengths[0])]
    data = S.cat([x[t, :b] for t, b in enumerate(batch_sizes)], 0)
    return PackedSequence(data, C.tensor(batch_sizes, dtype=int64), sorted_indices,
                          invert_permutation(sorted_indices))


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False, padding_value: float = 0.0,
                        total_length: int | None = None) -> tuple[Tensor, Tensor]:
    """The inverse of pack_padded_sequence: (padded (T, B, *) or (B, T, *), lengths) in the batch's
    original order; total_length pads T further (for DataParallel-style gathering)."""
    op = "pad_packed_sequence"
    if not isinstance(sequence, PackedSequence):
        raise op_error(op, f"expected a PackedSequence, got {type(sequence).__name__}", TypeError)
    batch_sizes = sequence.batch_sizes.tolist()
    T = len(batch_sizes)
    if total_length is not None:
        if total_length < T:
            raise op_error(op, f"Expected total_length to be at least the length of the longest sequence "
                               f"({T}), but got total_length={total_length}", ValueError)
    padded = _pad_steps(sequence.data, batch_sizes, padding_value)
    if total_length is not None and total_length > T:
        N, rest = padded.shape[1], tuple(padded.shape[2:])
        fill = C.full((total_length - T, N) + rest, padding_value, dtype=padded.dtype, device=padded.device)
        padded = S.cat([padded, fill], 0)
    B = batch_sizes[0]
    lengths = [sum(1 for b in batch_sizes if b > i) for i in range(B)]
    if sequence.unsorted_indices is not None:
        padded = padded.index_select(1, sequence.unsorted_indices)
        lengths = [lengths[i] for i in sequence.unsorted_indices.tolist()]
    if batch_first:
        padded = padded.transpose(0, 1)
    return padded, C.tensor(lengths, dtype=int64)


def _pad_steps(data: Tensor, batch_sizes: list[int], padding_value: float = 0.0) -> Tensor:
    """Packed `data` back to time-major (T, B, *), in the packed (sorted) batch order."""
    B, rest = batch_sizes[0], tuple(data.shape[1:])
    steps, start = [], 0
    for b in batch_sizes:
        step = data[start:start + b]
        if b < B:
            fill = C.full((B - b,) + rest, padding_value, dtype=data.dtype, device=data.device)
            step = S.cat([step, fill], 0)
        steps.append(step)
        start += b
    return S.stack(steps, 0)


def _pack_steps(x: Tensor, batch_sizes: list[int]) -> Tensor:
    """Time-major (T, B, *) to packed `data`: the first batch_sizes[t] rows of each step."""
    return S.cat([x[t, :b] for t, b in enumerate(batch_sizes)], 0)


def pack_sequence(sequences, enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of (L_i, *) tensors (pad_sequence, then pack_padded_sequence)."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """The list of (L_i, *) tensors of a PackedSequence, in the original batch order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
