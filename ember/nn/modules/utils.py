"""torch.nn.modules.utils' helpers that layer code imports: `_single`, `_pair`, `_triple`, `_quadruple`,
`_ntuple`, `_reverse_repeat_tuple`, and `consume_prefix_in_state_dict_if_present`.

>>> _pair(2), _triple((1, 2, 3)), _reverse_repeat_tuple((1, 2), 2)
((2, 2), (1, 2, 3), (2, 2, 1, 1))
>>> sd = {"module.w": 1, "b": 2}
>>> consume_prefix_in_state_dict_if_present(sd, "module."); sd
{'b': 2, 'w': 1}
"""
from collections.abc import Iterable
from itertools import repeat

__all__ = ["consume_prefix_in_state_dict_if_present"]


def _ntuple(n, name="parse"):
    """A function that returns an iterable argument as a tuple and repeats anything else `n` times."""
    def parse(x):
        if isinstance(x, Iterable):
            return tuple(x)
        return tuple(repeat(x, n))
    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")


def _reverse_repeat_tuple(t, n):
    """`t` reversed, each element repeated `n` times (a conv's padding in F.pad's order)."""
    return tuple(x for x in reversed(t) for _ in range(n))


def _list_with_default(out_size, defaults):
    """An adaptive pool's output size with None entries taken from `defaults`' trailing dims."""
    if isinstance(out_size, int):
        return out_size
    if len(defaults) <= len(out_size):
        raise ValueError(f"Input dimension should be at least {len(out_size) + 1}")
    return [d if o is None else o for o, d in zip(out_size, defaults[-len(out_size):])]


def consume_prefix_in_state_dict_if_present(state_dict, prefix):
    """Strips `prefix` from the keys that start with it, in place (a checkpoint saved from a DataParallel or
    DistributedDataParallel wrapper: 'module.'). A state dict's `_metadata` keys are renamed the same way,
    the wrapper's own entry (the prefix without its dot) becoming the top-level ''."""
    for key in list(state_dict):
        if key.startswith(prefix):
            state_dict[key[len(prefix):]] = state_dict.pop(key)
    metadata = getattr(state_dict, "_metadata", None)
    if metadata is not None:
        for key in list(metadata):
            if key and (key == prefix.replace(".", "") or key.startswith(prefix)):
                metadata[key[len(prefix):]] = metadata.pop(key)
