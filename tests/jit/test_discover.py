"""What `ember.compile` finds a function touching (jit/capture.py `discover`): the nn.Modules, optimizers
and loose leaf tensors that require grad, wherever the function reaches them: itself, its bound `self`,
its closure, the globals its code names, its defaults, one level of attributes of those objects, lists
and dicts of them, and the arguments. Their state is guarded and their gradients are written back; what
it does not find is a constant of the trace. The limits (depth, 64-item containers) are pinned here so
that a change to them is a decision."""
import ember
import ember.nn as nn
from ember.jit.capture import discover

G_MODEL = nn.Linear(1, 1)


def _ids(xs):
    return {id(x) for x in xs}


def _uses_global(x):
    return G_MODEL(x)


def test_found_through_closure_containers_defaults_globals_and_arguments():
    m_list, m_dict, m_default, m_arg, m_kw = (nn.Linear(1, 1) for _ in range(5))
    opt = ember.optim.SGD(m_list.parameters(), lr=0.1)
    w = ember.ones(2, requires_grad=True)
    frozen = ember.ones(2)
    computed = w * 2                           # not a leaf
    box = [m_list, opt, w, frozen, computed]
    table = {"m": m_dict}

    def f(x, y=None, model=m_default):
        return box, table, model

    mods, opts, loose = discover(f, (m_arg,), {"k": m_kw})
    assert _ids(mods) == _ids([m_list, m_dict, m_default, m_arg, m_kw])
    assert _ids(opts) == {id(opt)} and _ids(loose) == {id(w)}
    mods, _, _ = discover(_uses_global)
    assert _ids(mods) == {id(G_MODEL)}


def test_found_through_a_bound_method_and_its_objects_attributes():
    class Trainer:
        def __init__(self):
            self.model = nn.Linear(1, 1)
            self.opt = ember.optim.SGD(self.model.parameters(), lr=0.1)
            self.scale = ember.ones(1, requires_grad=True)

        def step(self, x):
            return self.model(x)
    t = Trainer()
    mods, opts, loose = discover(t.step)
    assert _ids(mods) == {id(t.model)} and _ids(opts) == {id(t.opt)} and _ids(loose) == {id(t.scale)}

    class Callable:                              # an object with __call__: its attributes too
        def __init__(self):
            self.inner = nn.Linear(1, 1)

        def __call__(self, x):
            return self.inner(x)
    c = Callable()
    assert _ids(discover(c)[0]) == {id(c.inner)}


def test_limits_nesting_depth_and_container_size():
    deep = nn.Linear(1, 1)

    def level(k):
        if k == 0:
            def leaf():
                return deep
            return leaf
        inner = level(k - 1)

        def f():
            return inner
        return f
    assert _ids(discover(level(3))[0]) == {id(deep)}        # closures four deep: found
    assert discover(level(4))[0] == []                      # five: not looked at

    class Holder:
        pass
    a, b = Holder(), Holder()
    a.b, b.model = b, nn.Linear(1, 1)
    one_level = Holder()
    one_level.model = nn.Linear(1, 1)
    assert _ids(discover(lambda: one_level)[0]) == {id(one_level.model)}
    assert _ids(discover(lambda: a)[0]) == {id(b.model)}     # attributes of attributes: depth 2
    c = Holder()
    c.a = a
    assert discover(lambda: c)[0] == []                      # depth 3: not looked at

    many = [nn.Linear(1, 1) for _ in range(64)]
    assert len(discover(lambda: many)[0]) == 64
    many.append(nn.Linear(1, 1))
    assert discover(lambda: many)[0] == []                   # 65 items: not a container of state
    d = {i: m for i, m in enumerate(many[:64])}
    assert len(discover(lambda: d)[0]) == 64
    d[64] = many[64]
    assert discover(lambda: d)[0] == []


def test_each_object_once_and_plain_values_skipped():
    m = nn.Linear(1, 1)
    both = [m, m, (m,), {"again": m}, 3, 2.5, "s", b"b", True, None]
    mods, _, _ = discover(lambda: both)
    assert mods == [m]


_NAMING = """
import ember, ember.nn as nn
enc, dec, head = nn.Linear(3, 4), nn.Linear(4, 2), nn.Linear(2, 2)
def f(x):
    return head(dec(enc(x)))
c = ember.compile(f)
c(ember.ones(2, 3))
print(c.graph)
"""


def test_modules_found_through_globals_are_numbered_alike_in_every_process():
    # the globals a function names were a set: m0/m1/m2 followed string hashing, so the printed graph
    # (and a saved file's weight names) changed with PYTHONHASHSEED
    import os
    import subprocess
    import sys
    outs = set()
    for seed in ("1", "2", "3", "4"):
        r = subprocess.run([sys.executable, "-c", _NAMING], capture_output=True, text=True, timeout=120,
                           env={**os.environ, "PYTHONHASHSEED": seed})
        assert r.returncode == 0, r.stderr
        outs.add(r.stdout)
    assert len(outs) == 1
    assert "state  # m0.weight" in outs.pop()


def test_what_a_python_value_guard_keeps_and_where_it_stops():
    import numpy as np
    from ember.jit.capture import Same, module_values, python_value
    assert python_value([1.0] * 64) == ("list", (1.0,) * 64) and python_value([1.0] * 65) is None
    assert python_value((1.0,)) != python_value([1.0])          # a list turned tuple retraces
    assert python_value((1, [2])) is None                       # not flat: not a guard by value
    d64 = {i: float(i) for i in range(64)}
    assert python_value(d64) == ("dict", tuple(d64.items()))
    assert python_value({i: 0 for i in range(65)}) is None
    assert python_value({(1, 2): 0.5}) is None and python_value({"a": [1]}) is None
    small, big = np.arange(64.0), np.arange(65.0)
    assert python_value(small) == ("ndarray", ("<f8", (64,), tuple(range(64))))
    kind, same = python_value(big)
    assert kind == "ndarray" and same == Same(big) and same != Same(big.copy()) and hash(same) == id(big)
    assert repr(Same(big)) == f"<ndarray (65,) at {id(big):#x}>"

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.size, self.widths, self.scale, self.table = (3, 3), [4, 5], 2.0, {"a": 1}
    names = dict(module_values(list(M().named_modules())))
    assert names == {"size": ("tuple", (3, 3)), "widths": ("list", (4, 5)), "scale": ("float", 2.0)}


def test_a_submodule_is_found_through_its_root_and_an_empty_cell_stops_nothing():
    model = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    head = model[0]
    mods, _, _ = discover(lambda x: head(model(x)))
    assert mods == [model]                       # not model and model[0]: one key prefix, one name space

    def outer():
        def f(x):
            return late(other(x))                # `late` is an empty cell when f is made
        other = nn.Linear(2, 2)
        found = discover(f)[0]
        late = nn.Identity()
        return found, other
    found, other = outer()
    assert found == [other]
