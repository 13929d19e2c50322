"""`axis=` for `dim=` and `keepdims=` for `keepdim=` (ember/_dims.py: numpy_names), as torch's argument
parser takes them, compared with torch for a representative set of functions and methods."""
import pytest
import torch

import ember
from helpers import check_op

CASES = [   # (name, torch/ember call using the NumPy names)
    ("sum", lambda lib, x: lib.sum(x, axis=1, keepdims=True)),
    ("mean", lambda lib, x: x.mean(axis=(0, 1))),
    ("prod", lambda lib, x: lib.prod(x, axis=0, keepdims=True)),
    ("std", lambda lib, x: x.std(axis=1, keepdims=True)),
    ("var", lambda lib, x: lib.var(x, axis=0)),
    ("amax", lambda lib, x: lib.amax(x, axis=-1, keepdims=True)),
    ("amin", lambda lib, x: x.amin(axis=0)),
    ("max", lambda lib, x: lib.max(x, axis=1, keepdims=True)),
    ("min", lambda lib, x: x.min(axis=0)),
    ("logsumexp", lambda lib, x: lib.logsumexp(x, axis=1, keepdims=True)),
    ("softmax", lambda lib, x: x.softmax(axis=1)),
    ("log_softmax", lambda lib, x: lib.log_softmax(x, axis=0)),
    ("cumsum", lambda lib, x: lib.cumsum(x, axis=1)),
    ("cat", lambda lib, x: lib.cat([x, x], axis=1)),
    ("stack", lambda lib, x: lib.stack([x, x], axis=0)),
    ("unsqueeze", lambda lib, x: x.unsqueeze(axis=1)),
    ("std_mean", lambda lib, x: lib.std_mean(x, axis=1, keepdims=True)),
    ("var_mean", lambda lib, x: lib.var_mean(x, axis=0)),
]


@pytest.mark.parametrize("name,fn", CASES, ids=[c[0] for c in CASES])
def test_axis_and_keepdims_as_torch(name, fn):
    check_op(fn, (3, 4))


@pytest.mark.parametrize("name", ["argmax", "argmin", "any", "all", "count_nonzero"])
def test_axis_on_integer_results(name):
    x = torch.tensor([[0.0, 2.0, -1.0], [3.0, 0.0, 1.0]])
    kw = {"axis": 1} if name == "count_nonzero" else {"axis": 1, "keepdims": True}
    want = getattr(torch, name)(x, **kw)
    got = getattr(ember, name)(ember.tensor(x.numpy()), **kw)
    assert got.tolist() == want.tolist()
    assert getattr(ember.tensor(x.numpy()), name)(**kw).tolist() == want.tolist()


def test_dim_and_axis_together_is_a_type_error_as_torch():
    x = ember.ones(2, 3)
    with pytest.raises(TypeError):
        torch.sum(torch.ones(2, 3), dim=1, axis=1)
    with pytest.raises(TypeError, match="sum.. got both 'dim' and its alias 'axis'"):
        ember.sum(x, dim=1, axis=1)
    with pytest.raises(TypeError):
        ember.sum(x, 1, axis=1)   # dim given twice


def test_the_aliases_keep_name_and_doc():
    assert ember.sum.__name__ == "sum" and ember.Tensor.softmax.__doc__ == ember.softmax.__doc__
