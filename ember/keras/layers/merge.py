"""Layers that join several inputs of a functional model: Concatenate, Add, Subtract, Multiply, Average."""
from __future__ import annotations

from ...ops import shape as S
from .base import Layer

__all__ = ["Concatenate", "Add", "Subtract", "Multiply", "Average"]


def _need_list(layer, inputs, n=None):
    # build() gets shapes: one input's shape (a tuple of ints) is not a list of inputs
    if not isinstance(inputs, (list, tuple)) or len(inputs) < 2 or (n and len(inputs) != n) or \
            any(v is None or isinstance(v, int) for v in inputs):
        want = f"exactly {n}" if n else "at least 2"
        raise ValueError(f'A merge layer "{layer.name}" ({type(layer).__name__}) should be called on a list of '
                         f"{want} inputs. Received: {inputs!r}")


class Concatenate(Layer):
    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.axis = axis

    def build(self, input_shape):
        _need_list(self, input_shape)
        ranks = {len(s) for s in input_shape}
        ax = self.axis % len(input_shape[0])
        bad = len(ranks) != 1 or any(
            len({s[i] for s in input_shape if s[i] is not None}) > 1 for i in range(len(input_shape[0])) if i != ax)
        if bad:
            raise ValueError(f'A `Concatenate` layer "{self.name}" requires inputs with matching shapes except for '
                             f"the concatenation axis. Received: input_shape={[tuple(s) for s in input_shape]}")

    def call(self, inputs):
        _need_list(self, inputs)
        return S.cat(list(inputs), dim=self.axis)

    def compute_output_shape(self, input_shape):
        ax = self.axis % len(input_shape[0])
        sizes = [s[ax] for s in input_shape]
        out = list(input_shape[0])
        out[ax] = None if None in sizes else sum(sizes)
        return tuple(out)

    def get_config(self):
        return {**super().get_config(), "axis": self.axis}


class _Merge(Layer):
    _n = None

    def build(self, input_shape):
        _need_list(self, input_shape, self._n)
        shapes = [tuple(s[1:]) for s in input_shape]
        if any(s != shapes[0] for s in shapes):
            raise ValueError(f'Inputs of layer "{self.name}" ({type(self).__name__}) must have the same shape. '
                             f"Received: input_shape={[tuple(s) for s in input_shape]}")

    def call(self, inputs):
        _need_list(self, inputs, self._n)
        return self._merge(list(inputs))

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[0])


class Add(_Merge):
    def _merge(self, xs):
        out = xs[0]
        for x in xs[1:]:
            out = out + x
        return out


class Subtract(_Merge):
    _n = 2

    def _merge(self, xs):
        return xs[0] - xs[1]


class Multiply(_Merge):
    def _merge(self, xs):
        out = xs[0]
        for x in xs[1:]:
            out = out * x
        return out


class Average(Add):
    def _merge(self, xs):
        return super()._merge(xs) / len(xs)
