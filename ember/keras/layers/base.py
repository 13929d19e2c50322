"""`Layer`: Keras's unit of a model, as an `ember.nn.Module` whose weights are made on first use.

A layer is built the first time it sees an input: `build(input_shape)` makes its weights with
`add_weight` (shapes follow Keras: a Dense kernel is (in, out)); `call(inputs)` computes with Ember ops.
Called on `keras.Input`s (KerasTensors) a layer computes no values: it records a `Node` and returns
KerasTensors of its output shape, from which `Model(inputs, outputs)` reads the graph.
"""
from __future__ import annotations

import functools
import inspect
import math

import numpy as np

from ... import _dtype
from ..._errors import user_frame
from ..._tensor import Tensor
from ...backends import host
from ...autograd.grad_mode import no_grad
from ...nn.module import Module
from ...ops import creation as C
from .. import dtype_policies, initializers
from ..backend import KerasTensor, Node, Variable, flatten, in_training, to_snake_case, training_phase, unique_name

__all__ = ["Layer", "InputLayer", "Input", "InputSpec"]


def to_tensor(x):
    """NumPy arrays and Python numbers become Ember tensors; float64 becomes float32 (Keras's floatx)."""
    if isinstance(x, Tensor):
        return x
    if isinstance(x, (list, tuple)) and any(isinstance(v, (Tensor, np.ndarray)) for v in flatten(x)):
        return type(x)(to_tensor(v) for v in x)     # several inputs
    if isinstance(x, dict):
        return {k: to_tensor(v) for k, v in x.items()}
    arr = host.asarray(x)
    if arr.dtype == np.float64 or arr.dtype == np.float16:
        arr = arr.astype(np.float32)
    elif arr.dtype == np.uint64:
        arr = arr.astype(np.int64)
    return C.from_numpy(host.contiguous(arr).reshape(arr.shape))   # ascontiguousarray makes a scalar 1-D


def layer_input(x, dtype=None):
    """`to_tensor`, with float inputs cast to `dtype`, the layer's compute dtype (float32 by default): Keras 3
    casts a layer's float inputs, tensors included, to its compute dtype (a NumPy array goes straight to it,
    so a float64 layer reads float64 data exactly). Integer and boolean inputs are left alone."""
    dtype = dtype or _dtype.float32
    if isinstance(x, dict):
        return {k: layer_input(v, dtype) for k, v in x.items()}
    if isinstance(x, (list, tuple)) and any(isinstance(v, (Tensor, np.ndarray)) for v in flatten(x)):
        return type(x)(layer_input(v, dtype) for v in x)
    if not isinstance(x, Tensor):
        arr = host.asarray(x)
        if arr.dtype.kind == "f" and dtype.is_floating_point:
            return C.from_numpy(host.contiguous(arr.astype(dtype.np)).reshape(arr.shape))
        x = to_tensor(arr)
    if x.dtype.is_floating_point and dtype.is_floating_point and x.dtype != dtype:
        return x.to(dtype)
    return x


def shape_of(x):
    return tuple(x.shape)


class InputSpec:
    """What a built layer accepts: `ndim` (exact) or `min_ndim`, and fixed sizes of some `axes`."""

    def __init__(self, ndim=None, min_ndim=None, axes=None):
        self.ndim, self.min_ndim, self.axes = ndim, min_ndim, dict(axes or {})


class Layer(Module):
    """Base class of Keras layers. Subclass it with `build(input_shape)` and `call(inputs)`:

    >>> class Scale(ember.keras.layers.Layer):
    ...     def build(self, input_shape):
    ...         self.w = self.add_weight(shape=(input_shape[-1],), initializer="ones")
    ...     def call(self, x):
    ...         return x * self.w
    >>> Scale()(np.ones((2, 3))).shape
    (2, 3)
    """

    def __init__(self, *, name=None, trainable=True, dtype=None, autocast=True, input_shape=None,
                 batch_input_shape=None, batch_size=None, input_dim=None, **kwargs):
        Module.__init__(self)
        if kwargs:
            raise TypeError(f"{type(self).__name__}: unrecognized keyword argument(s) {sorted(kwargs)} "
                            f"(at {user_frame()})")
        self.name = name or unique_name(to_snake_case(type(self).__name__))
        self.built = False
        self._trainable = bool(trainable)
        self._dtype_policy = dtype_policies.get(dtype)
        self.autocast = bool(autocast)
        self._inbound_nodes = []
        self._own_weights = []
        self._last_output_shape = None
        self.input_spec = None
        if input_dim is not None and input_shape is None:
            input_shape = (input_dim,)
        self._batch_input_shape = None
        if batch_input_shape is not None:
            self._batch_input_shape = tuple(batch_input_shape)
        elif input_shape is not None:
            self._batch_input_shape = (batch_size,) + tuple(input_shape)
        self._call_has_training = "training" in inspect.signature(self.call).parameters

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "build" in cls.__dict__:
            cls.build = _marking_built(cls.__dict__["build"])

    # --- weights ----------------------------------------------------------------------------------
    def add_weight(self, shape=None, initializer=None, dtype=None, trainable=True, autocast=True, name=None,
                   **kwargs):
        """Make a `Variable` of `shape` owned by this layer (Keras's `add_weight`), in the layer's variable
        dtype unless `dtype` is given; assign it to an attribute (`self.kernel = self.add_weight(...)`) as
        Keras code does. `autocast=False` keeps it in its own dtype inside a mixed-precision `call`."""
        shape = tuple(shape or ())
        dtype = dtype_policies.standardize_dtype(dtype) if dtype is not None else self.variable_dtype
        if initializer is None:
            initializer = "glorot_uniform" if "float" in str(dtype) else "zeros"
        init = initializers.get(initializer)
        name = name or f"variable_{len(self._own_weights)}"
        v = Variable(init(shape, dtype=dtype), trainable=trainable, name=name)
        v.autocast = bool(autocast)
        v.path = f"{self.name}/{name}"
        if not self._trainable:
            v.requires_grad = False
        self._own_weights.append(v)
        if name.isidentifier() and name not in self.__dict__ and name not in self._modules:
            self.register_parameter(name, v)
        return v

    def _sublayers(self):
        return [m for m in self._modules.values() if isinstance(m, Layer)]

    @property
    def layers(self):
        return self._sublayers()

    @property
    def weights(self):
        out, seen = [], set()
        own = [w for w in self._own_weights if w._own_trainable] + \
              [w for w in self._own_weights if not w._own_trainable]
        for w in own + [w for layer in self._sublayers() for w in layer.weights]:
            if id(w) not in seen:
                seen.add(id(w))
                out.append(w)
        return out

    @property
    def trainable_weights(self):
        if not self.trainable:                    # Keras: a frozen layer or model has none, whatever its parts say
            return []
        return [w for w in self.weights if w.requires_grad]

    @property
    def non_trainable_weights(self):
        if not self.trainable:
            return self.weights
        return [w for w in self.weights if not w.requires_grad]

    trainable_variables = trainable_weights
    non_trainable_variables = non_trainable_weights

    @property
    def variables(self):
        return self.weights

    # --- dtypes (Keras's DTypePolicy) ------------------------------------------------------------
    @property
    def dtype_policy(self) -> dtype_policies.DTypePolicy:
        return self._dtype_policy

    @dtype_policy.setter
    def dtype_policy(self, value) -> None:
        self.__dict__["_dtype_policy"] = dtype_policies.get(value)

    @property
    def dtype(self) -> str:
        """The dtype of the layer's weights (Keras: an alias of `variable_dtype`)."""
        return self._dtype_policy.variable_dtype

    @property
    def variable_dtype(self) -> str:
        return self._dtype_policy.variable_dtype

    @property
    def compute_dtype(self) -> str:
        """The dtype the layer casts its float inputs to, computes in and returns."""
        return self._dtype_policy.compute_dtype

    def __getattr__(self, name: str):
        value = Module.__getattr__(self, name)
        cast = self.__dict__.get("_autocast_to")
        # inside call() under a mixed policy, a weight reads as the compute dtype (Keras's AutocastScope); the
        # cast is recorded, so its gradient reaches the float32 weight
        if cast is not None and isinstance(value, Variable) and value.autocast and value.dtype != cast \
                and value.dtype.is_floating_point:
            return value.to(cast)
        return value

    def _call_in_policy(self, inputs, args, kwargs):
        """`call`, with the float inputs cast to the compute dtype and, when it differs from the variable
        dtype, the weights read in the compute dtype too."""
        compute = dtype_policies.to_ember(self.compute_dtype)
        if self.autocast:
            inputs = layer_input(inputs, compute)
        if compute.name == self.variable_dtype or not compute.is_floating_point:
            return self.call(inputs, *args, **kwargs)
        before = self.__dict__.get("_autocast_to")
        self.__dict__["_autocast_to"] = compute
        try:
            return self.call(inputs, *args, **kwargs)
        finally:
            self.__dict__["_autocast_to"] = before

    @property
    def trainable(self) -> bool:
        return self._trainable

    @trainable.setter
    def trainable(self, value: bool) -> None:
        value = bool(value)
        self.__dict__["_trainable"] = value
        for w in self._own_weights:
            w.requires_grad = value and w._own_trainable and w.dtype.is_floating_point
        for layer in self._sublayers():
            layer.trainable = value

    def count_params(self) -> int:
        if not self.built:
            raise ValueError(f"You tried to call `count_params` on layer '{self.name}', but the layer isn't "
                             f"built. You can build it manually via: `{self.name}.build(batch_input_shape)`.")
        return int(sum(math.prod(w.shape) for w in self.weights))

    def get_weights(self):
        return [w.detach().cpu().numpy().copy() for w in self.weights]

    def set_weights(self, weights):
        mine = self.weights
        if len(weights) != len(mine):
            raise ValueError(f'You called `set_weights(weights)` on layer "{self.name}" with a weight list of '
                             f"length {len(weights)}, but the layer was expecting {len(mine)} weights.")
        for w, value in zip(mine, weights):
            value = host.asarray(value.detach().cpu().numpy() if isinstance(value, Tensor) else value)
            if tuple(value.shape) != tuple(w.shape):
                raise ValueError(f"Layer {self.name} weight shape {tuple(w.shape)} is not compatible with "
                                 f"provided weight shape {tuple(value.shape)} (weight {w.path}).")
        for w, value in zip(mine, weights):
            w.assign(host.asarray(value.detach().cpu().numpy() if isinstance(value, Tensor) else value,
                                  dtype=w.dtype.name))

    # --- config -----------------------------------------------------------------------------------
    def get_config(self) -> dict:
        config = {"name": self.name, "trainable": self.trainable, "dtype": self._dtype_policy.name}
        if self._batch_input_shape is not None:
            config["batch_input_shape"] = list(self._batch_input_shape)
        return config

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    # --- building and calling ---------------------------------------------------------------------
    def build(self, input_shape) -> None:
        """Make the weights for inputs of `input_shape` (the batch size first, None when unknown)."""
        self.built = True

    def _maybe_build(self, shapes) -> None:
        if not self.built:
            self.build(shapes)
            self.built = True

    def call(self, inputs, *args, **kwargs):
        raise NotImplementedError(f"Layer {type(self).__name__} has no call() method: subclasses of "
                                  f"keras.layers.Layer implement call(self, inputs)")

    def forward(self, *args, **kwargs):
        return self(*args, **kwargs)

    def __call__(self, *args, **kwargs):
        if not args:
            if "inputs" not in kwargs:
                raise TypeError(f"layer {self.name!r} was called without inputs")
            args = (kwargs.pop("inputs"),)
        inputs = args[0]
        if any(isinstance(t, KerasTensor) for t in flatten(inputs)):
            return self._symbolic_call(inputs, *args[1:], **kwargs)
        training = kwargs.pop("training", None)
        inputs = layer_input(inputs, dtype_policies.to_ember(self.compute_dtype)) if self.autocast \
            else to_tensor(inputs)
        shapes = _map(shape_of, inputs)
        self._maybe_build(shapes)
        self._check_input(shapes)
        with training_phase(training):
            if self._call_has_training:
                kwargs["training"] = in_training()
            out = self._call_in_policy(inputs, args[1:], kwargs)
        self._last_output_shape = _map(lambda t: (None,) + tuple(t.shape[1:]), out)
        return out

    def _check_input(self, shapes) -> None:
        spec = self.input_spec
        if spec is None:
            return
        specs = spec if isinstance(spec, (list, tuple)) else [spec]
        given = shapes if isinstance(shapes, list) and specs is spec else [shapes]
        for i, (s, shape) in enumerate(zip(specs, given)):
            if s is None:
                continue
            head = f'Input {i} of layer "{self.name}" is incompatible with the layer: '
            if s.ndim is not None and len(shape) != s.ndim:
                raise ValueError(f"{head}expected ndim={s.ndim}, found ndim={len(shape)}. Full shape "
                                 f"received: {_fmt_shape(shape)} (at {user_frame()})")
            if s.min_ndim is not None and len(shape) < s.min_ndim:
                raise ValueError(f"{head}expected min_ndim={s.min_ndim}, found ndim={len(shape)}. Full shape "
                                 f"received: {_fmt_shape(shape)} (at {user_frame()})")
            for axis, value in s.axes.items():
                got = shape[axis] if -len(shape) <= axis < len(shape) else None
                if got is not None and got != value:
                    raise ValueError(f"{head}expected axis {axis} of input shape to have value {value}, but "
                                     f"received input with shape {_fmt_shape(shape)} (at {user_frame()})")

    def _symbolic_call(self, inputs, *args, **kwargs):
        kwargs.pop("training", None)
        shapes = _map(lambda t: t.shape, inputs)
        self._maybe_build(shapes)
        self._check_input(shapes)
        out_shapes, dtypes = self._infer_output(inputs, shapes, args, kwargs)
        outputs = _map(lambda sd: KerasTensor(sd[0], sd[1]), _zip_struct(out_shapes, dtypes), leaf=_is_pair)
        node = Node(self, inputs, outputs)
        self._inbound_nodes.append(node)
        for i, kt in enumerate(node.output_tensors):
            kt._keras_history = (self, len(self._inbound_nodes) - 1, i)
            kt.name = self.name
        self._last_output_shape = out_shapes
        return outputs

    def compute_output_shape(self, input_shape):
        """The output shape for `input_shape`. The default runs the layer on zeros twice, with every
        unknown size set to 2 and then 3: sizes that differ between the runs are unknown (None)."""
        return self._dry_run(input_shape)[0]

    def _infer_output(self, inputs, shapes, args, kwargs):
        if type(self).compute_output_shape is not Layer.compute_output_shape:
            out = self.compute_output_shape(shapes)
            return out, _map(lambda _: self.compute_dtype, out)
        return self._dry_run(shapes, [t.dtype for t in flatten(inputs)], args, kwargs)

    def _dry_run(self, shapes, dtypes=None, args=(), kwargs=None):
        kwargs = dict(kwargs or {})

        def zeros(fill, shape, dtype):
            return C.zeros(*[fill if d is None else d for d in shape], dtype=getattr(_dtype, dtype))

        def run(fill):
            it = iter(dtypes or [])
            x = _map(lambda s: zeros(fill, s, next(it, "float32")), _as_struct(shapes))
            with no_grad(), training_phase(False):
                if self._call_has_training:
                    kwargs["training"] = False
                out = self._call_in_policy(x, args, kwargs)
            return _map(lambda t: (tuple(t.shape), t.dtype.name), out)
        a, b = run(2), run(3)
        shapes_out = _map2(lambda u, v: tuple(p if p == q else None for p, q in zip(u[0], v[0])), a, b)
        dtypes_out = _map(lambda u: u[1], a, leaf=_is_pair)
        return shapes_out, dtypes_out

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name}, built={self.built}>"


def _marking_built(build):
    """Keras's build wrapper: a layer whose `build` has run, called by hand too, is built, so that its first
    call does not make its weights a second time."""
    if getattr(build, "_marks_built", False):
        return build

    @functools.wraps(build)
    def wrapper(self, *args, **kwargs):
        build(self, *args, **kwargs)
        self.built = True
    wrapper._marks_built = True
    return wrapper


def _fmt_shape(shape) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def _is_pair(x):
    return isinstance(x, tuple) and len(x) == 2 and isinstance(x[1], str)


def _is_shape(x):
    return isinstance(x, tuple) and all(d is None or isinstance(d, int) for d in x)


def _as_struct(shapes):
    """A shape is a tuple of ints; a list of shapes is a list (so (None, 3) is one shape, not two)."""
    return shapes


def _map2(fn, a, b):
    if _is_pair(a):
        return fn(a, b)
    if isinstance(a, (list, tuple)):
        return type(a)(_map2(fn, x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return {k: _map2(fn, v, b[k]) for k, v in a.items()}
    return fn(a, b)


def _zip_struct(shapes, dtypes):
    if _is_shape(shapes):
        return (shapes, dtypes)
    if isinstance(shapes, dict):
        return {k: _zip_struct(s, dtypes[k]) for k, s in shapes.items()}
    return type(shapes)(_zip_struct(s, d) for s, d in zip(shapes, dtypes))


def _map(fn, x, leaf=None):
    """Map over a structure of tensors or shapes; a shape (a tuple of ints and Nones) is a leaf."""
    if leaf is not None and leaf(x):
        return fn(x)
    if _is_shape(x) and x and not isinstance(x[0], (tuple, list)):
        return fn(x)
    if isinstance(x, (list, tuple)):
        return type(x)(_map(fn, v, leaf) for v in x)
    if isinstance(x, dict):
        return {k: _map(fn, v, leaf) for k, v in x.items()}
    return fn(x)


class InputLayer(Layer):
    """The layer behind `keras.Input`: it has no weights and one output, the model's input."""

    def __init__(self, shape=None, batch_size=None, dtype=None, batch_shape=None, name=None, sparse=None,
                 **kwargs):
        if shape is None and batch_shape is None:
            raise ValueError("Input: give the shape of one sample, e.g. keras.Input(shape=(28, 28))")
        super().__init__(name=name or unique_name("input_layer"), dtype=dtype, **kwargs)
        if isinstance(shape, int):
            shape = (shape,)
        self.batch_shape = tuple(batch_shape) if batch_shape is not None else (batch_size,) + tuple(shape)
        self.built = True
        self.output = KerasTensor(self.batch_shape, str(dtype or "float32"), name=self.name)
        self.output._keras_history = (self, 0, 0)
        self._inbound_nodes.append(Node(self, [], self.output))
        self._last_output_shape = self.batch_shape

    def call(self, inputs):
        return inputs

    def get_config(self):
        return {"batch_shape": list(self.batch_shape), "dtype": self.output.dtype, "name": self.name}


def Input(shape=None, batch_size=None, dtype=None, sparse=None, batch_shape=None, name=None, tensor=None):
    """A symbolic input of a functional model: `keras.Input(shape=(28, 28))` (the batch size left out).

    >>> x = ember.keras.Input(shape=(4,))
    >>> x.shape
    (None, 4)
    """
    return InputLayer(shape=shape, batch_size=batch_size, dtype=dtype, batch_shape=batch_shape, name=name).output
