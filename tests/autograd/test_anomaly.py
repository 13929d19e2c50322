"""ember/autograd/anomaly.py: the first op making NaN/Inf is named, with the user's file:line."""
import inspect

import pytest

import ember


def _line():
    return inspect.currentframe().f_back.f_lineno


def test_forward_nan_names_op_and_user_line():
    x = ember.tensor([-1.0, 1.0], requires_grad=True)
    with ember.autograd.detect_anomaly():
        with pytest.raises(RuntimeError) as e:
            line = _line() + 1
            x.log()
    msg = str(e.value)
    assert "Log" in msg and "NaN or Inf" in msg and f"test_anomaly.py:{line}" in msg


def test_forward_inf_without_grad_also_checked():
    with ember.autograd.set_detect_anomaly(True):
        with pytest.raises(RuntimeError, match=r"anomaly: Div .*test_anomaly\.py:\d+"):
            ember.tensor([1.0]) / ember.tensor([0.0])


def test_backward_nan_names_forward_op_and_its_line():
    x = ember.tensor([0.0, 1.0], requires_grad=True)
    with ember.autograd.detect_anomaly():
        line = _line() + 1
        y = x.sqrt()            # finite forward; d sqrt at 0 is inf
        with pytest.raises(RuntimeError) as e:
            (y * 0).sum().backward()
    msg = str(e.value)
    assert "SqrtBackward" in msg and f"test_anomaly.py:{line}" in msg


def test_anomaly_off_by_default_and_restored():
    assert not ember.autograd.is_anomaly_enabled()
    y = ember.tensor([-1.0]).log()            # no error: NaN propagates silently
    assert y.isnan().all()
    with ember.autograd.detect_anomaly():
        assert ember.autograd.is_anomaly_enabled()
    assert not ember.autograd.is_anomaly_enabled()


def test_detect_anomaly_as_decorator():
    @ember.autograd.detect_anomaly()
    def f():
        return ember.tensor([0.0]).log()

    with pytest.raises(RuntimeError, match="Log"):
        f()
    assert not ember.autograd.is_anomaly_enabled()


@pytest.mark.parametrize("dt", ["float16", "bfloat16", "float64"])
def test_anomaly_checks_every_float_dtype(dt):
    with ember.autograd.detect_anomaly():
        with pytest.raises(RuntimeError, match="anomaly: Log"):
            ember.tensor([-1.0], dtype=getattr(ember, dt)).log()
