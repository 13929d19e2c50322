"""torch.multiprocessing for Ember: the standard library's `multiprocessing`, whose pickler sends Ember tensors
through shared memory, plus `spawn` and the sharing strategies.

Importing this module registers reductions with `multiprocessing.reduction.ForkingPickler` (reductions.py): a
CPU tensor put on a Queue, sent through a Pipe or passed to a spawned Process is moved into shared memory
(`Tensor.share_memory_`, in the sender, as torch does) and the receiver maps the same memory, so an in-place
update on either side is seen by the other. Tensors on other devices are copied. See docs/multiprocessing.md.

>>> import ember.multiprocessing as mp
>>> q = mp.SimpleQueue()
>>> t = ember.zeros(2)
>>> q.put(t)
>>> r = q.get()
>>> _ = r.add_(1)
>>> t
tensor([1., 1.])
"""
import multiprocessing
from multiprocessing import *  # noqa: F401,F403  (torch.multiprocessing re-exports the whole module)

from . import reductions
from .reductions import get_all_sharing_strategies, get_sharing_strategy, set_sharing_strategy
from .spawn import (ProcessContext, ProcessException, ProcessExitedException, ProcessRaisedException,
                    SpawnContext, spawn, start_processes)

__all__ = ["set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies", "spawn",
           "start_processes", "ProcessContext", "SpawnContext", "ProcessException", "ProcessRaisedException",
           "ProcessExitedException"] + list(multiprocessing.__all__)

reductions.init_reductions()
