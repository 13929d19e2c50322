"""Calls a type checker must reject (tests/test_typing.py expects mypy to report each line marked `error`)."""
import ember
from ember import Tensor


def wrong(t: Tensor) -> None:
    t.sum(dim=1, nonexistent=1)   # error: no such keyword
    t.transpose_(0)   # error: too few arguments
    t.relu(1)   # error: too many arguments
    t.not_a_method()   # error: no such attribute
    n: int = t.shape   # error: a tuple is not an int
    ember.Tensor.reshape_as()   # error: missing self and other
