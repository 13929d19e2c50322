"""torch.* function forms of Tensor methods: `torch.abs_(t)` is `t.abs_()`, `torch.is_nonzero(t)` is
`t.is_nonzero()`, `torch.index_put_(t, indices, values)` is `t.index_put_(indices, values)`.

Each is the method looked up on its first argument when called, so it is the method, whatever later
code binds to `Tensor` under that name (`ember/_tensor_methods.py`).

>>> t = ember.tensor([-1.5, 2.0])
>>> ember.abs_(t) is t, t.tolist()
(True, [1.5, 2.0])
>>> ember.is_nonzero(ember.tensor([3])), ember.is_complex(t), ember.get_device(t)
(True, False, -1)
"""
from __future__ import annotations

from .._tensor import Tensor

__all__ = """abs_ acos_ acosh_ addmv_ arccos_ arccosh_ arcsin_ arcsinh_ arctan_ arctanh_ asin_ asinh_ atan_ atanh_
             ceil_ clamp_ clip_ cos_ cosh_ deg2rad_ detach_ erf_ erfc_ exp2_ exp_ expm1_ fill_ floor_ frac_ gcd_ i0_
             index_put_ is_complex is_conj is_distributed is_neg is_nonzero is_same_size is_signed lcm_ ldexp_
             log10_ log1p_ log2_ log_ logit_ nan_to_num_ neg_ rad2deg_ reciprocal_ round_ rsqrt_ sin_ sinc_ sinh_
             sqrt_ square_ tan_ trunc_ xlogy_ zero_ clamp_max_ clamp_min_ fix_ negative_ get_device""".split()


def _function_form(name: str):
    def function(input, *args, **kwargs):
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
        return getattr(input, name)(*args, **kwargs)
    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"torch.{name}(input, ...): `input.{name}(...)`."
    return function


for _name in __all__:
    globals()[_name] = _function_form(_name)
del _name
