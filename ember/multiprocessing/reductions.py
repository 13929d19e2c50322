"""Reductions that make `multiprocessing`'s pickler send CPU tensors as handles to shared memory.

The memory is the DataLoader's shared-memory transport's (ember/utils/data/_shm.py): a file in /dev/shm mapped
by every process that holds the tensor. 'file_descriptor' sends the open descriptor (SCM_RIGHTS, through
`multiprocessing.reduction.DupFd`); 'file_system' sends the file's name.
"""
from multiprocessing.reduction import DupFd, ForkingPickler

from .._device import CPU
from .._tensor import Tensor
from ..utils.data import _shm

__all__ = ["get_sharing_strategy", "set_sharing_strategy", "get_all_sharing_strategies", "init_reductions"]

_STRATEGIES = ("file_descriptor", "file_system")


def get_all_sharing_strategies() -> set:
    """The strategies this system supports (torch's names): {'file_descriptor', 'file_system'}."""
    return set(_STRATEGIES)


def get_sharing_strategy() -> str:
    """How tensors newly moved into shared memory are sent: 'file_descriptor' (the default) or 'file_system'."""
    return _shm.STRATEGY[0]


def set_sharing_strategy(new_strategy: str) -> None:
    """Set how tensors are shared: 'file_descriptor' (descriptors travel; no file name is left behind) or
    'file_system' (the receiver opens the file by name; the sender removes it when its tensor is freed)."""
    if new_strategy not in _STRATEGIES:
        raise ValueError(f"set_sharing_strategy: unknown strategy {new_strategy!r}; "
                         f"expected one of {sorted(_STRATEGIES)}")
    _shm.STRATEGY[0] = new_strategy


def _rebuild_tensor(fd, path, size, layout, requires_grad, is_param):
    m = _shm.open_shared(fd.detach() if fd is not None else None, path, size)
    t = Tensor._make(_shm.array_at(m, *layout), CPU)
    if is_param:
        from ..nn.parameter import Parameter
        return Parameter(t, requires_grad=requires_grad)
    t.requires_grad = requires_grad
    return t


def reduce_tensor(t):
    if t.requires_grad and not t.is_leaf:
        raise RuntimeError("Cowardly refusing to serialize non-leaf tensor which requires_grad, since autograd "
                           "does not support crossing process boundaries. If you just want to transfer the "
                           "data, call detach() on the tensor before serializing (e.g., putting it on the queue).")
    if t.device.type != "cpu":
        return t.__reduce_ex__(2)   # copied through the host, not shared
    t.share_memory_()
    m = _shm.shared_map_of(t._data)
    layout = _shm.array_layout(t._data, m)
    if get_sharing_strategy() == "file_system" and m.path:
        handle, path = None, m.path
    else:
        handle, path = DupFd(m.fd), ""
    return (_rebuild_tensor, (handle, path, m.size, layout, t.requires_grad, t._is_param))


def init_reductions() -> None:
    from ..nn.parameter import Parameter
    ForkingPickler.register(Tensor, reduce_tensor)
    ForkingPickler.register(Parameter, reduce_tensor)
