"""`ember.distributed`: multi-process training with torch.distributed's names (re-exports only).

MPI (mpi4py) for CPU processes and bootstrap, NCCL (CuPy) for GPU tensors. Design: docs/distributed.md.

    ember run -n 2 train.py          # or: mpiexec -n 2 python train.py

>>> import ember.distributed as dist
>>> dist.init_process_group("mpi")
>>> t = ember.ones(3); dist.all_reduce(t)     # t == world_size everywhere
"""
from ._core import (ReduceOp, Work, DistributedTimeoutError, is_available, is_mpi_available, is_nccl_available,
                    init_process_group, destroy_process_group, is_initialized, get_rank, get_world_size,
                    get_backend, barrier, all_reduce, broadcast, all_gather, all_gather_into_tensor,
                    reduce_scatter, reduce_scatter_tensor, gather, scatter, send, recv, isend, irecv, reduce, all_to_all,
                    broadcast_object_list, all_gather_object, default_pg_timeout)

__all__ = ["ReduceOp", "Work", "DistributedTimeoutError", "is_available", "is_mpi_available",
           "is_nccl_available", "init_process_group", "destroy_process_group", "is_initialized",
           "get_rank", "get_world_size", "get_backend", "barrier", "all_reduce", "broadcast", "all_gather",
           "all_gather_into_tensor", "reduce_scatter", "reduce_scatter_tensor", "gather", "scatter", "send",
           "recv", "isend", "irecv", "reduce", "all_to_all", "broadcast_object_list", "all_gather_object", "default_pg_timeout"]
