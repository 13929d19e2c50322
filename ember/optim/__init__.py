"""ember.optim: optimizers (each a class over a pure step function) and learning-rate schedulers.

>>> w = ember.zeros(3, requires_grad=True)
>>> opt = ember.optim.Adam([w], lr=1e-3)
>>> sched = ember.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=100)
>>> for step in range(3):
...     opt.zero_grad(); ((w - 1) ** 2).sum().backward(); opt.step(); sched.step()
"""
from . import lr_scheduler
from .adadelta import Adadelta
from .adafactor import Adafactor
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .adamax import Adamax
from .asgd import ASGD
from .lbfgs import LBFGS
from .muon import Muon
from .nadam import NAdam
from .optimizer import Optimizer
from .radam import RAdam
from .rmsprop import RMSprop
from .rprop import Rprop
from .sgd import SGD
from .sparse_adam import SparseAdam

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "NAdam", "RAdam", "Adamax", "RMSprop", "Adagrad", "Adadelta",
           "ASGD", "Rprop", "LBFGS", "Adafactor", "Muon", "SparseAdam", "lr_scheduler"]


def __getattr__(name):
    if name == "swa_utils":   # AveragedModel needs ember.nn: loaded on first use, as torch.optim.swa_utils's name
        import importlib
        return importlib.import_module("ember.optim.swa_utils")
    raise AttributeError(f"module 'ember.optim' has no attribute {name!r}")
