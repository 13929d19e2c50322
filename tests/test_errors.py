"""Errors that teach: the op, every operand's shape/dtype/device and the user's file:line; and a bad
input changes nothing."""
import inspect
import re

import pytest

import ember


def here():
    """'test_errors.py:N' of the caller's next line (where the failing op is called)."""
    return f"test_errors.py:{inspect.currentframe().f_back.f_lineno + 1}"


def test_mm_shape_mismatch_message():
    a, b = ember.zeros(64, 1000), ember.zeros(100, 10)
    with pytest.raises(RuntimeError) as e:
        where = here()
        ember.mm(a, b)
    assert str(e.value) == f"mm: shapes (64, 1000) and (100, 10) cannot be multiplied (1000 != 100) (at {where})"


@pytest.mark.parametrize("op", ["matmul", "@", "method"])
def test_matmul_shape_mismatch_message(op):
    a, b = ember.zeros(2, 3), ember.zeros(4, 5)
    with pytest.raises(RuntimeError) as e:
        where = here()
        a @ b if op == "@" else (a.matmul(b) if op == "method" else ember.matmul(a, b))
    msg = str(e.value)
    assert msg.startswith("matmul: shapes (2, 3) and (4, 5) cannot be multiplied (3 != 4)") and where in msg


def test_bmm_and_batch_broadcast_errors():
    with pytest.raises(RuntimeError, match=r"bmm: .*\(2, 3, 4\) and \(3, 4, 5\).*test_errors\.py:\d+"):
        ember.bmm(ember.zeros(2, 3, 4), ember.zeros(3, 4, 5))
    with pytest.raises(RuntimeError, match=r"matmul: batch shapes of \(2, 3, 4\) and \(3, 4, 5\).*test_errors"):
        ember.zeros(2, 3, 4) @ ember.zeros(3, 4, 5)
    with pytest.raises(RuntimeError, match="matmul: both arguments need at least 1 dimension"):
        ember.zeros(()) @ ember.zeros(3)


@pytest.mark.parametrize("op", ["add", "+", "mul", "sub", "div", "maximum", "lt", "where"])
def test_broadcast_mismatch_names_op_shapes_line(op):
    a, b = ember.zeros(2, 3), ember.zeros(4)
    fns = {"add": lambda: ember.add(a, b), "+": lambda: a + b, "mul": lambda: a.mul(b), "sub": lambda: a - b,
           "div": lambda: a / b, "maximum": lambda: ember.maximum(a, b), "lt": lambda: a < b,
           "where": lambda: ember.where(a > 0, a, b)}
    where = f"test_errors.py:{fns[op].__code__.co_firstlineno}"   # the line of the lambda
    with pytest.raises(RuntimeError) as e:
        fns[op]()
    msg = str(e.value)
    name = {"+": "add"}.get(op, op)
    assert msg.startswith(name + ":") or msg.startswith(op + ":"), msg
    assert "(2, 3)" in msg and "(4,)" in msg and where in msg, msg


def test_dtype_mismatch_in_mm():
    a, b = ember.zeros(2, 3), ember.zeros(3, 2, dtype=ember.float64)
    with pytest.raises(RuntimeError) as e:
        where = here()
        ember.mm(a, b)
    msg = str(e.value)
    assert msg.startswith("mm: expected both operands to have the same dtype")
    assert "(2, 3) float32 cpu" in msg and "(3, 2) float64 cpu" in msg and where in msg


def test_error_line_points_at_user_code_through_composites():
    x = ember.zeros(2, 3)
    with pytest.raises(RuntimeError) as e:
        where = here()
        x.reshape(7)
    assert where in str(e.value)
    with pytest.raises(RuntimeError) as e:
        where = here()
        ember.cat([x, ember.zeros(2, 4)], 0)
    assert where in str(e.value) and "(2, 3)" in str(e.value) and "(2, 4)" in str(e.value)


def test_failed_inplace_changes_nothing():
    x = ember.ones(2, 3)
    before, v = x.tolist(), x._version
    with pytest.raises(RuntimeError, match=r"add_: .*doesn't match the broadcast shape"):
        x.add_(ember.ones(4, 2, 3))
    with pytest.raises(RuntimeError, match="add"):
        x.add_(ember.ones(5))
    with pytest.raises(RuntimeError):
        x += ember.ones(3, 3)
    with pytest.raises(RuntimeError, match="mul_"):
        x.mul_(ember.ones(2, 2))
    assert x.tolist() == before and x._version == v
    i = ember.tensor([1, 2])
    with pytest.raises(RuntimeError, match="can't be cast"):
        i.mul_(0.5)
    assert i.tolist() == [1, 2] and i._version == 0
    with pytest.raises(RuntimeError, match="copy_"):
        x.copy_(ember.ones(4))
    assert x.tolist() == before and x._version == v


def test_failed_op_leaves_graph_and_grads_untouched():
    w = ember.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError):
        (w * ember.ones(2)).sum()
    assert w.grad is None and w.is_leaf and w._version == 0


def test_requires_grad_on_int_error():
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype can require gradients"):
        ember.zeros(2, dtype=ember.int64).requires_grad_()


def test_dim_out_of_range_names_op():
    with pytest.raises(IndexError, match=r"sum: Dimension out of range \(expected to be in range of \[-2, 1\], but got 3\).*test_errors\.py"):
        ember.zeros(2, 3).sum(3)
    with pytest.raises(IndexError, match=r"softmax|out of range"):
        ember.zeros(2).unsqueeze(5)
