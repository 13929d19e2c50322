"""`ember.nn.parallel`: DataParallel (one process, several devices) and DistributedDataParallel (one process
per replica, over ember.distributed). Re-exports only."""
from .data_parallel import DataParallel, replicate, gather
from .distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel", "replicate", "gather"]
