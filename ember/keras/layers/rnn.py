"""SimpleRNN, LSTM and GRU over (batch, time, features), with Keras's weights: `kernel` (features,
gates * units), `recurrent_kernel` (units, gates * units) and `bias`; gate order i, f, c, o (LSTM) and
z, r, h (GRU). The input projection of every time step is one matmul before the loop. `dropout` and
`recurrent_dropout` draw their masks once per call, as Keras 3's cells do, and reuse them at every step. `Bidirectional`
runs a copy of an RNN layer forward and another backward and merges their outputs; `TimeDistributed` applies
one layer to every time step."""
from __future__ import annotations

from ...nn import functional as F
from ...ops import creation as C
from ...ops import math as M
from ...ops import shape as S
from .. import activations, dtype_policies, initializers
from .base import InputSpec, Layer, layer_input

__all__ = ["SimpleRNN", "LSTM", "GRU", "Bidirectional", "TimeDistributed"]


class _RNN(Layer):
    _gates = 1

    def __init__(self, units, activation="tanh", use_bias=True, kernel_initializer="glorot_uniform",
                 recurrent_initializer="orthogonal", bias_initializer="zeros", dropout=0.0, recurrent_dropout=0.0,
                 return_sequences=False, return_state=False, go_backwards=False, stateful=False, unroll=False,
                 seed=None, **kwargs):
        super().__init__(**kwargs)
        for arg, rate in (("dropout", dropout), ("recurrent_dropout", recurrent_dropout)):
            if isinstance(rate, bool) or not isinstance(rate, (int, float)):
                raise ValueError(f"{type(self).__name__}: `{arg}` must be a float between 0 and 1, got {rate!r}")
        if stateful:
            raise NotImplementedError(f"{type(self).__name__}(stateful=True) is not supported by ember.keras")
        if not isinstance(units, int) or units <= 0:
            raise ValueError(f"Received an invalid value for argument `units`, expected a positive integer, "
                             f"got {units!r}.")
        self.units = units
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.recurrent_initializer = initializers.get(recurrent_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.return_sequences, self.return_state, self.go_backwards = return_sequences, return_state, go_backwards
        self.stateful = False
        # Keras clips the rates to [0, 1] and applies a mask only for 0 < rate < 1 (so 1.0 drops nothing)
        self.dropout = min(1.0, max(0.0, float(dropout)))
        self.recurrent_dropout = min(1.0, max(0.0, float(recurrent_dropout)))
        self.seed = seed

    def build(self, input_shape):
        if len(input_shape) != 3:
            raise ValueError(f'Input 0 of layer "{self.name}" is incompatible with the layer: expected ndim=3, '
                             f"found ndim={len(input_shape)}. Full shape received: {tuple(input_shape)} "
                             f"({type(self).__name__} takes (batch, time, features))")
        g = self._gates * self.units
        self.kernel = self.add_weight(shape=(input_shape[-1], g), initializer=self.kernel_initializer, name="kernel")
        self.recurrent_kernel = self.add_weight(shape=(self.units, g), initializer=self.recurrent_initializer,
                                                name="recurrent_kernel")
        self._build_bias()
        self.input_spec = InputSpec(ndim=3, axes={-1: input_shape[-1]})

    def call(self, inputs, initial_state=None, training=False):
        n, t = inputs.shape[0], inputs.shape[1]
        if t == 0:
            raise ValueError(f"{type(self).__name__} {self.name}: the input has no time steps (shape "
                             f"{tuple(inputs.shape)}); it needs at least one")
        input_masks, recurrent_masks = self._dropout_masks(inputs, training)
        xw = self._input_projection(inputs, input_masks)       # (N, T, G*U): every step's input projection
        if self.use_bias:
            xw = xw + self._input_bias()
        if initial_state is None:
            state = self._zero_state(n, inputs.dtype)
        else:                                                  # Keras takes arrays too, cast to the compute dtype
            state = [layer_input(s, inputs.dtype) for s in (initial_state if isinstance(initial_state, (list, tuple))
                                                            else [initial_state])]
        outs = []
        steps = range(t - 1, -1, -1) if self.go_backwards else range(t)
        for i in steps:
            state = self._step(xw[:, i], list(state), recurrent_masks)
            outs.append(state[0])
        out = S.stack(outs, dim=1) if self.return_sequences else outs[-1]
        if self.return_state:
            return [out] + list(state)
        return out

    # --- dropout (Keras 3's DropoutRNNCell): one mask per sequence, reused at every step ----------------------
    def _mask_counts(self):
        """How many input and recurrent masks a call draws (one each; GRU with recurrent dropout: one per gate)."""
        return 1, 1

    def _dropout_masks(self, inputs, training):
        """The input masks (N, features) and the recurrent masks (N, units) of this call, each 0 or
        1 / (1 - rate), or None where that dropout is off (not training, or a rate outside (0, 1))."""
        n_in, n_rec = self._mask_counts()

        def draw(count, size, rate):
            if not training or not 0.0 < rate < 1.0:
                return None
            ones = C.ones(inputs.shape[0], size, dtype=inputs.dtype, device=inputs.device)
            return [F.dropout(ones, rate, training=True) for _ in range(count)]
        return draw(n_in, inputs.shape[-1], self.dropout), draw(n_rec, self.units, self.recurrent_dropout)

    def _input_projection(self, inputs, masks):
        if masks is None:
            return M.matmul(inputs, self.kernel)
        if len(masks) == 1:
            return M.matmul(inputs * masks[0][:, None, :], self.kernel)
        # one mask per gate: each gate's block of the kernel reads its own dropped copy of the inputs
        blocks = S.chunk(self.kernel, len(masks), -1)
        return S.cat([M.matmul(inputs * m[:, None, :], k) for m, k in zip(masks, blocks)], dim=-1)

    def _zero_state(self, n, dtype):
        return [C.zeros(n, self.units, dtype=dtype)]

    def compute_output_shape(self, input_shape):
        out = (input_shape[0], input_shape[1], self.units) if self.return_sequences else (input_shape[0], self.units)
        if self.return_state:
            return [out] + [(input_shape[0], self.units)] * len(self._zero_state_shapes())
        return out

    def _zero_state_shapes(self):
        return [None]

    def get_config(self):
        return {**super().get_config(), "units": self.units, "activation": activations.serialize(self.activation),
                "use_bias": self.use_bias, "return_sequences": self.return_sequences,
                "return_state": self.return_state, "go_backwards": self.go_backwards,
                "dropout": self.dropout, "recurrent_dropout": self.recurrent_dropout, "seed": self.seed,
                "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "recurrent_initializer": initializers.serialize(self.recurrent_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer)}


class SimpleRNN(_RNN):
    """A fully connected RNN: h_t = activation(x_t @ kernel + h_{t-1} @ recurrent_kernel + bias).

    >>> ember.keras.layers.SimpleRNN(4, return_sequences=True)(np.ones((2, 5, 3))).shape
    (2, 5, 4)
    """

    def _build_bias(self):
        if self.use_bias:
            self.bias = self.add_weight(shape=(self.units,), initializer=self.bias_initializer, name="bias")

    def _input_bias(self):
        return self.bias

    def _step(self, xw, state, masks):
        h, = state
        if masks is not None:
            h = h * masks[0]
        return [self.activation(xw + M.matmul(h, self.recurrent_kernel))]


class _GatedRNN(_RNN):
    """LSTM and GRU: their gates take `recurrent_activation` (sigmoid)."""

    def __init__(self, units, recurrent_activation="sigmoid", **kwargs):
        super().__init__(units, **kwargs)
        self.recurrent_activation = activations.get(recurrent_activation)

    def get_config(self):
        return {**super().get_config(), "recurrent_activation": activations.serialize(self.recurrent_activation)}


class LSTM(_GatedRNN):
    """Long short-term memory; `unit_forget_bias=True` starts the forget gate's bias at 1 (Keras).

    >>> ember.keras.layers.LSTM(16)(np.ones((2, 5, 3))).shape
    (2, 16)
    """
    _gates = 4

    def __init__(self, units, unit_forget_bias=True, **kwargs):
        super().__init__(units, **kwargs)
        self.unit_forget_bias = unit_forget_bias

    def _build_bias(self):
        if not self.use_bias:
            return
        self.bias = self.add_weight(shape=(4 * self.units,), initializer=self.bias_initializer, name="bias")
        if self.unit_forget_bias:
            u = self.units
            self.bias.assign(S.cat([self.bias[:u].detach(), C.ones(u, dtype=self.bias.dtype),
                                    self.bias[2 * u:].detach()]))

    def _input_bias(self):
        return self.bias

    def _zero_state(self, n, dtype):
        return [C.zeros(n, self.units, dtype=dtype), C.zeros(n, self.units, dtype=dtype)]

    def _zero_state_shapes(self):
        return [None, None]

    def _step(self, xw, state, masks):
        h, c = state
        if masks is not None:                                  # the recurrent dropout reaches h, not the carry c
            h = h * masks[0]
        z = xw + M.matmul(h, self.recurrent_kernel)            # (N, 4U)
        i, f, g, o = S.chunk(z, 4, -1)
        act, rec = self.activation, self.recurrent_activation
        c = rec(f) * c + rec(i) * act(g)
        return [rec(o) * act(c), c]

    def get_config(self):
        return {**super().get_config(), "unit_forget_bias": self.unit_forget_bias}


class GRU(_GatedRNN):
    """Gated recurrent unit; `reset_after=True` (Keras 3's default) applies the reset gate after the
    recurrent matmul and keeps two biases, shape (2, 3 * units)."""
    _gates = 3

    def __init__(self, units, reset_after=True, **kwargs):
        super().__init__(units, **kwargs)
        self.reset_after = reset_after

    def _build_bias(self):
        if self.use_bias:
            shape = (2, 3 * self.units) if self.reset_after else (3 * self.units,)
            self.bias = self.add_weight(shape=shape, initializer=self.bias_initializer, name="bias")

    def _input_bias(self):
        return self.bias[0] if self.reset_after else self.bias

    def _mask_counts(self):
        # Keras's GRUCell switches to its per-gate implementation when recurrent_dropout is set: three input
        # masks and three recurrent masks, one per gate (z, r, h); otherwise one input mask for all gates
        return (3, 3) if self.recurrent_dropout else (1, 1)

    def _step(self, xw, state, masks):
        h, = state
        u = self.units
        act, rec = self.activation, self.recurrent_activation
        xz, xr, xh = S.chunk(xw, 3, -1)
        if masks is not None:                                  # each gate reads its own dropped copy of h
            rz, rr, rh = S.chunk(self.recurrent_kernel, 3, -1)
            hz, hr, hh = M.matmul(h * masks[0], rz), M.matmul(h * masks[1], rr), M.matmul(h * masks[2], rh)
            if self.reset_after:
                if self.use_bias:
                    bz, br, bh = S.chunk(self.bias[1], 3, -1)
                    hz, hr, hh = hz + bz, hr + br, hh + bh
                z, r = rec(xz + hz), rec(xr + hr)
                cand = act(xh + r * hh)
            else:
                z, r = rec(xz + hz), rec(xr + hr)
                cand = act(xh + M.matmul(r * (h * masks[2]), rh))
            return [z * h + (1 - z) * cand]                    # the carried h is not dropped
        if self.reset_after:
            hw = M.matmul(h, self.recurrent_kernel)
            if self.use_bias:
                hw = hw + self.bias[1]
            hz, hr, hh = S.chunk(hw, 3, -1)
            z, r = rec(xz + hz), rec(xr + hr)
            cand = act(xh + r * hh)
        else:
            hw = M.matmul(h, self.recurrent_kernel[:, :2 * u])
            hz, hr = S.chunk(hw, 2, -1)
            z, r = rec(xz + hz), rec(xr + hr)
            cand = act(xh + M.matmul(r * h, self.recurrent_kernel[:, 2 * u:]))
        return [z * h + (1 - z) * cand]

    def get_config(self):
        return {**super().get_config(), "reset_after": self.reset_after}


_MERGE_MODES = ("sum", "mul", "ave", "concat", None)


class Bidirectional(Layer):
    """Runs an RNN layer forward and a copy of it backward over the sequence and merges the two outputs
    (`merge_mode` 'concat' (default), 'sum', 'mul', 'ave', or None for the list [forward, backward]). The
    backward output is flipped back to forward time order before merging when `return_sequences`;
    `return_state` appends the forward layer's states, then the backward layer's.

    >>> ember.keras.layers.Bidirectional(ember.keras.layers.LSTM(4))(np.ones((2, 5, 3))).shape
    (2, 8)
    """

    def __init__(self, layer, merge_mode="concat", weights=None, backward_layer=None, **kwargs):
        if not isinstance(layer, Layer):
            raise ValueError(f"Please initialize `Bidirectional` layer with a `keras.layers.Layer` instance. "
                             f"Received: {layer!r}")
        if backward_layer is not None and not isinstance(backward_layer, Layer):
            raise ValueError(f"`backward_layer` need to be a `keras.layers.Layer` instance. Received: "
                             f"{backward_layer!r}")
        if merge_mode not in _MERGE_MODES:
            raise ValueError(f"Invalid merge mode. Received: {merge_mode}. Merge mode should be one of "
                             '{"sum", "mul", "ave", "concat", None}')
        super().__init__(**kwargs)
        # fresh layers from the given one's config (as Keras: none of its weights or state is carried over)
        config = layer.get_config()
        config["name"] = "forward_" + _drop_prefix(layer.name, "forward_")
        self.forward_layer = type(layer).from_config(config)
        if backward_layer is None:
            config = layer.get_config()
            config["go_backwards"] = True
            config["name"] = "backward_" + _drop_prefix(layer.name, "backward_")
            backward_layer = type(layer).from_config(config)
        self.backward_layer = backward_layer
        self._verify_layer_config()
        self.merge_mode = merge_mode
        self._initial_weights = weights
        self.stateful = False
        self.return_sequences = layer.return_sequences
        self.return_state = layer.return_state

    def _verify_layer_config(self):
        fwd, bwd = self.forward_layer, self.backward_layer
        if fwd.go_backwards == bwd.go_backwards:
            raise ValueError(f"Forward layer and backward layer should have different `go_backwards` value. "
                             f"Received: forward_layer.go_backwards {fwd.go_backwards}, "
                             f"backward_layer.go_backwards={bwd.go_backwards}")
        for attr in ("stateful", "return_sequences", "return_state"):
            f, b = getattr(fwd, attr, False), getattr(bwd, attr, False)
            if f != b:
                raise ValueError(f"Forward layer and backward layer are expected to have the same value for "
                                 f'attribute "{attr}", got "{f}" for forward layer and "{b}" for backward layer')

    def build(self, input_shape):
        for layer in (self.forward_layer, self.backward_layer):
            if not layer.built:
                layer._maybe_build(input_shape)
        if self._initial_weights is not None:
            self.set_weights(self._initial_weights)
            self._initial_weights = None

    def call(self, inputs, initial_state=None):
        forward_state = backward_state = None
        if initial_state is not None:                          # the first half is the forward layer's
            half = len(initial_state) // 2
            forward_state, backward_state = list(initial_state[:half]), list(initial_state[half:])
        y = self.forward_layer(inputs, initial_state=forward_state)
        y_rev = self.backward_layer(inputs, initial_state=backward_state)
        states = []
        if self.return_state:
            states = list(y[1:]) + list(y_rev[1:])
            y, y_rev = y[0], y_rev[0]
        compute = dtype_policies.to_ember(self.compute_dtype)     # Keras: both outputs in this layer's dtype
        y, y_rev = y.to(compute), y_rev.to(compute)
        if self.return_sequences:
            y_rev = y_rev.flip(1)                              # back to forward time order
        if self.merge_mode == "concat":
            out = [S.cat([y, y_rev], dim=-1)]
        elif self.merge_mode == "sum":
            out = [y + y_rev]
        elif self.merge_mode == "ave":
            out = [(y + y_rev) / 2]
        elif self.merge_mode == "mul":
            out = [y * y_rev]
        else:
            out = [y, y_rev]
        if len(out) == 1 and not states:
            return out[0]
        return out + states

    def compute_output_shape(self, input_shape):
        shape = self.forward_layer.compute_output_shape(input_shape)
        states = []
        if self.return_state:
            shape, states = shape[0], list(shape[1:])
        if self.merge_mode == "concat":
            out = [tuple(shape[:-1]) + (shape[-1] * 2,)]
        elif self.merge_mode is None:
            out = [tuple(shape), tuple(shape)]
        else:
            out = [tuple(shape)]
        if len(out) == 1 and not states:
            return out[0]
        return out + states + states

    def get_config(self):
        def spec(layer):
            return {"class_name": type(layer).__name__, "config": layer.get_config()}
        return {**super().get_config(), "merge_mode": self.merge_mode, "layer": spec(self.forward_layer),
                "backward_layer": spec(self.backward_layer)}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        from ..saving import _layer_classes, layer_from_config
        config = dict(config)
        classes = _layer_classes(custom_objects)
        config["layer"] = layer_from_config(config["layer"], classes)
        if config.get("backward_layer") is not None:
            config["backward_layer"] = layer_from_config(config["backward_layer"], classes)
        return cls(**config)


class TimeDistributed(Layer):
    """Applies `layer` to every time step of a (batch, time, ...) input: step i of the output is
    `layer(inputs[:, i])`, with the same weights at every step (the wrapped layer's own; they are not copied).
    As Keras 3, the layer runs once per step, so a BatchNormalization inside normalises each step with
    that step's batch statistics and a Dropout draws a fresh mask per step.

    >>> ember.keras.layers.TimeDistributed(ember.keras.layers.Dense(8))(np.ones((2, 10, 16))).shape
    (2, 10, 8)
    """

    def __init__(self, layer, **kwargs):
        if not isinstance(layer, Layer):
            raise ValueError(f"Please initialize `TimeDistributed` layer with a `keras.layers.Layer` instance. "
                             f"Received: {layer!r}")
        super().__init__(**kwargs)
        self.layer = layer

    def _child_input_shape(self, input_shape):
        if not isinstance(input_shape, (tuple, list)) or len(input_shape) < 3:
            raise ValueError(f"`TimeDistributed` Layer should be passed an `input_shape` with at least 3 "
                             f"dimensions, received: {input_shape}")
        return (input_shape[0],) + tuple(input_shape[2:])

    def build(self, input_shape):
        child = self._child_input_shape(input_shape)
        if not self.layer.built:
            self.layer._maybe_build(child)

    def compute_output_shape(self, input_shape):
        child = self.layer.compute_output_shape(self._child_input_shape(input_shape))
        return (child[0], input_shape[1]) + tuple(child[1:])

    def call(self, inputs):
        if inputs.ndim < 3:
            self._child_input_shape(tuple(inputs.shape))          # raises Keras's error
        steps = [self.layer(inputs[:, i]) for i in range(inputs.shape[1])]   # the training phase reaches them
        return S.stack(steps, dim=1)                          # (N, T, ...)

    def get_config(self):
        return {**super().get_config(),
                "layer": {"class_name": type(self.layer).__name__, "config": self.layer.get_config()}}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        from ..saving import _layer_classes, layer_from_config
        config = dict(config)
        config["layer"] = layer_from_config(config["layer"], _layer_classes(custom_objects))
        return cls(**config)


def _drop_prefix(name, prefix):
    return name[len(prefix):] if name.startswith(prefix) else name
