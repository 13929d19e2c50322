"""`ember.func`: torch.func's function transforms, built on reverse-mode autograd and a loop.

`grad`, `grad_and_value`, `vjp`, `jacrev` call the function once on stand-ins of the inputs that require
grad and differentiate with `ember.autograd.grad`; `jvp`, `jacfwd` and `hessian` give torch's values by the
double-backward trick (Ember has no forward-mode AD). Transforms nest (`jacrev(jacrev(f))`,
`vmap(grad(f))`) and compose with ordinary autograd as torch's do: a result stays differentiable when the
function read a tensor from outside that requires grad (a closed-over parameter, an outer transform's input)
and grad mode is on; otherwise it is detached.

`vmap` runs the function once per index of the mapped dim and stacks the results (torch batches the
operations instead): the values are torch's, the time is that of a Python loop, and code that torch's vmap
refuses (`.item()`, data-dependent control flow) runs. Random draws raise with `randomness="error"` (the
default, as torch), give each sample its own numbers with "different", and repeat the first sample's numbers
with "same".

>>> f = lambda x: (x ** 3).sum()
>>> ember.func.grad(f)(ember.tensor([1.0, 2.0]))
tensor([ 3., 12.])
>>> ember.func.vmap(ember.func.grad(f))(ember.tensor([[1.0], [2.0]]))
tensor([[ 3.],
        [12.]])
"""
from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, Callable

from ._tensor import Tensor

__all__ = ["functional_call", "grad", "grad_and_value", "vjp", "jvp", "linearize", "jacrev", "jacfwd", "hessian",
           "vmap", "stack_module_state", "replace_all_batch_norm_modules_", "functionalize", "debug_unwrap"]


def functional_call(module, parameter_and_buffer_dicts, args: Any = None, kwargs: dict | None = None, *,
                    tie_weights: bool = True, strict: bool = False):
    """`module(*args, **kwargs)` with parameters and buffers replaced by the given tensors for this call
    (ember.nn.utils.stateless.functional_call); `parameter_and_buffer_dicts` is one dict or a sequence of
    dicts with no key in two of them.

    >>> m = ember.nn.Linear(2, 1)
    >>> params = {"weight": ember.ones(1, 2)}
    >>> ember.func.functional_call(m, (params, {"bias": ember.zeros(1)}), (ember.tensor([[1.0, 2.0]]),)).tolist()
    [[3.0]]
    """
    from .nn.utils.stateless import _functional_call
    if isinstance(parameter_and_buffer_dicts, dict):
        parameters_and_buffers = parameter_and_buffer_dicts
    elif isinstance(parameter_and_buffer_dicts, Sequence):
        if not all(isinstance(d, dict) for d in parameter_and_buffer_dicts):
            raise ValueError("Expected all elements of parameter_and_buffer_dicts to be dictionaries")
        counts: dict = {}
        for d in parameter_and_buffer_dicts:
            for k in d:
                counts[k] = counts.get(k, 0) + 1
        repeated = [k for k, n in counts.items() if n > 1]
        if repeated:
            raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of functional call is "
                             f"ambiguous")
        parameters_and_buffers = {k: v for d in parameter_and_buffer_dicts for k, v in d.items()}
    else:
        raise ValueError(f"Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, but got "
                         f"{type(parameter_and_buffer_dicts)}")
    return _functional_call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights, strict=strict)


def stack_module_state(models) -> tuple[dict, dict]:
    """(params, buffers): each parameter and buffer of the same-shaped `models` stacked along a new dim 0,
    for `vmap(functional_call)` over an ensemble. The stacked parameters are new leaves that require grad
    where the models' do; the buffers are stacked as they are.

    >>> models = [ember.nn.Linear(3, 2) for _ in range(4)]
    >>> params, buffers = ember.func.stack_module_state(models)
    >>> tuple(params["weight"].shape)
    (4, 2, 3)
    """
    from .ops.shape import stack
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    first = type(models[0])
    if not all(type(m) is first for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    params = {}
    for name, p in models[0].named_parameters():
        stacked = stack([dict(m.named_parameters())[name].detach() for m in models])
        params[name] = stacked.requires_grad_(p.requires_grad)
    buffers = {name: stack([dict(m.named_buffers())[name] for m in models])
               for name, _ in models[0].named_buffers()}
    return params, buffers


def replace_all_batch_norm_modules_(root):
    """Make every batch norm layer in `root` (root included) use batch statistics only: running_mean,
    running_var and num_batches_tracked become None and track_running_stats False, in place (torch's
    remedy for vmap over a BatchNorm that updates its running statistics). Returns root."""
    from .nn.normalization import _BatchNorm
    for m in root.modules():
        if isinstance(m, _BatchNorm) and m.track_running_stats:
            m.running_mean = None
            m.running_var = None
            m.num_batches_tracked = None
            m.track_running_stats = False
    return root


def functionalize(func: Callable, *, remove: str = "mutations") -> Callable:
    """torch.func.functionalize: `func` itself. torch rewrites in-place ops and views into out-of-place
    ones for its graph tracers; the values are the same, and Ember's transforms need no rewrite."""
    if remove not in ("mutations", "mutations_and_views"):
        raise AssertionError(f"functionalize(f, remove='mutations'): received invalid argument for remove={remove}. "
                             f"Valid options are:\n     remove='mutations': all inplace and out= operators will be "
                             f"removed from the program, and replaced with their out-of-place equivalents.\n     "
                             f"remove='mutations_and_views': In addition to the above, all aliasing operators "
                             f"{{view}} will be replaced with their non-aliasing counterparts, {{view}}_copy.\n")
    return func


def debug_unwrap(tensor, *, recurse: bool = True):
    """torch.func.debug_unwrap: the tensor itself (Ember's transforms pass plain tensors to the function)."""
    return tensor


# ------------------------------------------------------------------ pytrees: tuples, lists and dicts of leaves
def _flatten(tree) -> tuple[list, Any]:
    """(leaves, spec): the leaves of nested tuples, lists and dicts in order; spec rebuilds the tree."""
    if isinstance(tree, (tuple, list)):
        leaves, specs = [], []
        for x in tree:
            sub, spec = _flatten(x)
            leaves += sub
            specs.append((len(sub), spec))
        return leaves, (type(tree), specs)
    if isinstance(tree, dict):
        leaves, specs = [], []
        for k, x in tree.items():
            sub, spec = _flatten(x)
            leaves += sub
            specs.append((k, len(sub), spec))
        return leaves, (dict, specs)
    return [tree], None


def _unflatten(leaves, spec):
    if spec is None:
        return leaves[0]
    kind, specs = spec
    out, i = [], 0
    if kind is dict:
        res = {}
        for k, n, sub in specs:
            res[k] = _unflatten(leaves[i:i + n], sub)
            i += n
        return res
    for n, sub in specs:
        out.append(_unflatten(leaves[i:i + n], sub))
        i += n
    return kind(out) if kind in (tuple, list) else kind(*out)


def _map(fn, tree):
    leaves, spec = _flatten(tree)
    return _unflatten([fn(x) for x in leaves], spec)


# ------------------------------------------------------------------ the stand-ins that gradients are taken at
def _stand_in(x, op):
    """A tensor to differentiate at: a view of `x` when it requires grad (so an outer transform or the
    caller's graph still reaches `x`), else a new leaf that requires grad."""
    if not isinstance(x, Tensor):
        raise RuntimeError(f"{op}: Expected the differentiated inputs to be Tensors, got {type(x).__name__}")
    if not x.dtype.is_floating_point:
        raise RuntimeError("only Tensors of floating point dtype can require gradients")
    return x.view_as(x) if x.requires_grad else x.detach().requires_grad_()


def _reads_outside(outputs, own) -> bool:
    """Whether the graph of `outputs` reaches a leaf that requires grad other than the stand-ins `own`
    (a closed-over parameter, the input of an outer transform or of the caller's graph): then the
    results must keep their graph, as torch's transforms compose with autograd."""
    own_ids = {id(t) for t in own}
    seen, stack = set(), [t._node for t in outputs if isinstance(t, Tensor) and t._node is not None]
    for t in outputs:
        if isinstance(t, Tensor) and t._node is None and t.requires_grad and id(t) not in own_ids:
            return True
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        for e in node.parents:
            if e is None:
                continue
            if e[1] < 0:
                if id(e[0]) not in own_ids:
                    return True
            else:
                stack.append(e[0])
    return False


def _argnums_tuple(argnums, n, op):
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    if not nums or not all(isinstance(a, int) for a in nums):
        raise RuntimeError(f"{op}: argnums must be int or Tuple[int, ...], got: {argnums!r}")
    for a in nums:
        if not -n <= a < n:
            raise RuntimeError(f"Got argnum={a}, but only {n} positional inputs")
    return tuple(a % n for a in nums)


def _prepare(args, argnums, op):
    """(args with stand-ins at argnums, stand-in leaves per argnum, each argnum's tree spec)."""
    nums = _argnums_tuple(argnums, len(args), op)
    args = list(args)
    leaves_of, specs = [], []
    for a in nums:
        leaves, spec = _flatten(args[a])
        leaves = [_stand_in(x, op) for x in leaves]
        args[a] = _unflatten(leaves, spec)
        leaves_of.append(leaves)
        specs.append(spec)
    return args, leaves_of, specs


def _split_aux(out, has_aux, op):
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise RuntimeError(f"{op}(f)(*args): output of function f should be a tuple: (output, aux) if "
                           f"has_aux is True")
    return out


def _finish(tree, keep):
    """Detach every tensor of `tree` unless the graph is kept."""
    if keep:
        return tree
    return _map(lambda t: t.detach() if isinstance(t, Tensor) else t, tree)


def _grads(outputs, inputs, grad_outputs, create_graph):
    """d outputs / d inputs, zeros for an input the outputs do not use (torch.func's rule)."""
    from .autograd import grad as _autograd_grad
    from .ops.creation import zeros_like
    res = _autograd_grad(outputs, inputs, grad_outputs, retain_graph=True, create_graph=create_graph,
                         allow_unused=True)
    return [zeros_like(x) if g is None else g for g, x in zip(res, inputs)]


# ------------------------------------------------------------------ grad, grad_and_value, vjp
def grad_and_value(func: Callable, argnums=0, has_aux: bool = False) -> Callable:
    """A function returning (gradient of `func` at argnums, value of `func`) (with has_aux, func returns
    (value, aux) and the result is (gradient, (value, aux))). The gradient has the structure of the
    argument (a tuple over argnums when it is a tuple); func must return a one-element tensor.

    >>> ember.func.grad_and_value(lambda x: (x ** 2).sum())(ember.tensor([1.0, 3.0]))
    (tensor([2., 6.]), tensor(10.))
    """
    from .autograd.grad_mode import enable_grad, is_grad_enabled

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        outer = is_grad_enabled()
        with enable_grad():
            args, leaves_of, specs = _prepare(args, argnums, "grad_and_value")
            out = func(*args, **kwargs)
            value, aux = _split_aux(out, has_aux, "grad_and_value")
            if not isinstance(value, Tensor):
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got "
                                   f"{type(value)}")
            if value.numel() != 1:
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got "
                                   f"tensor with {value.ndim} dims. Maybe you wanted to use the vjp or jacrev "
                                   f"APIs instead?")
            own = [x for leaves in leaves_of for x in leaves]
            keep = outer and _reads_outside([value], own)
            if not value.requires_grad:   # f does not depend on the inputs at all
                from .ops.creation import zeros_like
                flat = [zeros_like(x) for x in own]
            else:
                flat = _grads([value], own, None, keep)
        grads, i = [], 0
        for leaves, spec in zip(leaves_of, specs):
            grads.append(_unflatten(flat[i:i + len(leaves)], spec))
            i += len(leaves)
        g = grads[0] if isinstance(argnums, int) else tuple(grads)
        g = _finish(g, keep)
        value = _finish(value, keep)
        if has_aux:
            return g, (value, _finish(aux, keep))
        return g, value
    return wrapper


def grad(func: Callable, argnums=0, has_aux: bool = False) -> Callable:
    """The gradient of `func` (returning a one-element tensor) with respect to its argument(s) `argnums`,
    as a function of the same arguments: torch.func.grad. With has_aux, func returns (value, aux) and the
    result is (gradient, aux). An argument may be a tuple, list or dict of tensors.

    >>> ember.func.grad(lambda x, y: (x * y).sum(), argnums=(0, 1))(ember.tensor([1.0]), ember.tensor([2.0]))
    (tensor([2.]), tensor([1.]))
    """
    gv = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        g, value = gv(*args, **kwargs)
        return (g, value[1]) if has_aux else g
    return wrapper


def vjp(func: Callable, *primals, has_aux: bool = False):
    """(func(*primals), vjp_fn[, aux]): vjp_fn(cotangents) gives the vector-Jacobian product for each
    primal, a tuple; it can be called again. Cotangents have the structure of func's output.

    >>> out, vjp_fn = ember.func.vjp(lambda x: x ** 2, ember.tensor([1.0, 2.0]))
    >>> vjp_fn(ember.ones(2))
    (tensor([2., 4.]),)
    """
    from .autograd.grad_mode import enable_grad, is_grad_enabled
    outer = is_grad_enabled()
    with enable_grad():
        args, leaves_of, specs = _prepare(primals, tuple(range(len(primals))), "vjp") if primals else ([], [], [])
        out = func(*args)
        out, aux = _split_aux(out, has_aux, "vjp")
    own = [x for leaves in leaves_of for x in leaves]
    out_leaves, out_spec = _flatten(out)
    for o in out_leaves:
        if not isinstance(o, Tensor):
            raise RuntimeError(f"vjp(f, *primals): Expected f(*primals) to return only tensors, got unsupported "
                               f"type {type(o)}")
    keep = outer and _reads_outside(out_leaves, own)

    def vjp_fn(cotangents, *rest, retain_graph=True, create_graph=None):
        from .autograd.grad_mode import is_grad_enabled as _enabled
        if rest:   # torch passes several cotangents as one tuple; accept them spread out too
            cotangents = (cotangents,) + rest
        cot_leaves, cot_spec = _flatten(cotangents)
        if len(cot_leaves) != len(out_leaves):
            raise RuntimeError(f"Expected pytree structure of cotangents to be the same as pytree structure of "
                               f"outputs to the function: {len(cot_leaves)} cotangents for {len(out_leaves)} "
                               f"outputs")
        for c, o in zip(cot_leaves, out_leaves):
            if tuple(c.shape) != tuple(o.shape):
                raise RuntimeError(f"Mismatch in shape: grad_output has a shape of {tuple(c.shape)} and output "
                                   f"has a shape of {tuple(o.shape)}")
        graph = create_graph if create_graph is not None else \
            _enabled() and (keep or any(c.requires_grad for c in cot_leaves))
        with enable_grad():
            pairs = [(o, c) for o, c in zip(out_leaves, cot_leaves) if o.requires_grad]
            if pairs:
                flat = _grads([o for o, _ in pairs], own, [c for _, c in pairs], graph)
            else:
                from .ops.creation import zeros_like
                flat = [zeros_like(x) for x in own]
        res, i = [], 0
        for leaves, spec in zip(leaves_of, specs):
            res.append(_finish(_unflatten(flat[i:i + len(leaves)], spec), graph))
            i += len(leaves)
        return tuple(res)

    out = _finish(out, keep)
    if has_aux:
        return out, vjp_fn, _finish(aux, keep)
    return out, vjp_fn


def jvp(func: Callable, primals, tangents, *, strict: bool = False, has_aux: bool = False):
    """(func(*primals), the Jacobian-vector product with `tangents`) (plus aux with has_aux); primals and
    tangents are tuples. Ember computes it by the double-backward trick.

    >>> ember.func.jvp(lambda x: x ** 2, (ember.tensor([1.0, 2.0]),), (ember.ones(2),))
    (tensor([1., 4.]), tensor([2., 4.]))
    """
    from .autograd.grad_mode import enable_grad, is_grad_enabled
    from .ops.creation import zeros_like
    if not isinstance(primals, tuple) or not isinstance(tangents, tuple):
        raise RuntimeError(f"jvp(f, primals, tangents): Expected primals and tangents to be tuples, got "
                           f"{type(primals).__name__} and {type(tangents).__name__}")
    p_leaves, p_spec = _flatten(primals)
    t_leaves, _ = _flatten(tangents)
    if len(p_leaves) != len(t_leaves):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have the same python "
                           "structure.")
    for p, t in zip(p_leaves, t_leaves):
        if tuple(p.shape) != tuple(t.shape):
            raise RuntimeError(f"jvp(f, primals, tangents): Expected primals and tangents to have the same shape,"
                               f" got {tuple(p.shape)} and {tuple(t.shape)}")
    outer = is_grad_enabled()
    with enable_grad():
        own = [_stand_in(x, "jvp") for x in p_leaves]
        out = func(*_unflatten(own, p_spec))
        out, aux = _split_aux(out, has_aux, "jvp")
        out_leaves, out_spec = _flatten(out)
        keep = outer and (_reads_outside(out_leaves, own) or any(t.requires_grad for t in t_leaves))
        # the backward is linear in its upstream gradient u: d(u . J)/du applied to the tangent is J t
        us = [zeros_like(o, requires_grad=True) for o in out_leaves]
        live = [(o, u) for o, u in zip(out_leaves, us) if o.requires_grad]
        if live:
            vjps = _grads([o for o, _ in live], own, [u for _, u in live], True)
            from .autograd import grad as _autograd_grad
            used = [(g, t) for g, t in zip(vjps, t_leaves) if g.requires_grad]
            jv = _autograd_grad([g for g, _ in used], us, [t for _, t in used], retain_graph=True,
                                create_graph=keep, allow_unused=True) if used else [None] * len(us)
        else:
            jv = [None] * len(us)
        jv = [zeros_like(o) if j is None else j for j, o in zip(jv, out_leaves)]
    res = (_finish(out, keep), _finish(_unflatten(jv, out_spec), keep))
    return res + (_finish(aux, keep),) if has_aux else res


def linearize(func: Callable, *primals):
    """(func(*primals), jvp_fn): jvp_fn(*tangents) gives the Jacobian-vector product at `primals`
    (torch.func.linearize; Ember differentiates again at each call rather than keeping a linear graph).

    >>> out, jvp_fn = ember.func.linearize(lambda x: x ** 2, ember.tensor([1.0, 3.0]))
    >>> jvp_fn(ember.ones(2))
    tensor([2., 6.])
    """
    from .autograd.grad_mode import no_grad
    with no_grad():
        out = func(*primals)

    def jvp_fn(*tangents):
        if len(tangents) != len(primals):
            raise RuntimeError(f"linearize: expected {len(primals)} tangents, one per primal, got {len(tangents)}")
        return jvp(func, tuple(primals), tuple(tangents))[1]
    return out, jvp_fn


# ------------------------------------------------------------------ Jacobians and the Hessian
def _jacobian(func, argnums, has_aux, op):
    from .autograd.grad_mode import enable_grad, is_grad_enabled
    from .ops.creation import zeros
    from .ops.shape import stack

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        outer = is_grad_enabled()
        with enable_grad():
            args, leaves_of, specs = _prepare(args, argnums, op)
            out = func(*args, **kwargs)
            out, aux = _split_aux(out, has_aux, op)
            own = [x for leaves in leaves_of for x in leaves]
            out_leaves, out_spec = _flatten(out)
            for o in out_leaves:
                if not isinstance(o, Tensor):
                    raise RuntimeError(f"{op}(f, ...)(*args): Expected f(*args) to return only tensors, got "
                                       f"unsupported type {type(o)}")
            keep = outer and _reads_outside(out_leaves, own)
            per_out = []
            for o in out_leaves:
                flat = o.reshape(-1)
                rows = [[] for _ in own]
                for k in range(o.numel()):   # one backward per output element
                    if not o.requires_grad:
                        break
                    for r, g in zip(rows, _grads([flat[k]], own, None, keep)):
                        r.append(g)
                jacs = []
                for r, x in zip(rows, own):
                    if r:
                        jacs.append(stack(r).reshape(*o.shape, *x.shape))
                    else:   # an empty output, or one that does not depend on the inputs
                        jacs.append(zeros(*o.shape, *x.shape, dtype=x.dtype, device=x.device))
                per_arg, i = [], 0
                for leaves, spec in zip(leaves_of, specs):
                    per_arg.append(_unflatten(jacs[i:i + len(leaves)], spec))
                    i += len(leaves)
                per_out.append(per_arg[0] if isinstance(argnums, int) else tuple(per_arg))
        jac = _finish(_unflatten(per_out, out_spec), keep)
        return (jac, _finish(aux, keep)) if has_aux else jac
    return wrapper


def jacrev(func: Callable, argnums=0, *, has_aux: bool = False, chunk_size=None,
           _preallocate_and_copy: bool = False) -> Callable:
    """The Jacobian of `func` with respect to argument(s) `argnums`, as a function of its arguments: for
    an output of shape O and an input of shape I, a tensor of shape O + I; outputs and inputs may be
    tuples, lists or dicts (the result nests output structure, then input structure). One backward per
    output element (`chunk_size` is accepted; torch batches them with vmap).

    >>> ember.func.jacrev(lambda x: x ** 2)(ember.tensor([1.0, 2.0]))
    tensor([[2., 0.],
            [0., 4.]])
    """
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")
    return _jacobian(func, argnums, has_aux, "jacrev")


def jacfwd(func: Callable, argnums=0, has_aux: bool = False, *, randomness: str = "error") -> Callable:
    """torch.func.jacfwd: the same Jacobian as jacrev (Ember computes it in reverse mode; torch's forward
    mode gives the same values). `randomness` is accepted for torch's signature.

    >>> ember.func.jacfwd(lambda x: x.sin())(ember.tensor([0.0]))
    tensor([[1.]])
    """
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got "
                           f"{randomness}")
    return _jacobian(func, argnums, has_aux, "jacfwd")


def hessian(func: Callable, argnums=0) -> Callable:
    """The Hessian of `func` (returning a one-element tensor) with respect to argument(s) `argnums`:
    jacfwd(jacrev(func)), shape I + I for an input of shape I.

    >>> ember.func.hessian(lambda x: (x ** 3).sum())(ember.tensor([1.0, 2.0]))
    tensor([[ 6.,  0.],
            [ 0., 12.]])
    """
    return jacfwd(jacrev(func, argnums), argnums)


# ------------------------------------------------------------------ vmap
def _in_dims_tree(in_dims, args, op):
    """One in_dim (int or None) per leaf of args."""
    if isinstance(in_dims, int) or in_dims is None:
        return [in_dims] * len(_flatten(list(args))[0])
    if not isinstance(in_dims, tuple):
        raise ValueError(f"{op}: in_dims is not an int nor a tuple ({in_dims!r}): expected `in_dims` to be int "
                         f"or a (potentially nested) tuple matching the structure of inputs")
    if len(in_dims) != len(args):
        raise ValueError(f"{op}: in_dims is not compatible with the structure of `inputs`. in_dims has structure "
                         f"of {len(in_dims)} items but inputs has {len(args)}")
    dims = []
    for d, a in zip(in_dims, args):
        n = len(_flatten(a)[0])
        if isinstance(d, int) or d is None:
            dims += [d] * n
        else:
            sub, _ = _flatten(d)
            if len(sub) != n:
                raise ValueError(f"{op}: in_dims is not compatible with the structure of `inputs`: {d!r} for an "
                                 f"argument with {n} leaves")
            dims += sub
    return dims


class _NoRandom:
    """randomness='error': a random draw inside the vmapped function raises, as torch's."""

    def __enter__(self):
        from . import random as _random
        _random.DRAW_HOOKS.append(self.hook)

    def __exit__(self, *exc):
        from . import random as _random
        _random.DRAW_HOOKS.remove(self.hook)

    @staticmethod
    def hook(gen, t, offset):
        raise RuntimeError("vmap: called random operation while in randomness error mode. Please either use "
                           "the 'same' or 'different' randomness flags on vmap or perform the randomness "
                           "operation out of vmap")


def vmap(func: Callable, in_dims=0, out_dims=0, randomness: str = "error", *, chunk_size=None) -> Callable:
    """`func` mapped over dim `in_dims` of its arguments (per argument: an int, None for an argument passed
    whole, or a nested structure matching it), the results stacked along `out_dims`: torch.func.vmap,
    with torch's checks and values. Ember runs func once per index and stacks (see the module docstring).

    >>> ember.func.vmap(ember.dot)(ember.ones(3, 2), ember.ones(3, 2))
    tensor([2., 2., 2.])
    """
    from .ops.indexing import select
    from .ops.shape import movedim, stack
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got "
                           f"{randomness}")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")
    name = getattr(func, "__name__", repr(func))
    op = f"vmap({name}, in_dims={in_dims}, ...)(<inputs>)"

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        if not args:
            raise ValueError(f"{op}: got no inputs. Maybe you forgot to add inputs, or you are trying to vmap "
                             f"over a function with no inputs. The latter is unsupported.")
        leaves, spec = _flatten(list(args))
        dims = _in_dims_tree(in_dims, args, op)
        sizes = []
        for x, d in zip(leaves, dims):
            if d is None:
                continue
            if not isinstance(x, Tensor):
                raise ValueError(f"{op}: Got in_dim={d} for an input but the input is of type {type(x)}. We "
                                 f"cannot vmap over non-Tensor arguments, please use None as the respective "
                                 f"in_dim")
            if not -x.ndim <= d < max(x.ndim, 1) or x.ndim == 0:
                raise ValueError(f"{op}: Got in_dim={d} for some input, but that input is a Tensor of "
                                 f"dimensionality {x.ndim} so expected in_dim to satisfy -{x.ndim} <= in_dim < "
                                 f"{x.ndim}.")
            sizes.append(x.shape[d])
        if not sizes:
            raise ValueError(f"{op}: at least one input must be a Tensor mapped over a dim (in_dims all None)")
        if len(set(sizes)) != 1:
            raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                             f"{sizes} for the mapped dimension")
        n = sizes[0]
        from . import random as _random
        rng0 = _random.default_generator.get_state() if randomness == "same" else None
        results = []
        for i in range(n):
            if rng0 is not None:
                _random.default_generator.set_state(rng0)
            call_args = _unflatten([x if d is None else select(x, d, i) for x, d in zip(leaves, dims)], spec)
            if randomness == "error":
                with _NoRandom():
                    results.append(func(*call_args, **kwargs))
            else:
                results.append(func(*call_args, **kwargs))
        return _stack_outputs(results, out_dims, name, n, stack, movedim)
    return wrapper


def _stack_outputs(results, out_dims, name, n, stack, movedim):
    flats = [_flatten(r) for r in results]
    spec = flats[0][1]
    if isinstance(out_dims, int) or out_dims is None:
        dims = [out_dims] * len(flats[0][0])
    else:
        dims, _ = _flatten(out_dims)
        if not isinstance(results[0], tuple) or len(out_dims) != len(results[0]):
            raise ValueError(f"vmap({name}, ...): out_dims is not compatible with the structure of `outputs`. "
                             f"out_dims has structure {out_dims!r} but outputs has "
                             f"{type(results[0]).__name__}")
        if len(dims) != len(flats[0][0]):   # one out_dim per output, each output a tree
            dims = [d for d, r in zip(out_dims, results[0]) for _ in _flatten(r)[0]]
    out = []
    for j, d in enumerate(dims):
        column = [leaves[j] for leaves, _ in flats]
        if d is None:
            out.append(column[0])
            continue
        if not all(isinstance(c, Tensor) for c in column):
            raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type "
                             f"{type(column[0])}. Did you mean to set out_dims= to None for output?")
        stacked = stack(column)   # (n, *shape)
        nd = stacked.ndim
        if not -nd <= d < nd:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got {d})")
        out.append(movedim(stacked, 0, d))
    return _unflatten(out, spec)
