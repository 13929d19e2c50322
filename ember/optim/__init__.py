"""ember.optim: optimizers (each a class over a pure step function) and learning-rate schedulers.

>>> opt = ember.optim.Adam(model.parameters(), lr=1e-3)
>>> sched = ember.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=100)
"""
from . import lr_scheduler
from .adadelta import Adadelta
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .lbfgs import LBFGS
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "LBFGS", "lr_scheduler"]
