"""Higher-level differentiation of a whole function (torch.autograd.functional): jacobian, hessian, vjp,
jvp, hvp, vhp, with torch's signatures, its nesting of the returned tuples and its strict-mode errors.

Everything is built on `ember.autograd.grad`. Ember has no forward-mode AD, so jvp and hvp use the
double-backward trick as torch does (the backward is linear in its upstream gradient: differentiating it
with respect to that gradient gives J @ v), and `strategy="forward-mode"` jacobians are built column by
column with the same trick. `vectorize=True` is accepted and computes the same values row by row (torch
batches the rows with vmap; only speed differs).
"""
from __future__ import annotations

from .._errors import op_error
from .._tensor import Tensor
from .grad_mode import is_grad_enabled, set_grad_enabled

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]


def _as_tuple(inp, arg_name, fn_name):
    """(whether `inp` was a tuple, `inp` as a tuple of Tensors)."""
    is_tuple = isinstance(inp, tuple)
    if not is_tuple:
        inp = (inp,)
    for i, el in enumerate(inp):
        if not isinstance(el, Tensor):
            where = f"the value at index {i}" if is_tuple else f"the given {arg_name}"
            raise op_error(fn_name, f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of "
                                    f"Tensors but {where} has type {type(el)}.", TypeError)
    return is_tuple, inp


def _tuple_postprocess(res, to_unpack):
    """Undo `_as_tuple`: `to_unpack` is one flag, or (outputs' flag, inputs' flag) for nested results."""
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        if not to_unpack[0]:
            res = res[0]
    elif not to_unpack:
        res = res[0]
    return res


def _grad_preprocess(inputs, create_graph, need_graph):
    # always new Tensor objects, so the function's own captures of the same tensors are told apart
    # (torch issue 32576); with create_graph a differentiable view keeps the path back to the caller's
    res = []
    for inp in inputs:
        if create_graph and inp.requires_grad:
            res.append(inp.view_as(inp))
        else:
            res.append(inp.detach().requires_grad_(need_graph))
    return tuple(res)


def _grad_postprocess(inputs, create_graph):
    if isinstance(inputs[0], Tensor):
        return inputs if create_graph else tuple(inp.detach() for inp in inputs)
    return tuple(_grad_postprocess(inp, create_graph) for inp in inputs)


def _validate_v(v, other, is_other_tuple, fn_name):
    if len(other) != len(v):
        if is_other_tuple:
            raise op_error(fn_name, f"v is a tuple of invalid length: should be {len(other)} but got {len(v)}.")
        raise op_error(fn_name, "The given v should contain a single Tensor.")
    for idx, (el_v, el_other) in enumerate(zip(v, other)):
        if el_v.shape != el_other.shape:
            prepend = f"Entry {idx} in " if is_other_tuple else ""
            raise op_error(fn_name, f"{prepend}v has invalid size: should be {tuple(el_other.shape)} but got "
                                    f"{tuple(el_v.shape)}.")


_STRICT = {
    "hessian": ("The hessian of the user-provided function with respect to input {i} is independent of the "
                "input. This is not allowed in strict mode. You should ensure that your function is thrice "
                "differentiable and that the hessian depends on the inputs."),
    "jacobian": ("While computing the hessian, found that the jacobian of the user-provided function with "
                 "respect to input {i} is independent of the input. This is not allowed in strict mode. You "
                 "should ensure that your function is twice differentiable and that the jacobian depends on "
                 "the inputs (this would be violated by a linear function for example)."),
    "grad_inputs": ("The gradient with respect to input {i} is independent of the inputs of the user-provided "
                    "function. This is not allowed in strict mode."),
    "outputs": ("Output {i} of the user-provided function does not require gradients. The outputs must be "
                "computed in a differentiable manner from the input when running in strict mode."),
}


def _check_requires_grad(inputs, input_type, strict, fn_name):
    if not strict:
        return
    for i, inp in enumerate(inputs):
        if inp is None:   # only for grad_inputs
            raise op_error(fn_name, f"The output of the user-provided function is independent of input {i}. "
                                    f"This is not allowed in strict mode.")
        if not inp.requires_grad:
            raise op_error(fn_name, _STRICT[input_type].format(i=i))


def _autograd_grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None):
    """autograd.grad that skips outputs which are None or do not require grad (None for every input
    when none is left) and allows unused inputs."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    new_outputs, new_grad_outputs = [], []
    for out, grad_out in zip(outputs, grad_outputs):
        if out is not None and out.requires_grad:
            new_outputs.append(out)
            new_grad_outputs.append(grad_out)
    if not new_outputs:
        return (None,) * len(inputs)
    from . import grad   # ember.autograd imports this module
    return grad(new_outputs, inputs, new_grad_outputs, allow_unused=True, create_graph=create_graph,
                 retain_graph=retain_graph)


_FILL = {
    "back": "The output of the user-provided function is independent of input {i}. This is not allowed in "
            "strict mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the grad_outputs when "
                  "using the double backward trick to compute forward mode gradients. This is not allowed in "
                  "strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. This is not "
                   "allowed in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry {i} in the "
                         "grad_jacobian. This is not allowed in strict mode as it prevents from using the "
                         "double backward trick to replace forward mode AD.",
}


def _fill_in_zeros(grads, refs, strict, create_graph, stage, fn_name):
    """None gradients as zeros shaped like `refs` (torch's mathematical value), or strict mode's error."""
    from ..ops.creation import zeros_like
    res = []
    for i, grads_i in enumerate(grads):
        if grads_i is None:
            if strict:
                raise op_error(fn_name, _FILL[stage].format(i=i))
            grads_i = zeros_like(refs[i])
        elif strict and create_graph and not grads_i.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise op_error(fn_name, f"The {what} of the user-provided function is independent of input {i}. "
                                    f"This is not allowed in strict mode when create_graph=True.")
        res.append(grads_i)
    return tuple(res)


def _v_or_scalar(v, inputs, is_inputs_tuple, create_graph, fn_name, what):
    """`v` checked against `inputs` (as tuple), or the error torch gives when v=None is not allowed."""
    if v is not None:
        _, v = _as_tuple(v, "v", fn_name)
        v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
        _validate_v(v, inputs, is_inputs_tuple, fn_name)
        return v
    if len(inputs) != 1 or inputs[0].numel() != 1:
        raise op_error(fn_name, f"The vector v can only be None if {what} is a single Tensor with a single "
                                f"element.")
    return None


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(*inputs), v @ J): the vector-Jacobian product at `inputs`, shaped like the inputs; `v` is
    shaped like func's output (may be None for a one-element output).

    >>> out, g = ember.autograd.functional.vjp(lambda x: x ** 2, ember.tensor([1.0, 2.0]), ember.ones(2))
    >>> g
    tensor([2., 4.])
    """
    with set_grad_enabled(True):
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "vjp")
        _check_requires_grad(outputs, "outputs", strict, "vjp")
        if v is not None:
            _, v = _as_tuple(v, "v", "vjp")
            v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
            _validate_v(v, outputs, is_outputs_tuple, "vjp")
        elif len(outputs) != 1 or outputs[0].numel() != 1:
            raise op_error("vjp", "The vector v can only be None if the user-provided function returns a single "
                                  "Tensor with a single element.")
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(outputs, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "back", "vjp")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(result, is_inputs_tuple)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(*inputs), J @ v): the Jacobian-vector product at `inputs`, shaped like func's output; `v` is
    shaped like the inputs (may be None for a one-element input). Computed by the double-backward trick.

    >>> out, t = ember.autograd.functional.jvp(lambda x: x ** 2, ember.tensor([1.0, 2.0]), ember.ones(2))
    >>> t
    tensor([2., 4.])
    """
    from ..ops.creation import zeros_like
    with set_grad_enabled(True):
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        v = _v_or_scalar(v, inputs, is_inputs_tuple, create_graph, "jvp",
                         "the input to the user-provided function")
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "jvp")
        _check_requires_grad(outputs, "outputs", strict, "jvp")
        # the backward is linear in grad_outputs, so their value (zeros: no inf or nan) does not matter
        grad_outputs = tuple(zeros_like(out, requires_grad=True) for out in outputs)
        grad_inputs = _autograd_grad(outputs, inputs, grad_outputs, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict, "jvp")
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(grad_inputs, grad_outputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, outputs, strict, create_graph, "back_trick", "jvp")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(result, is_outputs_tuple)


def _jacfwd(func, inputs, strict, vectorize):
    """The forward-mode Jacobian (torch needs vectorize=True for it): one Jacobian-vector product per
    input element, by the double-backward trick; each result has its output's dtype, as torch's."""
    from ..ops.creation import zeros, zeros_like
    from ..ops.shape import stack
    if strict:
        raise op_error("jacobian", '`strict=True` and `strategy="forward-mode"` are not supported together '
                                   '(yet). Please either set `strict=False` or `strategy="reverse-mode"`.')
    if not vectorize:
        raise op_error("jacobian", "Computing Jacobian using forward-AD or forward-over-reverse Hessian is "
                                   "only implemented for `vectorize=True`.", NotImplementedError)
    with set_grad_enabled(True):
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        # as torch's dual tensors, the result stays differentiable in inputs that require grad
        differentiable = any(inp.requires_grad for inp in inputs)
        inputs = _grad_preprocess(inputs, create_graph=True, need_graph=True)
        is_outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function",
                                              "jacobian")
        grad_outputs = tuple(zeros_like(out, requires_grad=True) for out in outputs)
        grad_inputs = _autograd_grad(outputs, inputs, grad_outputs, create_graph=True)
        jac = [[] for _ in outputs]   # jac[i][j]: output i by input j
        for j, inp in enumerate(inputs):
            columns = [[] for _ in outputs]
            for k in range(inp.numel()):
                basis = tuple(zeros_like(x) for x in inputs)
                basis[j].view(-1)[k] = 1.0
                col = _autograd_grad(grad_inputs, grad_outputs, basis, retain_graph=True,
                                     create_graph=differentiable)
                for i, out in enumerate(outputs):
                    columns[i].append(zeros_like(out) if col[i] is None else col[i])
            for i, out in enumerate(outputs):
                if columns[i]:
                    full = stack(columns[i], dim=-1).reshape(*out.shape, *inp.shape)
                else:   # an empty input
                    full = zeros(*out.shape, *inp.shape, dtype=out.dtype, device=out.device)
                jac[i].append(full)
    return _tuple_postprocess(tuple(tuple(row) for row in jac), (is_outputs_tuple, is_inputs_tuple))


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """The Jacobian of `func` at `inputs`: one Tensor of shape out.shape + in.shape for one input and one
    output, a tuple when either is a tuple, and `J[i][j]` (output i, input j) when both are.

    >>> ember.autograd.functional.jacobian(lambda x: x ** 2, ember.tensor([1.0, 2.0]))
    tensor([[2., 0.],
            [0., 4.]])
    """
    from ..ops.creation import zeros_like
    from ..ops.shape import stack
    if strategy not in ("forward-mode", "reverse-mode"):
        raise op_error("jacobian", f'Expected strategy to be either "forward-mode" or "reverse-mode", got '
                                   f'{strategy!r}. Hint: If your function has more outputs than inputs, '
                                   f'"forward-mode" tends to be more performant. Otherwise, prefer to use '
                                   f'"reverse-mode".', AssertionError)
    if strategy == "forward-mode":
        if create_graph:
            raise op_error("jacobian", '`create_graph=True` and `strategy="forward-mode"` are not supported '
                                       'together (yet). Please either set `create_graph=False` or '
                                       '`strategy="reverse-mode"`.', NotImplementedError)
        return _jacfwd(func, inputs, strict, vectorize)
    with set_grad_enabled(True):
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "jacobian")
        _check_requires_grad(outputs, "outputs", strict, "jacobian")
        if vectorize and strict:
            raise op_error("jacobian", "`strict=True` and `vectorized=True` are not supported together. Please "
                                       "either set `strict=False` or `vectorize=False`.")
        jac = []
        for i, out in enumerate(outputs):
            jac_i = [[] for _ in inputs]
            flat = out.reshape(-1)
            for k in range(out.numel()):   # one backward per row
                vj = _autograd_grad((flat[k],), inputs, retain_graph=True, create_graph=create_graph)
                for el_idx, (vj_el, inp_el) in enumerate(zip(vj, inputs)):
                    if vj_el is not None:
                        if strict and create_graph and not vj_el.requires_grad:
                            raise op_error("jacobian", f"The jacobian of the user-provided function is independent "
                                                       f"of input {i}. This is not allowed in strict mode when "
                                                       f"create_graph=True.")
                        jac_i[el_idx].append(vj_el)
                    else:
                        if strict:
                            raise op_error("jacobian", f"Output {i} of the user-provided function is independent "
                                                       f"of input {el_idx}. This is not allowed in strict mode.")
                        jac_i[el_idx].append(zeros_like(inp_el))
            jac.append(tuple(_stack_rows(rows, out, inputs[el_idx], stack)
                             for el_idx, rows in enumerate(jac_i)))
        jac = _grad_postprocess(tuple(jac), create_graph)
        return _tuple_postprocess(jac, (is_outputs_tuple, is_inputs_tuple))


def _stack_rows(rows, out, inp, stack):
    if rows:
        return stack(rows, dim=0).view(*out.shape, *inp.shape)
    from ..ops.creation import zeros
    return zeros(*out.shape, *inp.shape, dtype=inp.dtype, device=inp.device)   # an empty output


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """The Hessian of the scalar function `func` at `inputs`: one Tensor of shape in.shape + in.shape for
    one input, `H[i][j]` (inputs i and j) for a tuple of inputs.

    >>> ember.autograd.functional.hessian(lambda x: (x ** 3).sum(), ember.tensor([1.0, 2.0]))
    tensor([[ 6.,  0.],
            [ 0., 12.]])
    """
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise op_error("hessian", f'Expected strategy to be either "forward-mode" or "reverse-mode", got '
                                  f'{outer_jacobian_strategy!r}.', AssertionError)

    def ensure_single_output_function(*inp):
        out = func(*inp)
        is_out_tuple, t_out = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(t_out, "outputs", strict, "hessian")
        if is_out_tuple or not isinstance(out, Tensor):
            raise op_error("hessian", "The function given to hessian should return a single Tensor")
        if out.numel() != 1:
            raise op_error("hessian", "The Tensor returned by the function given to hessian should contain a "
                                      "single element")
        return out.squeeze()

    def jac_func(*inp):
        jac = jacobian(ensure_single_output_function, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict, "hessian")
        return jac

    res = jacobian(jac_func, inputs, create_graph=create_graph, strict=strict, vectorize=vectorize,
                   strategy=outer_jacobian_strategy)
    return _tuple_postprocess(res, (is_inputs_tuple, is_inputs_tuple))


def _scalar_function_outputs(func, inputs, strict, fn_name):
    outputs = func(*inputs)
    is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", fn_name)
    _check_requires_grad(outputs, "outputs", strict, fn_name)
    if is_outputs_tuple or not isinstance(outputs[0], Tensor):
        raise op_error(fn_name, f"The function given to {fn_name} should return a single Tensor")
    if outputs[0].numel() != 1:
        raise op_error(fn_name, f"The Tensor returned by the function given to {fn_name} should contain a "
                                f"single element")
    return is_outputs_tuple, outputs


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(*inputs), v @ H): the vector-Hessian product of the scalar function `func` at `inputs`,
    shaped like the inputs.

    >>> out, r = ember.autograd.functional.vhp(lambda x: (x ** 3).sum(), ember.tensor([1.0, 2.0]), ember.ones(2))
    >>> r
    tensor([ 6., 12.])
    """
    with set_grad_enabled(True):
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vhp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        v = _v_or_scalar(v, inputs, is_inputs_tuple, create_graph, "vhp",
                         "the input to the user-provided function")
        is_outputs_tuple, outputs = _scalar_function_outputs(func, inputs, strict, "vhp")
        jac = _autograd_grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict, "vhp")
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(jac, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back", "vhp")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(result, is_inputs_tuple)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(*inputs), H @ v): the Hessian-vector product of the scalar function `func` at `inputs`,
    shaped like the inputs; by the double-backward trick (equal to vhp for a twice continuously
    differentiable function, and slower).

    >>> out, r = ember.autograd.functional.hvp(lambda x: (x ** 3).sum(), ember.tensor([1.0, 2.0]), ember.ones(2))
    >>> r
    tensor([ 6., 12.])
    """
    from ..ops.creation import zeros_like
    with set_grad_enabled(True):
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hvp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        v = _v_or_scalar(v, inputs, is_inputs_tuple, create_graph, "hvp",
                         "the input to the user-provided function")
        is_outputs_tuple, outputs = _scalar_function_outputs(func, inputs, strict, "hvp")
        jac = _autograd_grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict, "hvp")
        grad_jac = tuple(zeros_like(inp, requires_grad=True) for inp in inputs)
        double_back = _autograd_grad(jac, inputs, grad_jac, create_graph=True)
        _check_requires_grad(jac, "hessian", strict, "hvp")
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(double_back, grad_jac, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back_trick", "hvp")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(result, is_inputs_tuple)
