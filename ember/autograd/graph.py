"""Hooks on the tensors autograd saves for backward (torch.autograd.graph).

`saved_tensors_hooks(pack_hook, unpack_hook)`: while the block is open, every tensor an op (or a custom
Function's `ctx.save_for_backward`) saves for backward goes through `pack_hook` when it is saved; the
graph keeps what the hook returns instead of the tensor, and backward gets the tensor back from
`unpack_hook` each time it reads it. `save_on_cpu` keeps saved tensors on the CPU. Blocks nest: the
innermost one's hooks are used. The hooks belong to the thread that opens the block.

>>> with ember.autograd.graph.saved_tensors_hooks(lambda t: t * 1, lambda t: t):
...     y = (x * x).sum()
"""
from __future__ import annotations

from typing import Any, Callable

from .function import HOOKS_OPEN, SAVED_HOOKS

__all__ = ["saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks"]


class saved_tensors_hooks:
    """Context manager: pack/unpack hooks for the tensors saved for backward in its block.

    `pack_hook(tensor) -> Any` runs once per saved tensor when the op saves it (the input or output
    tensor itself: do not modify it in place); `unpack_hook(packed) -> Tensor` runs each time backward
    (or `ctx.saved_tensors`) reads it and must return a tensor with the saved tensor's values.

    >>> with saved_tensors_hooks(lambda t: t.numpy(), lambda a: ember.from_numpy(a)):
    ...     y = x.exp()
    """

    def __init__(self, pack_hook: Callable[[Any], Any], unpack_hook: Callable[[Any], Any]):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        if SAVED_HOOKS.disabled is not None:
            raise RuntimeError(SAVED_HOOKS.disabled)
        SAVED_HOOKS.stack = SAVED_HOOKS.stack + ((self.pack_hook, self.unpack_hook),)
        HOOKS_OPEN.append(None)
        return self

    def __exit__(self, *exc):
        SAVED_HOOKS.stack = SAVED_HOOKS.stack[:-1]
        HOOKS_OPEN.pop()
        return False


class save_on_cpu(saved_tensors_hooks):
    """Keep the tensors saved for backward on the CPU and move them back to their device when backward
    reads them: activation memory moves from the accelerator to host RAM at the cost of two copies.
    `pin_memory=True` asks for page-locked host memory (accepted; Ember's host arrays are not pinned).

    >>> with save_on_cpu():
    ...     loss = model(x.cuda()).sum()
    >>> loss.backward()
    """

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda"):
        def pack(t):
            return t.device, t.detach().cpu()   # a CPU tensor stays itself (no copy), as in torch

        def unpack(packed):
            device, t = packed
            return t.to(device)

        super().__init__(pack, unpack)


class disable_saved_tensors_hooks:
    """Context manager: opening a `saved_tensors_hooks` block inside it raises RuntimeError with
    `error_message` (as does opening this while such a block is open), for code that cannot let saved
    tensors go through hooks."""

    def __init__(self, error_message: str):
        self.error_message = error_message

    def __enter__(self):
        if SAVED_HOOKS.stack:
            raise RuntimeError(self.error_message)
        self._prev = SAVED_HOOKS.disabled
        SAVED_HOOKS.disabled = self.error_message
        return self

    def __exit__(self, *exc):
        SAVED_HOOKS.disabled = self._prev
        return False
