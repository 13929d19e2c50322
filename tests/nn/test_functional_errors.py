"""ember/nn/functional: every error names the op and ends with the user's file:line; losses check the
target's dtype and device, and warn (as torch) where torch warns."""
import re

import pytest

import ember
import ember.nn.functional as F

z = ember.zeros
i64 = ember.int64

# one bad call per error of the functional modules; each lambda's own line is the user's line
CASES = [
    ("conv2d channels", lambda: F.conv2d(z(1, 3, 8, 8), z(4, 2, 3, 3))),
    ("conv2d weight dim", lambda: F.conv2d(z(1, 3, 8, 8), z(4, 3, 3))),
    ("conv2d too small", lambda: F.conv2d(z(1, 3, 2, 2), z(4, 3, 3, 3))),
    ("conv2d same strided", lambda: F.conv2d(z(1, 3, 8, 8), z(4, 3, 3, 3), stride=2, padding="same")),
    ("conv2d bad padding", lambda: F.conv2d(z(1, 3, 8, 8), z(4, 3, 3, 3), padding="full")),
    ("conv2d stride tuple", lambda: F.conv2d(z(1, 3, 8, 8), z(4, 3, 3, 3), stride=(1, 1, 1))),
    ("conv1d input dim", lambda: F.conv1d(z(1, 1, 3, 8, 8), z(4, 1, 3))),
    ("conv_transpose2d channels", lambda: F.conv_transpose2d(z(1, 3, 4, 4), z(2, 3, 3, 3))),
    ("conv_transpose2d output_padding", lambda: F.conv_transpose2d(z(1, 3, 4, 4), z(3, 2, 3, 3), output_padding=1)),
    ("fold", lambda: F.fold(z(1, 5, 4), (3, 3), 2)),
    ("linear", lambda: F.linear(z(2, 3), z(4, 5))),
    ("mse_loss reduction", lambda: F.mse_loss(z(2), z(2), reduction="avg")),
    ("mse_loss broadcast", lambda: F.mse_loss(z(4, 3), z(4))),
    ("l1_loss broadcast", lambda: F.l1_loss(z(4, 3), z(4))),
    ("bce shape", lambda: F.binary_cross_entropy(z(4, 1), z(4))),
    ("bce range", lambda: F.binary_cross_entropy(ember.tensor([1.5]), ember.tensor([1.0]))),
    ("bce_logits shape", lambda: F.binary_cross_entropy_with_logits(z(4, 1), z(4))),
    ("cross_entropy target shape", lambda: F.cross_entropy(z(4, 3), z(4, 1, dtype=i64))),
    ("cross_entropy float target", lambda: F.cross_entropy(z(4, 3), z(4))),
    ("cross_entropy out of bounds", lambda: F.cross_entropy(z(2, 3), ember.tensor([0, 3]))),
    ("cross_entropy smoothing", lambda: F.cross_entropy(z(2, 3), z(2, dtype=i64), label_smoothing=2.0)),
    ("nll_loss float target", lambda: F.nll_loss(z(4, 3), z(4))),
    ("multi_margin_loss p", lambda: F.multi_margin_loss(z(4, 3), z(4, dtype=i64), p=3)),
    ("cosine_embedding_loss", lambda: F.cosine_embedding_loss(z(4, 3), z(4, 2), z(4))),
    ("triplet_margin_loss", lambda: F.triplet_margin_loss(z(4, 3), z(4, 3), z(4, 2))),
    ("max_pool2d padding", lambda: F.max_pool2d(z(1, 1, 8, 8), 2, padding=2)),
    ("max_pool2d too small", lambda: F.max_pool2d(z(1, 1, 1, 1), 3)),
    ("avg_pool2d dim", lambda: F.avg_pool2d(z(8), 2)),
    ("batch_norm dim", lambda: F.batch_norm(z(3), None, None, training=True)),
    ("batch_norm one value", lambda: F.batch_norm(z(1, 3), None, None, training=True)),
    ("layer_norm shape", lambda: F.layer_norm(z(2, 3), (4,))),
    ("group_norm groups", lambda: F.group_norm(z(2, 6, 4), 4)),
    ("embedding float index", lambda: F.embedding(z(3), z(5, 2))),
    ("embedding range", lambda: F.embedding(ember.tensor([7]), z(5, 2))),
    ("embedding sparse", lambda: F.embedding(ember.tensor([1]), z(5, 2), sparse=True)),
    ("one_hot float", lambda: F.one_hot(z(3))),
    ("one_hot range", lambda: F.one_hot(ember.tensor([3]), 2)),
    ("dropout p", lambda: F.dropout(z(3), p=1.5)),
    ("dropout1d dim", lambda: F.dropout1d(z(3, 3, 3, 3))),   # dropout2d warns on other ranks, as torch
    ("gelu approximate", lambda: F.gelu(z(3), approximate="fast")),
    ("softmax int", lambda: F.softmax(z(3, dtype=i64), 0)),
    ("sdpa mask and causal", lambda: F.scaled_dot_product_attention(z(1, 2, 4), z(1, 2, 4), z(1, 2, 4),
                                                                    attn_mask=z(2, 2), is_causal=True)),
    ("pad odd", lambda: F.pad(z(2, 3), (1,))),
    ("pad mode", lambda: F.pad(z(1, 2, 3), (1, 1), mode="wrap")),
    ("pad reflect", lambda: F.pad(z(1, 2, 3), (3, 3), mode="reflect")),
    ("interpolate both", lambda: F.interpolate(z(1, 1, 4), size=8, scale_factor=2)),
    ("interpolate align_corners", lambda: F.interpolate(z(1, 1, 4), size=8, align_corners=True)),
    ("interpolate mode", lambda: F.interpolate(z(1, 1, 4), size=8, mode="cubic")),
]


@pytest.mark.parametrize("fn", [c[1] for c in CASES], ids=[c[0] for c in CASES])
def test_error_ends_with_user_line(fn):
    where = f"(at test_functional_errors.py:{fn.__code__.co_firstlineno})"
    with pytest.raises((RuntimeError, ValueError, IndexError, TypeError)) as e:
        fn()
    assert str(e.value).endswith(where), str(e.value)


nn = ember.nn
# forward-time errors of the layer modules, which the user reaches through model(x)
MODULE_CASES = [
    ("Conv2d", lambda: nn.Conv2d(3, 4, 3)(z(1, 2, 8, 8))),
    ("Linear", lambda: nn.Linear(3, 4)(z(2, 5))),
    ("LSTM input size", lambda: nn.LSTM(3, 4)(z(5, 2, 6))),
    ("GRU input dim", lambda: nn.GRU(3, 4)(z(5))),
    ("RNN hidden", lambda: nn.RNN(3, 4)(z(5, 2, 3), z(1, 3, 4))),
    ("GRUCell dim", lambda: nn.GRUCell(3, 4)(z(1, 2, 3))),
    ("BatchNorm2d dim", lambda: nn.BatchNorm2d(3)(z(2, 3))),
    ("MultiheadAttention dim", lambda: nn.MultiheadAttention(8, 2)(z(4, 1, 6), z(4, 1, 6), z(4, 1, 6))),
    ("Transformer d_model", lambda: nn.Transformer(8, 2, 1, 1, 16)(z(4, 1, 8), z(4, 1, 6))),
    ("CrossEntropyLoss", lambda: nn.CrossEntropyLoss()(z(4, 3), z(4))),
]


@pytest.mark.parametrize("fn", [c[1] for c in MODULE_CASES], ids=[c[0] for c in MODULE_CASES])
def test_module_forward_error_ends_with_user_line(fn):
    where = f"(at test_functional_errors.py:{fn.__code__.co_firstlineno})"
    with pytest.raises((RuntimeError, ValueError, IndexError, AssertionError)) as e:
        fn()
    assert str(e.value).endswith(where), str(e.value)
