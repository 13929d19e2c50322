"""ember/autograd/anomaly.py: as torch's anomaly mode, the first backward function returning NaN is named,
with the user's file:line of its forward call; forward infinities (masked attention) are allowed."""
import inspect
import warnings

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn


def _line():
    return inspect.currentframe().f_back.f_lineno


def test_backward_nan_names_backward_function_and_forward_line():
    x = ember.tensor([0.0, 1.0], requires_grad=True)
    with ember.autograd.detect_anomaly():
        line = _line() + 1
        y = x.sqrt()            # finite forward; d sqrt at 0 is inf, times 0 is NaN
        with pytest.raises(RuntimeError) as e:
            (y * 0).sum().backward()
    msg = str(e.value)
    assert "Function 'SqrtBackward' returned nan values in its 0th output" in msg
    assert f"test_anomaly.py:{line}" in msg


def test_backward_nan_names_the_output_index_as_torch():
    msg = {}
    for lib in (torch, ember):
        a = lib.tensor([1.0])
        b = lib.tensor([0.0], requires_grad=True)
        ctx = torch.autograd.detect_anomaly() if lib is torch else ember.autograd.detect_anomaly()
        with warnings.catch_warnings(), ctx:
            warnings.simplefilter("ignore")
            with pytest.raises(RuntimeError) as e:
                (a / b * 0).sum().backward()     # d(a/b)/db = -a/b**2 = -inf, times 0: NaN
        msg[lib] = str(e.value)
    assert "returned nan values in its 1th output" in msg[torch]
    assert "Function 'DivBackward' returned nan values in its 1th output" in msg[ember]


def test_forward_nan_and_inf_do_not_raise_as_in_torch():
    with ember.autograd.detect_anomaly():
        x = ember.tensor([-1.0, 1.0], requires_grad=True)
        assert x.log().isnan().any()                    # torch raises nothing in the forward either
        assert (ember.tensor([1.0]) / ember.tensor([0.0])).isinf().all()
        z = ember.tensor([0.0, 1.0], requires_grad=True)
        z.sqrt().sum().backward()                       # an infinite gradient is not a NaN
    assert np.isinf(z.grad.numpy()[0])


def test_masked_fill_minus_inf_softmax_allowed():
    x = np.random.default_rng(0).standard_normal((2, 4, 4)).astype(np.float32)
    causal = np.triu(np.ones((4, 4), dtype=bool), 1)
    grads = {}
    for lib, ctx in ((torch, torch.autograd.detect_anomaly), (ember, ember.autograd.detect_anomaly)):
        t = lib.tensor(x, requires_grad=True)
        with warnings.catch_warnings(), ctx():
            warnings.simplefilter("ignore")
            a = t.masked_fill(lib.tensor(causal), float("-inf")).softmax(-1)
            (a * lib.tensor(x)).sum().backward()
        grads[lib] = t.grad.numpy()
    np.testing.assert_allclose(grads[ember], grads[torch], rtol=1e-5, atol=1e-6)


def test_multihead_attention_with_causal_mask_allowed():
    ember.manual_seed(0)
    m = nn.MultiheadAttention(8, 2, batch_first=True)
    q = ember.randn(2, 4, 8, requires_grad=True)
    mask = nn.Transformer.generate_square_subsequent_mask(4)      # -inf above the diagonal
    with ember.autograd.detect_anomaly():
        out, _ = m(q, q, q, attn_mask=mask)
        out.sum().backward()
    assert np.isfinite(q.grad.numpy()).all()


def test_anomaly_off_by_default_and_restored():
    assert not ember.autograd.is_anomaly_enabled()
    x = ember.tensor([0.0], requires_grad=True)
    (x.sqrt() * 0).sum().backward()           # no error: NaN propagates silently
    assert x.grad.isnan().all()
    with ember.autograd.detect_anomaly():
        assert ember.autograd.is_anomaly_enabled()
    assert not ember.autograd.is_anomaly_enabled()


def test_check_nan_false_records_but_does_not_raise():
    x = ember.tensor([0.0], requires_grad=True)
    with ember.autograd.detect_anomaly(check_nan=False):
        assert ember.autograd.is_anomaly_enabled() and not ember.autograd.is_anomaly_check_nan_enabled()
        (x.sqrt() * 0).sum().backward()
    assert x.grad.isnan().all() and ember.autograd.is_anomaly_check_nan_enabled()


def test_detect_anomaly_as_decorator():
    @ember.autograd.detect_anomaly()
    def f():
        x = ember.tensor([0.0], requires_grad=True)
        (x.sqrt() * 0).sum().backward()

    assert not ember.autograd.is_anomaly_enabled()
    with pytest.raises(RuntimeError, match="SqrtBackward"):
        f()
    assert not ember.autograd.is_anomaly_enabled()


@pytest.mark.parametrize("dt", ["float16", "bfloat16", "float64"])
def test_anomaly_checks_every_float_dtype(dt):
    x = ember.tensor([0.0], dtype=getattr(ember, dt), requires_grad=True)
    with ember.autograd.detect_anomaly():
        with pytest.raises(RuntimeError, match="SqrtBackward"):
            (x.sqrt() * 0).sum().backward()


def test_forward_line_is_recorded():
    # the exact line is checked above; this also holds where the frames between (a test runner's
    # instrumentation) hide the test file: the node records some user line, not nothing
    x = ember.tensor([0.0], requires_grad=True)
    with ember.autograd.detect_anomaly():
        y = x.sqrt()
        with pytest.raises(RuntimeError) as e:
            (y * 0).sum().backward()
    msg = str(e.value)
    assert msg.startswith("Function 'SqrtBackward' returned nan values in its 0th output (gradient (1,) "
                          "float32); the forward op Sqrt was called at ")
    assert "<unknown" not in msg and msg.rsplit(" ", 1)[1].count(":") == 1


def test_forward_outside_anomaly_mode_says_so():
    x = ember.tensor([0.0], requires_grad=True)
    y = x.sqrt() * 0            # recorded before anomaly mode is on: no forward line
    with ember.autograd.detect_anomaly():
        with pytest.raises(RuntimeError) as e:
            y.sum().backward()
    assert str(e.value).endswith("the forward op Sqrt was called at "
                                 "<unknown: enable anomaly mode before the forward>")


def test_set_detect_anomaly_as_call_and_context_manager():
    assert not ember.autograd.is_anomaly_enabled()
    ember.autograd.set_detect_anomaly(True)         # a plain call takes effect at once, check_nan on
    try:
        assert ember.autograd.is_anomaly_enabled() and ember.autograd.is_anomaly_check_nan_enabled()
        ember.autograd.set_detect_anomaly(True, check_nan=False)
        assert not ember.autograd.is_anomaly_check_nan_enabled()
        ember.autograd.set_detect_anomaly(True, check_nan=True)
        assert ember.autograd.is_anomaly_check_nan_enabled()
    finally:
        ember.autograd.set_detect_anomaly(False)
    assert not ember.autograd.is_anomaly_enabled()
    for lib, mod in ((torch, torch), (ember, ember.autograd)):
        with lib.autograd.set_detect_anomaly(True, check_nan=False) as m:
            assert mod.is_anomaly_enabled() and not mod.is_anomaly_check_nan_enabled()
        assert not mod.is_anomaly_enabled() and mod.is_anomaly_check_nan_enabled()
    assert isinstance(m, ember.autograd.set_detect_anomaly)
    with ember.autograd.detect_anomaly() as d:
        assert isinstance(d, ember.autograd.detect_anomaly)


@pytest.mark.parametrize("ctx", ["set_detect_anomaly", "detect_anomaly"])
def test_anomaly_modes_let_exceptions_through(ctx):
    make = {"set_detect_anomaly": lambda: ember.autograd.set_detect_anomaly(True),
            "detect_anomaly": lambda: ember.autograd.detect_anomaly()}[ctx]
    with pytest.raises(KeyError):
        with make():
            raise KeyError("x")
    assert not ember.autograd.is_anomaly_enabled()


def test_detect_anomaly_decorator_keeps_check_nan_name_and_result():
    @ember.autograd.detect_anomaly(check_nan=False)
    def f(a, *, k):
        """doc"""
        assert ember.autograd.is_anomaly_enabled() and not ember.autograd.is_anomaly_check_nan_enabled()
        (x.sqrt() * 0).sum().backward()      # not checked: no error
        return a * k

    x = ember.tensor([0.0], requires_grad=True)
    assert f(2, k=3) == 6 and f.__name__ == "f" and f.__doc__ == "doc"
    assert not ember.autograd.is_anomaly_enabled() and ember.autograd.is_anomaly_check_nan_enabled()


def test_has_nan_only_for_floating_arrays():
    import ml_dtypes
    from ember.autograd.anomaly import _has_nan
    assert not _has_nan(np.arange(3)) and not _has_nan(np.array([True]))
    assert _has_nan(np.array([1.0, np.nan])) and _has_nan(np.array([np.nan], dtype=ml_dtypes.bfloat16))
    assert not _has_nan(np.array([1.0, np.inf], dtype=np.float16))


def test_detect_anomaly_warns_as_torch_and_the_check_nan_flag_is_top_level():
    for L in (ember, torch):
        with pytest.warns(UserWarning, match="^Anomaly Detection has been enabled. This mode will increase the "
                                             "runtime and should only be enabled for debugging.$") as rec:
            with L.autograd.detect_anomaly(check_nan=False):
                assert L.is_anomaly_enabled() and not L.is_anomaly_check_nan_enabled()
        assert rec[0].filename == __file__   # attributed to the user's line
        assert L.is_anomaly_check_nan_enabled()
