"""`ember.nn.modules`: torch.nn.modules' layout, for scripts that name a layer by its module path
(`torch.nn.modules.batchnorm._BatchNorm`, `torch.nn.modules.loss._Loss`, `from torch.nn.modules.utils import
_pair`, the allow-lists of `torch.serialization.safe_globals`). Each of torch's submodule names is the
`ember.nn` module that holds those classes (`batchnorm` and `instancenorm` are `ember.nn.normalization`,
`container` is `ember.nn.containers`, `sparse` is `ember.nn.embedding`, ...), so a class reached either way is
the same class. Loaded on first use of `ember.nn.modules`.

>>> import ember.nn as nn
>>> nn.modules.batchnorm.BatchNorm2d is nn.BatchNorm2d, nn.modules.Linear is nn.Linear
(True, True)
>>> from ember.nn.modules.utils import _pair
>>> _pair(3)
(3, 3)
"""
import sys
import types

from .. import (activation, adaptive, containers, conv, distance, dropout, embedding, lazy, linear, loss, module,
                normalization, padding, pixelshuffle, pooling, rnn, transformer, upsampling)
from .. import __all__ as _nn_names
from . import utils


def _with(base, **extra):
    """A module holding `base`'s names and `extra` (a torch submodule whose classes Ember keeps in two files)."""
    mod = types.ModuleType(base.__name__, base.__doc__)
    mod.__dict__.update({k: v for k, v in vars(base).items() if not k.startswith("__")}, **extra)
    return mod


# torch.nn.modules.<name> -> the ember.nn module holding its classes
SUBMODULES = {
    "activation": _with(activation, MultiheadAttention=transformer.MultiheadAttention), "adaptive": adaptive, "batchnorm": normalization, "channelshuffle": pixelshuffle,
    "container": containers, "conv": conv, "distance": distance, "dropout": dropout, "flatten": linear,
    "fold": distance, "instancenorm": normalization, "lazy": lazy, "linear": linear, "loss": loss,
    "module": module, "normalization": normalization, "padding": padding, "pixelshuffle": pixelshuffle,
    "pooling": pooling, "rnn": rnn, "sparse": embedding, "transformer": transformer, "upsampling": upsampling,
}
for _name, _mod in SUBMODULES.items():
    globals()[_name] = _mod
    sys.modules[f"{__name__}.{_name}"] = _mod   # `import ember.nn.modules.batchnorm` finds it here

_nn = sys.modules[__name__.rpartition(".")[0]]
for _name in _nn_names:                      # torch.nn.modules re-exports every layer class, as torch.nn does
    if _name not in ("functional", "init", "utils"):
        globals()[_name] = getattr(_nn, _name)
__all__ = [n for n in _nn_names if n not in ("functional", "init", "utils")]
del _name, _mod, _nn, _with
