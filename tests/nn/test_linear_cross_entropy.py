"""F.linear_cross_entropy, nn.LinearCrossEntropyLoss, nn.LinearCrossEntropyOptions and the deprecated
nn.NLLLoss2d (ember/nn/functional/loss.py, ember/nn/loss.py), against torch."""
import warnings

import numpy as np
import pytest
import torch

import ember
from helpers import NoGrad, check_op, raises_exactly
from .nn_helpers import check_module

TARGET = np.array([1, 0, 4, 2, 4, 3])
TARGET_IGNORED = np.array([1, -100, 4, 2, 7, 7])      # -100: the default ignore index; 7: an explicit one
TARGET_K = np.array([[[0, 2], [1, 1], [2, 0]], [[1, 0], [0, 2], [2, 2]]])   # (N=2, d1=3, d2=2), C=3


def _lce(**kw):
    return lambda L, x, w, t: L.nn.functional.linear_cross_entropy(x, w, t, **kw)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.2])
def test_values_and_gradients(reduction, label_smoothing):
    kw = dict(reduction=reduction, label_smoothing=label_smoothing)
    check_op(_lce(**kw), (6, 4), (5, 4), TARGET)
    check_op(lambda L, x, w, b, t: L.nn.functional.linear_cross_entropy(x, w, t, linear_bias=b, **kw),
             (6, 4), (5, 4), (5,), TARGET)
    check_op(lambda L, x, w, cw, t: L.nn.functional.linear_cross_entropy(x, w, t, weight=cw, **kw),
             (6, 4), (5, 4), NoGrad(np.array([0.5, 1.0, 2.0, 1.5, 0.25])), TARGET)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_ignore_index(reduction):
    check_op(_lce(reduction=reduction), (6, 4), (8, 4), TARGET_IGNORED)       # None: -100
    check_op(_lce(reduction=reduction, ignore_index=7), (6, 4), (8, 4), np.array([1, 0, 4, 2, 7, 7]))
    check_op(_lce(reduction=reduction, ignore_index=7, label_smoothing=0.1), (6, 4), (8, 4),
             np.array([1, 0, 4, 2, 7, 7]))


def test_unbatched_probabilities_and_empty_batch():
    check_op(_lce(), (4,), (5, 4), np.array(3))                                  # unbatched: a 0-d target
    check_op(_lce(reduction="none"), (4,), (5, 4), np.array(3))
    probs = np.random.default_rng(0).dirichlet(np.ones(5), size=6)              # (N, C) class probabilities
    check_op(lambda L, x, w, p: L.nn.functional.linear_cross_entropy(x, w, p, label_smoothing=0.1),
             (6, 4), (5, 4), NoGrad(probs))
    check_op(_lce(reduction="sum"), (0, 4), (5, 4), np.zeros(0, dtype=np.int64))
    check_op(_lce(reduction="none"), (0, 4), (5, 4), np.zeros(0, dtype=np.int64))


def test_k_dimensional_loss():
    check_op(_lce(), (2, 4), (3, 3, 2, 4), TARGET_K)
    check_op(lambda L, x, w, b, t: L.nn.functional.linear_cross_entropy(x, w, t, linear_bias=b, reduction="none"),
             (2, 4), (3, 3, 2, 4), (3, 3, 2), TARGET_K)


def test_options_compute_the_same_loss():
    # torch takes its chunked path here; Ember computes the reference way: the same values and gradients
    def fn(L, x, w, b, t):
        options = L.nn.LinearCrossEntropyOptions(batch_chunk_size=2, chunking_method=None)
        return L.nn.functional.linear_cross_entropy(x, w, t, linear_bias=b, options=options)
    check_op(fn, (6, 4), (5, 4), (5,), TARGET)


def test_options_ignored_warning_as_torchs():
    options_t, options_e = torch.nn.LinearCrossEntropyOptions(), ember.nn.LinearCrossEntropyOptions()
    with pytest.warns(UserWarning, match="options`` ignored"):
        torch.nn.functional.linear_cross_entropy(torch.ones(2, 3), torch.ones(4, 3), torch.tensor([0, 1]),
                                                 label_smoothing=0.1, options=options_t)
    with pytest.warns(UserWarning, match="linear_cross_entropy: ``options`` ignored; chunked path needs"):
        ember.nn.functional.linear_cross_entropy(ember.ones(2, 3), ember.ones(4, 3), ember.tensor([0, 1]),
                                                 label_smoothing=0.1, options=options_e)
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # a supported configuration: no warning in either
        ember.nn.functional.linear_cross_entropy(ember.ones(2, 3), ember.ones(4, 3), ember.tensor([0, 1]),
                                                 options=options_e)


@pytest.mark.parametrize("args,kw,message", [
    (((2, 3, 4), (5, 4), (2, 3)), {}, "linear_cross_entropy: expected input with dimensionality 1 or 2, got 3 "
                                      "(input (2, 3, 4) float32 cpu)"),
    (((2, 4), (4,), (2,)), {}, "linear_cross_entropy: expected linear_weight with dimensionality at least 2, got 1 "
                               "(linear_weight (4,) float32 cpu)"),
    (((2, 4), (5, 3), (2,)), {}, "linear_cross_entropy: expected equal input and linear_weight last dimensions "
                                 "(in_features), got 4 and 3, respectively"),
    (((2, 4), (5, 4), (2,)), {"linear_bias": (4,)}, "linear_cross_entropy: expected linear_bias shape (5,), got (4,)"),
    (((4,), (5, 2, 4), ()), {}, "linear_cross_entropy: K-dimensional loss defined by linear_weight shape (5, 2, 4) "
                                "requires batched input, (N, 4), got unbatched input with shape (4,)"),
    (((2, 4), (5, 4), (2, 5)), {"ignore_index": 1}, "linear_cross_entropy: ignore_index cannot be specified when "
                                                    "target contains probabilities"),
])
def test_errors(args, kw, message):
    def call(L):
        x, w, t = L.ones(*args[0]), L.ones(*args[1]), L.zeros(args[2], dtype=L.int64)
        if len(args[2]) == 2:
            t = t.float()
        kw2 = {k: L.ones(*v) if isinstance(v, tuple) else v for k, v in kw.items()}
        return L.nn.functional.linear_cross_entropy(x, w, t, **kw2)
    with pytest.raises(RuntimeError):
        call(torch)
    raises_exactly(lambda: call(ember), RuntimeError, message)


# ------------------------------------------------------------------ the module and its options
@pytest.mark.parametrize("kw", [{}, {"bias": True}, {"reduction": "sum", "label_smoothing": 0.1},
                                {"reduction": "none", "ignore_index": 2}])
def test_module(kw):
    check_module(lambda L: L.nn.LinearCrossEntropyLoss(4, 5, **kw), (6, 4), TARGET, modes=("train",),
                 return_buffers=False)


def test_module_k_dimensional_with_class_weights():
    cw = [0.5, 2.0, 1.0]
    check_module(lambda L: L.nn.LinearCrossEntropyLoss(4, 3, out_features=(3, 2), bias=True,
                                                       weight=L.tensor(cw)), (2, 4), TARGET_K, modes=("train",),
                 return_buffers=False)


def test_module_attributes_and_repr():
    t, e = torch.nn.LinearCrossEntropyLoss(4, 3, out_features=(2,)), ember.nn.LinearCrossEntropyLoss(4, 3, out_features=(2,))
    assert [(k, tuple(v.shape)) for k, v in e.named_parameters()] == \
        [(k, tuple(v.shape)) for k, v in t.named_parameters()]
    assert (e.num_classes, e.out_features, e.ignore_index, e.reduction) == \
        (t.num_classes, t.out_features, t.ignore_index, t.reduction)
    assert "in_features=4, num_classes=3, out_features=(2,), bias=False" in repr(e)


@pytest.mark.parametrize("kw,message", [
    ({"weight": (4,)}, "LinearCrossEntropyLoss: expected weight shape to be (3,), got (4,)"),
    ({"label_smoothing": 1.5}, "LinearCrossEntropyLoss: expected label_smoothing to be in range [0, 1], got 1.5"),
])
def test_module_errors(kw, message):
    def build(L):
        return L.nn.LinearCrossEntropyLoss(4, 3, **{k: L.ones(*v) if isinstance(v, tuple) else v
                                                    for k, v in kw.items()})
    with pytest.raises(RuntimeError):
        build(torch)
    raises_exactly(lambda: build(ember), RuntimeError, message)


def test_options_validation():
    e = ember.nn.LinearCrossEntropyOptions(allow_retain_graph=True, batch_chunk_size=8, chunking_method=None,
                                           acc_policy="accurate", acc_dtype=ember.float32)
    assert (e.allow_retain_graph, e.batch_chunk_size, e.chunking_method, e.acc_policy) == (True, 8, None, "accurate")
    assert ember.nn.LinearCrossEntropyOptions().chunking_method == torch.nn.LinearCrossEntropyOptions().chunking_method
    with pytest.raises(Exception):
        e.batch_chunk_size = 4   # frozen, as torch's
    for kw, message in [({"acc_policy": "fast"}, "invalid acc_policy: 'fast'"),
                        ({"chunking_method": "aspect_ratio:0"}, "invalid chunking_method: 'aspect_ratio:0'"),
                        ({"chunking_method": "rows"}, "invalid chunking_method: 'rows'"),
                        ({"batch_chunk_size": 0}, "batch_chunk_size must be positive int or None, got 0")]:
        with pytest.raises(ValueError, match=message):
            torch.nn.LinearCrossEntropyOptions(**kw)
        with pytest.raises(ValueError) as e:
            ember.nn.LinearCrossEntropyOptions(**kw)
        assert str(e.value) == f"LinearCrossEntropyOptions: {message}"
    with pytest.raises(ValueError, match="acc_dtype must be one of"):
        torch.nn.LinearCrossEntropyOptions(acc_dtype=torch.int64)
    with pytest.raises(ValueError, match="LinearCrossEntropyOptions: acc_dtype must be one of"):
        ember.nn.LinearCrossEntropyOptions(acc_dtype=ember.int64)


# ------------------------------------------------------------------ NLLLoss2d
def test_nll_loss_2d_is_a_deprecated_nll_loss():
    with pytest.warns(FutureWarning, match="NLLLoss2d"):
        torch.nn.NLLLoss2d()
    with pytest.warns(FutureWarning, match="NLLLoss2d: `NLLLoss2d` has been deprecated. Please use `NLLLoss`"):
        m = ember.nn.NLLLoss2d(ignore_index=1, reduction="sum")
    assert isinstance(m, ember.nn.NLLLoss) and (m.ignore_index, m.reduction) == (1, "sum")
    target = np.array([[[0, 1], [2, 1]], [[1, 1], [0, 2]]])   # (N, H, W) for input (N, C, H, W)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for kw in ({}, {"reduction": "none", "ignore_index": 2}):
            check_op(lambda L, x, t: L.nn.NLLLoss2d(**kw)(x.log_softmax(1), t), (2, 3, 2, 2), target)
