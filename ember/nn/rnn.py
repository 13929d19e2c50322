"""Recurrent layers: RNN, LSTM, GRU (multi-layer, bidirectional, batch_first) and their cells.

Parameter names, shapes, gate order (LSTM: i, f, g, o; GRU: r, z, n) and initialisation
U(-1/sqrt(hidden), 1/sqrt(hidden)) are torch's, so state dicts move between the two. LSTM's proj_size = p
projects each h_t to size p with a weight_hr_l{k} (p, hidden) of its own, as torch's.

Under autocast the layers follow torch's CPU kernels: an LSTM without projection on unpacked input runs
whole in the autocast dtype (input, states and weights cast, outputs and states in that dtype: torch's
oneDNN LSTM); every other layer and cell is a composite whose linear maps autocast casts one by one (RNN
and RNNCell then end in the lower dtype, GRU, the cells of LSTM and GRU, and the packed or projected
LSTM's cell state in float32), as torch's composites do.
"""
from __future__ import annotations

import math

from .._errors import op_error
from ..amp import active as _autocast_active, autocast_op
from ..ops import creation as C, math as M, shape as S
from . import functional as F, init
from .module import Module
from .parameter import Parameter
from .utils.rnn import PackedSequence, _pack_steps, _pad_steps

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


# ------------------------------------------------------------------ one time step, per mode
# `xw` is the input projection x @ W_ih^T + b_ih, computed for all steps at once outside the loop.
def _rnn_step(xw, h, w_hh, b_hh, relu):
    pre = xw + F.linear(h, w_hh, b_hh)
    return M.relu(pre) if relu else M.tanh(pre)


def _lstm_step(xw, state, w_hh, b_hh, w_hr=None):
    h, c = state                                               # (N, P or H), (N, H)
    gates = xw + F.linear(h, w_hh, b_hh)                       # (N, 4H)
    i, f, g, o = S.chunk(gates, 4, -1)
    c = M.sigmoid(f) * c + M.sigmoid(i) * M.tanh(g)
    h = M.sigmoid(o) * M.tanh(c)
    return (h if w_hr is None else F.linear(h, w_hr)), c       # with a projection: h (N, P)


def _gru_step(xw, h, w_hh, b_hh):
    gh = F.linear(h, w_hh, b_hh)                              # (N, 3H)
    xr, xz, xn = S.chunk(xw, 3, -1)
    hr, hz, hn = S.chunk(gh, 3, -1)
    r = M.sigmoid(xr + hr)
    z = M.sigmoid(xz + hz)
    n = M.tanh(xn + r * hn)
    return (1 - z) * n + z * h


class RNNBase(Module):
    """Shared machinery of RNN, LSTM and GRU; `mode` is 'RNN_TANH', 'RNN_RELU', 'LSTM' or 'GRU'."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        if not isinstance(dropout, (int, float)) or not 0 <= dropout <= 1 or isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of "
                             "an element being zeroed")
        if not isinstance(hidden_size, int) or hidden_size <= 0:
            raise ValueError(f"hidden_size must be a positive integer, got {hidden_size!r}")
        if num_layers <= 0:
            raise ValueError(f"num_layers must be a positive integer, got {num_layers!r}")
        if isinstance(proj_size, bool) or not isinstance(proj_size, int) or proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bias, batch_first
        self.dropout, self.bidirectional, self.proj_size = float(dropout), bidirectional, proj_size
        gate = _GATES[mode] * hidden_size
        dirs = 2 if bidirectional else 1
        real_hidden = proj_size or hidden_size                     # the size of h (c keeps hidden_size)
        self._flat_weights_names = []
        for layer in range(num_layers):
            for d in range(dirs):
                sfx = f"_l{layer}" + ("_reverse" if d else "")
                in_size = input_size if layer == 0 else real_hidden * dirs
                names = [("weight_ih" + sfx, (gate, in_size)), ("weight_hh" + sfx, (gate, real_hidden))]
                if bias:
                    names += [("bias_ih" + sfx, (gate,)), ("bias_hh" + sfx, (gate,))]
                if proj_size:
                    names += [("weight_hr" + sfx, (proj_size, hidden_size))]
                for name, shape in names:
                    setattr(self, name, Parameter(C.empty(*shape, device=device, dtype=dtype)))
                    self._flat_weights_names.append(name)
        self.reset_parameters()

    def reset_parameters(self):
        std = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for p in self.parameters():
            init.uniform_(p, -std, std)

    def flatten_parameters(self):
        """Does nothing, as torch's off cuDNN: each weight is its own tensor and no kernel needs them in one
        block (scripts call it after loading or in `forward`)."""

    @property
    def all_weights(self):
        per = (4 if self.bias else 2) + (1 if self.proj_size else 0)
        ws = [getattr(self, n) for n in self._flat_weights_names]
        return [ws[i:i + per] for i in range(0, len(ws), per)]

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.mode == "RNN_RELU":
            s += ", nonlinearity='relu'"
        if not self.bias:
            s += ", bias=False"
        if self.batch_first:
            s += ", batch_first=True"
        if self.dropout:
            s += f", dropout={self.dropout}"
        if self.bidirectional:
            s += ", bidirectional=True"
        return s

    def _weights(self, layer, d):
        sfx = f"_l{layer}" + ("_reverse" if d else "")
        g = lambda n: getattr(self, n + sfx) if (self.bias or n.startswith("weight")) else None  # noqa: E731
        w_hr = getattr(self, "weight_hr" + sfx) if self.proj_size else None
        return g("weight_ih"), g("weight_hh"), g("bias_ih"), g("bias_hh"), w_hr

    def _step(self, xw, state, w_hh, b_hh, w_hr=None):
        """One time step: (output h, new state)."""
        if self.mode == "LSTM":
            state = _lstm_step(xw, state, w_hh, b_hh, w_hr)
            return state[0], state
        if self.mode == "GRU":
            state = _gru_step(xw, state, w_hh, b_hh)
        else:
            state = _rnn_step(xw, state, w_hh, b_hh, self.mode == "RNN_RELU")
        return state, state

    def _run_direction(self, x, state, layer, d, batch_sizes=None, weights=None):
        """One layer, one direction over x (L, N, H_in); returns outputs (L, N, H) and the last state.

        batch_sizes (packed input, sequences sorted longest first): at step t only the first
        batch_sizes[t] sequences run; the others keep their state and output zeros there. Going backwards
        a sequence so starts from its initial state at its own last step."""
        w_ih, w_hh, b_ih, b_hh, w_hr = self._weights(layer, d) if weights is None else weights
        L, N = x.shape[0], x.shape[1]
        xw = F.linear(x, w_ih, b_ih)                               # (L, N, G*H): one GEMM for all steps
        steps = S.unbind(xw, 0)
        order = range(L - 1, -1, -1) if d else range(L)
        outs = [None] * L
        for t in order:
            n = N if batch_sizes is None else batch_sizes[t]
            if n == N:
                outs[t], state = self._step(steps[t], state, w_hh, b_hh, w_hr)
                continue
            part = tuple(s[:n] for s in state) if self.mode == "LSTM" else state[:n]
            h, part = self._step(steps[t][:n], part, w_hh, b_hh, w_hr)
            keep = (lambda new, old: S.cat([new, old[n:]], 0))
            state = tuple(map(keep, part, state)) if self.mode == "LSTM" else keep(part, state)
            outs[t] = S.cat([h, C.zeros(N - n, h.shape[1], dtype=h.dtype, device=h.device)], 0)
        return S.stack(outs, 0), state

    def forward(self, input, hx=None):
        is_lstm = self.mode == "LSTM"
        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx)
        batched = input.ndim == 3
        if input.ndim not in (2, 3):
            raise op_error(type(self).__name__, f"expected input to be 2D or 3D, got {input.ndim}D "
                                                f"of shape {tuple(input.shape)}", ValueError)
        if input.shape[-1] != self.input_size:
            raise op_error(type(self).__name__, f"input.size(-1) must be equal to input_size. "
                                                f"Expected {self.input_size}, got {input.shape[-1]}")
        x = input if batched else input.unsqueeze(1)
        if batched and self.batch_first:
            x = x.transpose(0, 1)                                  # (L, N, H_in)
        if hx is not None and not batched:
            hx = tuple(h.unsqueeze(1) for h in hx) if is_lstm else hx.unsqueeze(1)
        if is_lstm and not self.proj_size and _autocast_active():
            dirs = 2 if self.bidirectional else 1
            weights = [self._weights(k // dirs, k % dirs) for k in range(self.num_layers * dirs)]
            output, hidden = _lstm_autocast(self, x, self._initial_state(hx, x), weights)
        else:
            output, hidden = self._layers(x, self._initial_state(hx, x))
        if batched and self.batch_first:
            output = output.transpose(0, 1)
        if not batched:
            output = output.squeeze(1)
            hidden = tuple(h.squeeze(1) for h in hidden) if is_lstm else hidden.squeeze(1)
        return output, hidden

    def _initial_state(self, hx, x):
        """hx checked against (layers * directions, N, hidden) for time-major x (L, N, H_in), or zeros.
        With proj_size an LSTM's h is (layers * directions, N, proj_size), its c as without."""
        shape = (self.num_layers * (2 if self.bidirectional else 1), x.shape[1], self.hidden_size)
        h_shape = shape[:2] + (self.proj_size,) if self.proj_size else shape
        if hx is None:
            c0 = C.zeros(*shape, dtype=x.dtype, device=x.device)
            h0 = C.zeros(*h_shape, dtype=x.dtype, device=x.device) if self.proj_size else c0
            return (h0, c0) if self.mode == "LSTM" else h0
        states = hx if self.mode == "LSTM" else (hx,)
        for k, (h, want) in enumerate(zip(states, (h_shape, shape))):
            if tuple(h.shape) != want:
                what = f"hidden[{k}]" if self.mode == "LSTM" else "hidden"
                raise op_error(type(self).__name__, f"expected {what} size {want}, got {tuple(h.shape)}")
        return hx

    def _forward_packed(self, input, hx):
        """A PackedSequence in, a PackedSequence out (torch's contract): the packed steps are padded to
        (L, N, H) in the packed order, each sequence runs to its own length, the output is packed again;
        hx and the returned states are in the batch's original order."""
        is_lstm = self.mode == "LSTM"
        data, batch_sizes, sorted_indices, unsorted_indices = input
        if data.ndim != 2 or data.shape[-1] != self.input_size:
            raise op_error(type(self).__name__, f"expected packed data of shape (steps, {self.input_size}), "
                                                f"got {tuple(data.shape)}")
        sizes = batch_sizes.tolist()
        x = _pad_steps(data, sizes)                                # (L, N, H_in), packed order
        if hx is not None and sorted_indices is not None:
            self._initial_state(hx, x)                             # check the shapes first
            hx = tuple(h.index_select(1, sorted_indices) for h in hx) if is_lstm \
                else hx.index_select(1, sorted_indices)
        output, hidden = self._layers(x, self._initial_state(hx, x), sizes)
        if unsorted_indices is not None:
            hidden = tuple(h.index_select(1, unsorted_indices) for h in hidden) if is_lstm \
                else hidden.index_select(1, unsorted_indices)
        return PackedSequence(_pack_steps(output, sizes), batch_sizes, sorted_indices, unsorted_indices), hidden

    def _layers(self, x, hx, batch_sizes=None, weights=None):
        """Every layer and direction over time-major x (L, N, H_in): (output (L, N, dirs*H), hidden);
        `weights`: the (w_ih, w_hh, b_ih, b_hh, w_hr) of each layer and direction instead of the
        module's own (cast ones, `_lstm_autocast`)."""
        is_lstm = self.mode == "LSTM"
        dirs = 2 if self.bidirectional else 1
        h_n, c_n = [], []
        for layer in range(self.num_layers):
            outs = []
            for d in range(dirs):
                k = layer * dirs + d
                state = (hx[0][k], hx[1][k]) if is_lstm else hx[k]
                out, state = self._run_direction(x, state, layer, d, batch_sizes,
                                                 None if weights is None else weights[k])
                outs.append(out)
                if is_lstm:
                    h_n.append(state[0])
                    c_n.append(state[1])
                else:
                    h_n.append(state)
            x = outs[0] if dirs == 1 else S.cat(outs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        h_n = S.stack(h_n, 0)
        return x, ((h_n, S.stack(c_n, 0)) if is_lstm else h_n)


@autocast_op("lower")
def _lstm_autocast(module, x, hx, weights):
    """An LSTM's layers under autocast as torch's oneDNN LSTM: x, the states and every weight cast to the
    autocast dtype (the casts are differentiable: the float32 parameters get their gradients), autocast
    suspended inside."""
    return module._layers(x, hx, weights=weights)


class RNN(RNNBase):
    """Elman RNN: h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh) (or relu).

    >>> out, h = ember.nn.RNN(10, 20, 2)(ember.randn(5, 3, 10))
    >>> out.shape, h.shape
    ((5, 3, 20), (2, 3, 20))
    """

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, device=None, dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size, hidden_size,
                         num_layers, bias, batch_first, dropout, bidirectional, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity


class LSTM(RNNBase):
    """Long short-term memory; returns (output, (h_n, c_n)). With proj_size = p > 0, each h_t is projected to
    size p by weight_hr_l{k} (p, hidden_size): output and h_n have p features, c_n hidden_size.

    >>> out, (h, c) = ember.nn.LSTM(10, 20, 2, proj_size=5)(ember.randn(7, 3, 10))
    >>> out.shape, h.shape, c.shape
    ((7, 3, 5), (2, 3, 5), (2, 3, 20))
    """

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         proj_size, device, dtype)


class GRU(RNNBase):
    """Gated recurrent unit; returns (output, h_n)."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, device=None, dtype=None):
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         device=device, dtype=dtype)


class RNNCellBase(Module):
    _gates = 1

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        g = self._gates * hidden_size
        self.weight_ih = Parameter(C.empty(g, input_size, device=device, dtype=dtype))
        self.weight_hh = Parameter(C.empty(g, hidden_size, device=device, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(C.empty(g, device=device, dtype=dtype))
            self.bias_hh = Parameter(C.empty(g, device=device, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self):
        std = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for p in self.parameters():
            init.uniform_(p, -std, std)

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if not self.bias:
            s += ", bias=False"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def _prepare(self, input, hx, n_states):
        if input.ndim not in (1, 2):
            raise op_error(type(self).__name__, f"Expected input to be 1D or 2D, got {input.ndim}D instead",
                           ValueError)
        batched = input.ndim == 2
        x = input if batched else input.unsqueeze(0)
        if hx is None:
            z = C.zeros(x.shape[0], self.hidden_size, dtype=x.dtype, device=x.device)
            hx = (z,) * n_states
        else:
            hx = hx if isinstance(hx, tuple) else (hx,)
            hx = hx if batched else tuple(h.unsqueeze(0) for h in hx)
        return x, hx, batched

    def _xw(self, x):
        return F.linear(x, self.weight_ih, self.bias_ih)


class RNNCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, device, dtype)
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        x, (h,), batched = self._prepare(input, hx, 1)
        h = _rnn_step(self._xw(x), h, self.weight_hh, self.bias_hh, self.nonlinearity == "relu")
        return h if batched else h.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step; returns (h, c)."""
    _gates = 4

    def forward(self, input, hx=None):
        x, state, batched = self._prepare(input, hx, 2)
        h, c = _lstm_step(self._xw(x), state, self.weight_hh, self.bias_hh)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    _gates = 3

    def forward(self, input, hx=None):
        x, (h,), batched = self._prepare(input, hx, 1)
        h = _gru_step(self._xw(x), h, self.weight_hh, self.bias_hh)
        return h if batched else h.squeeze(0)
