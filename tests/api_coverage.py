"""Which of Ember's public names the test suite uses: the list, a static check and a run-time check.

The public API is every function and class named in `__all__` of the modules in `MODULES`, plus the
public methods and properties of `ember.Tensor` (most are bound from the ops in `_tensor_methods.py`).

- Static check (`tests/test_api_coverage.py`, in every `make test`): each public name appears as an
  identifier (or a string, for tables driven by `getattr`) in some test file. Cheap, but a mention
  is enough to pass it.
- Run-time check (`pytest --api-coverage`, run by `make coverage`): a name counts only if its code ran
  during the test session. Functions and classes are judged from coverage.py's branch data: coverage
  records an arc `(-first_line, line)` each time a code object is entered, so a function counts when
  its own code object was entered and a class when one of the functions defined in its body was (its
  `__init__`, `forward`, a property ...). `ember.Tensor`'s methods are partly generated closures that
  share one code object (`add_`, `mul_`, ... `float`, `double`), so for them the plugin wraps each
  public attribute of the class and records the name when it is called as a method. A class with no
  function of its own (`BatchNorm1d`, an exception) gets a recording `__init__` that calls the inherited
  one. Nothing else is changed, so identity, pickling and the speed of Ember's own calls stay as they
  are. DataLoader workers' evidence is read from their coverage data files (coverage's parallel mode).
  At the end of the session the names never run are printed and the run fails.
"""
from __future__ import annotations

import ast
import functools
import importlib
import inspect
import os
import types

MODULES = [
    "ember", "ember.nn", "ember.nn.functional", "ember.nn.init", "ember.nn.utils", "ember.optim",
    "ember.optim.lr_scheduler", "ember.autograd", "ember.utils.data", "ember.datasets", "ember.transforms",
    "ember.transforms.functional", "ember.random", "ember.cuda", "ember.profiler",
    "ember.accelerator", "ember.linalg", "ember.onnx", "ember.scaling", "ember.nn.utils.rnn", "ember.models",
    "ember.utils", "ember.keras", "ember.lm", "ember.distributed", "ember.jit", "ember.planner", "ember.plot",
    "ember.special", "ember.distributions", "ember.distributions.constraints", "ember.distributions.kl",
    "ember.distributions.utils", "ember.distributions.transforms",
    "ember.func", "ember.autograd.functional", "ember.nn.utils.parametrize", "ember.nn.utils.parametrizations", "ember.nn.utils.stateless",
]
TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
_ROUTINES = (types.FunctionType, property, staticmethod, classmethod)


def _is_ours(obj) -> bool:
    return isinstance(obj, (types.FunctionType, type)) and getattr(obj, "__module__", "").startswith("ember")


def public_api() -> dict:
    """{'ember.nn.Conv3d': <class>, ..., 'ember.Tensor.add_': <function>}: every public callable of Ember.

    Names in `__all__` that are not Ember functions or classes (dtypes, submodules, `Size = tuple`,
    the default generator) have no code of their own and are left out.
    """
    import ember
    out = {}
    for modname in MODULES:
        mod = importlib.import_module(modname)
        for name in mod.__all__:
            obj = getattr(mod, name)
            if _is_ours(obj):
                out[f"{modname}.{name}"] = obj
    for name in sorted(dir(ember.Tensor)):
        attr = inspect.getattr_static(ember.Tensor, name)
        if not name.startswith("_") and isinstance(attr, _ROUTINES):
            out[f"ember.Tensor.{name}"] = attr
    return out


# ------------------------------------------------------------------ static check
def names_in_tests(skip=("api_coverage.py", "test_api_coverage.py")) -> set:
    """Every identifier (attribute, name, imported name, keyword) and identifier-like string in tests/."""
    used = set()
    for root, _, files in os.walk(TESTS_DIR):
        for f in files:
            if not f.endswith(".py") or f in skip:
                continue
            with open(os.path.join(root, f), encoding="utf-8") as fh:
                tree = ast.parse(fh.read())
            for node in ast.walk(tree):
                if isinstance(node, ast.Attribute):
                    used.add(node.attr)
                elif isinstance(node, ast.Name):
                    used.add(node.id)
                elif isinstance(node, ast.alias):
                    used.add(node.name.rsplit(".", 1)[-1])
                elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                    used.update(node.value.split())
    return used


# ------------------------------------------------------------------ run-time check
def _code_objects(obj) -> list:
    """The code objects whose entry counts as using `obj`."""
    if isinstance(obj, type):
        codes = []
        for v in vars(obj).values():
            if isinstance(v, (staticmethod, classmethod)):
                v = v.__func__
            if isinstance(v, property):
                codes += [f.__code__ for f in (v.fget, v.fset, v.fdel) if isinstance(f, types.FunctionType)]
            elif isinstance(v, types.FunctionType):
                codes.append(inspect.unwrap(v).__code__)
        return codes
    return [inspect.unwrap(obj).__code__]


def entered_code(data) -> set:
    """{(real file path, first line)} of every code object entered, from coverage.py branch data."""
    out = set()
    for fname in data.measured_files():
        real = os.path.realpath(fname)
        for a, _ in data.arcs(fname) or ():
            if a < 0:
                out.add((real, -a))
    return out


def _child_data(cov) -> list:
    """Data files already written by worker processes (coverage's parallel mode), if any."""
    from coverage import CoverageData
    from coverage.data import combinable_files
    path = cov.get_option("run:data_file")
    if not path or not cov.get_option("run:parallel"):
        return []
    out = []
    for f in combinable_files(os.path.abspath(path)):
        d = CoverageData(f)
        d.read()
        out.append(d)
    return out


_ABSENT = object()


def _invisible(fn):
    """`fn` with its code named like a frozen module: Ember's error messages, which name the user's line
    (`ember._errors.user_frame`), look through it as through the stdlib, and coverage.py ignores it."""
    fn.__code__ = fn.__code__.replace(co_filename="<frozen api_coverage>")
    return fn


class Recorder:
    """Collects evidence of use while the test session runs (see the module docstring)."""

    def __init__(self):
        import coverage
        import ember
        self.called = set()  # names judged by a recording wrapper: called
        self.by_call = set()  # ... and which names those are
        self._changed = []    # (class, attribute, what was in its __dict__ or _ABSENT): for restore()
        self.own_cov = None
        self.cov = coverage.Coverage.current()
        if self.cov is None or not self.cov.get_option("run:branch"):
            # not run by `coverage run --branch`: measure the ember package ourselves, in memory
            self.own_cov = coverage.Coverage(data_file=None, branch=True,
                                             source=[os.path.dirname(os.path.abspath(ember.__file__))])
            self.own_cov.start()
            self.cov = self.own_cov
        watched = {}   # class with no function of its own -> its public names
        for qualname, obj in public_api().items():
            if qualname.startswith("ember.Tensor."):
                self.by_call.add(qualname)
            elif isinstance(obj, type) and not _code_objects(obj):
                self.by_call.add(qualname)
                watched.setdefault(obj, []).append(qualname)
        self._wrap_tensor(ember.Tensor)
        for cls, keys in watched.items():
            self._watch_init(keys, cls)

    def _record(self, name, fn):
        called = self.called

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            called.add(name)
            return fn(*args, **kwargs)
        return _invisible(wrapper)

    def _watch_init(self, keys, cls):
        inherited, called = cls.__init__, self.called

        def __init__(self, *args, **kwargs):
            called.update(keys)
            inherited(self, *args, **kwargs)
        self._set(cls, "__init__", _invisible(__init__))

    def _wrap_tensor(self, cls):
        for name in dir(cls):
            attr = inspect.getattr_static(cls, name)
            if name.startswith("_") or not isinstance(attr, _ROUTINES):
                continue
            key = f"ember.Tensor.{name}"
            if isinstance(attr, property):
                fget = self._record(key, attr.fget) if attr.fget else None
                fset = self._record(key, attr.fset) if attr.fset else None
                new = property(fget, fset, attr.fdel, attr.__doc__)
            elif isinstance(attr, staticmethod):
                new = staticmethod(self._record(key, attr.__func__))
            elif isinstance(attr, classmethod):
                new = classmethod(self._record(key, attr.__func__))
            else:
                new = self._record(key, attr)
            self._set(cls, name, new)

    def _set(self, cls, name, value):
        self._changed.append((cls, name, vars(cls).get(name, _ABSENT)))
        setattr(cls, name, value)

    def restore(self):
        """Put back every class attribute the recorder replaced."""
        for cls, name, old in reversed(self._changed):
            if old is _ABSENT:
                delattr(cls, name)
            else:
                setattr(cls, name, old)
        self._changed = []

    def unused(self) -> list:
        """The public names whose code never ran, sorted."""
        datas = [self.cov.get_data()] + _child_data(self.cov)
        entered = set().union(*(entered_code(d) for d in datas))
        missing = []
        for qualname, obj in public_api().items():
            if qualname in self.by_call:
                used = qualname in self.called
            else:
                used = any((os.path.realpath(c.co_filename), c.co_firstlineno) in entered
                           for c in _code_objects(obj))
            if not used:
                missing.append(qualname)
        return sorted(missing)

    def stop(self):
        if self.own_cov is not None:
            self.own_cov.stop()
