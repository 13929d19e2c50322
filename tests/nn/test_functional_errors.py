"""ember/nn/functional: every error names the op and ends with the user's file:line; losses check the
target's dtype and device, and warn (as torch) where torch warns."""

import pytest

import ember
import ember.nn.functional as F
from helpers import raises_exactly

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


MESSAGES = {   # the message before ' (at file:line)', and the exception type
    'conv2d channels': (RuntimeError, 'conv2d: input (1, 3, 8, 8) has 3 channels but weight (4, 2, 3, 3) with groups=1 expects 2'),
    'conv2d weight dim': (ValueError, 'conv2d: expected a 4-D weight, got shape (4, 3, 3)'),
    'conv2d too small': (RuntimeError, 'conv2d: padded input size (2, 2) is smaller than the kernel size (3, 3) (dilated: (3, 3))'),
    'conv2d same strided': (ValueError, "conv2d: padding='same' is not supported for strided convolutions"),
    'conv2d bad padding': (ValueError, "conv: padding must be 'valid', 'same', an int or a tuple, got 'full'"),
    'conv2d stride tuple': (ValueError, 'stride must be an int or a tuple of 2 ints, got (1, 1, 1)'),
    'conv1d input dim': (ValueError, 'conv1d: expected a 3-D input, got shape (1, 1, 3, 8, 8)'),
    'conv_transpose2d channels': (RuntimeError, 'conv_transpose2d: input (1, 3, 4, 4) has 3 channels but weight (2, 3, 3, 3) expects 2'),
    'conv_transpose2d output_padding': (ValueError, 'conv_transpose2d: output_padding must be smaller than either stride or dilation'),
    'fold': (RuntimeError, 'fold: input.shape[1]=5 is not divisible by the kernel size 4'),
    'linear': (RuntimeError, "linear: input's last dim 3 != weight's in_features 5 (input (2, 3), weight (4, 5))"),
    'mse_loss reduction': (ValueError, "mse_loss: reduction must be 'mean', 'sum' or 'none', got 'avg'"),
    'mse_loss broadcast': (RuntimeError, 'mse_loss: target shape (4,) and input shape (4, 3) cannot be broadcast together'),
    'l1_loss broadcast': (RuntimeError, 'l1_loss: target shape (4,) and input shape (4, 3) cannot be broadcast together'),
    'bce shape': (ValueError, 'binary_cross_entropy: target shape (4,) differs from input shape (4, 1); they would broadcast silently and give a wrong loss. Reshape the target (e.g. target.view_as(input)).'),
    'bce range': (RuntimeError, 'binary_cross_entropy: all elements of input should be between 0 and 1'),
    'bce_logits shape': (ValueError, 'binary_cross_entropy_with_logits: target shape (4,) differs from input shape (4, 1); they would broadcast silently and give a wrong loss. Reshape the target (e.g. target.view_as(input)).'),
    'cross_entropy target shape': (ValueError, 'cross_entropy: expected target shape (4,) for input shape (4, 3), got (4, 1)'),
    'cross_entropy float target': (RuntimeError, "cross_entropy: expected a target of class indices (int64) of shape (4,) or of probabilities (float) of the input's shape (4, 3), got float32 of shape (4,) (class indices must be integers: use target.long())"),
    'cross_entropy out of bounds': (IndexError, 'nll_loss: target 3 is out of bounds for 3 classes'),
    'cross_entropy smoothing': (ValueError, 'cross_entropy: label_smoothing must be in [0, 1], got 2.0'),
    'nll_loss float target': (RuntimeError, 'nll_loss: expected an integer class-index target of shape (4,), got float32 of shape (4,) (use target.long())'),
    'multi_margin_loss p': (ValueError, 'multi_margin_loss: only p == 1 and p == 2 supported, got 3'),
    'cosine_embedding_loss': (ValueError, 'cosine_embedding_loss: input shapes (4, 3) and (4, 2) differ'),
    'triplet_margin_loss': (ValueError, 'triplet_margin_loss: anchor (4, 3), positive (4, 3) and negative (4, 2) must have one shape'),
    'max_pool2d padding': (ValueError, 'max_pool2d: pad should be at most half of effective kernel size, got padding=(2, 2), kernel_size=(2, 2)'),
    'max_pool2d too small': (RuntimeError, 'max_pool2d: input (1, 1, 1, 1) is too small for kernel (3, 3), padding (0, 0)'),
    'avg_pool2d dim': (ValueError, 'avg_pool2d: expected a 4-D input, got shape (8,)'),
    'batch_norm dim': (ValueError, 'batch_norm: expected at least 2-D input (N, C, ...), got (3,)'),
    'batch_norm one value': (ValueError, 'Expected more than 1 value per channel when training, got input size (1, 3)'),
    'layer_norm shape': (RuntimeError, 'layer_norm: expected input with trailing shape (4,), got (2, 3)'),
    'group_norm groups': (RuntimeError, 'group_norm: 6 channels are not divisible into 4 groups'),
    'embedding float index': (RuntimeError, 'embedding: expected an integer index tensor, got float32'),
    'embedding range': (IndexError, 'embedding: index out of range: indices must be in [0, 5), got [7, 7]'),
    'embedding sparse': (NotImplementedError, 'embedding: sparse gradients are not supported'),
    'one_hot float': (RuntimeError, 'one_hot is only applicable to index tensor'),
    'one_hot range': (RuntimeError, 'one_hot: class values must be in [0, 2), got [3, 3]'),
    'dropout p': (ValueError, 'dropout: probability has to be between 0 and 1, but got 1.5'),
    'dropout1d dim': (RuntimeError, 'dropout1d: Expected 2D or 3D input, but received a 4D input (shape (3, 3, 3, 3)). Note that dropout1d exists to provide channel-wise dropout on inputs with 1 spatial dimension, a channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs).'),
    'gelu approximate': (ValueError, "gelu: approximate must be 'none' or 'tanh', got 'fast'"),
    'softmax int': (RuntimeError, 'softmax: expected a floating point input, got int64; pass dtype= or call .float() first'),
    'sdpa mask and causal': (ValueError, 'scaled_dot_product_attention: pass either attn_mask or is_causal, not both'),
    'pad odd': (ValueError, 'pad: padding length must be divisible by 2, got 1'),
    'pad mode': (NotImplementedError, "pad: mode 'wrap' is not supported (constant, reflect, replicate, circular)"),
    'pad reflect': (ValueError, 'pad: reflect padding (3, 3) must be smaller than the dim size 3'),
    'interpolate both': (ValueError, 'interpolate: give exactly one of size and scale_factor'),
    'interpolate align_corners': (ValueError, 'align_corners option can only be set with the interpolating modes: linear | bilinear | bicubic | trilinear'),
    'interpolate mode': (NotImplementedError, "interpolate: mode 'cubic' is not supported (nearest, nearest-exact, area, linear, bilinear, bicubic, trilinear)"),
}


@pytest.mark.parametrize("name", [c[0] for c in CASES])
def test_error_type_and_message(name):
    """The exact type and text of each error (the location is test_error_ends_with_user_line's: under
    mutmut a trampoline frame stands where the user's line is, so this test leaves the location out)."""
    fn = dict(CASES)[name]
    exc, message = MESSAGES[name]
    raises_exactly(fn, exc, message)
