"""ember/ops/functional_aliases.py: torch.* names of functional ops, called as torch calls them (ATen's
argument order, integer reductions), each compared with torch's own `torch.<name>` on the same inputs."""
import warnings

import numpy as np
import pytest
import torch

import ember
from helpers import NoGrad, check_op

rng = np.random.default_rng(0)
IDX = np.array([0, 2, 4, 5, 1, 2, 3], dtype=np.int64)
TARGET01 = NoGrad(rng.uniform(0, 1, (3, 4)))
SIGNS = NoGrad(np.array([1.0, -1.0, 1.0, -1.0, -1.0]))
POS_TARGET = NoGrad(rng.uniform(0.5, 3, (3, 4)))


def _rm(n):   # running stats: no gradient, compared after the call (training updates them in place)
    return NoGrad(rng.uniform(-0.5, 0.5, n)), NoGrad(rng.uniform(0.5, 1.5, n))


RM, RV = _rm(3)

# (name, fn(L, *inputs), inputs, check_op keywords): fn calls L.<name> with torch's argument order
CASES = [
    ("adaptive_avg_pool1d", lambda L, x: L.adaptive_avg_pool1d(x, 3), [(2, 3, 7)], {}),
    ("adaptive_max_pool1d", lambda L, x: L.adaptive_max_pool1d(x, 3), [(2, 3, 7)], {}),
    ("alpha_dropout", lambda L, x: L.alpha_dropout(x, 0.4, False), [(3, 4)], {}),
    ("alpha_dropout_", lambda L, x: L.alpha_dropout_(x * 1, 0.0, True), [(3, 4)], {}),
    ("avg_pool1d", lambda L, x: L.avg_pool1d(x, 3, 2, 1, True, False), [(2, 3, 8)], {}),
    ("avg_pool1d", lambda L, x: L.avg_pool1d(x, 2), [(2, 3, 8)], {}),
    ("batch_norm", lambda L, x, w, b, rm, rv: (L.batch_norm(x, w, b, rm, rv, True, 0.3, 1e-3, False), rm * 1, rv * 1),
     [(4, 3, 5), (3,), (3,), RM, RV], {}),
    ("batch_norm", lambda L, x, w, b, rm, rv: L.batch_norm(x, w, b, rm, rv, False, 0.1, 1e-5, True),
     [(4, 3), (3,), (3,), RM, RV], {}),
    ("bilinear", lambda L, a, b, w, c: L.bilinear(a, b, w, c), [(3, 4), (3, 5), (2, 4, 5), (2,)], {}),
    ("binary_cross_entropy_with_logits", lambda L, x, t, w, pw: L.binary_cross_entropy_with_logits(x, t, w, pw, 0),
     [(3, 4), TARGET01, NoGrad((4,)), NoGrad((4,))], {}),
    ("binary_cross_entropy_with_logits", lambda L, x, t: L.binary_cross_entropy_with_logits(x, t), [(3, 4), TARGET01],
     {}),
    ("celu", lambda L, x: L.celu(x, 0.7), [(3, 4)], {"grad_atol": 1e-8}),
    ("celu_", lambda L, x: L.celu_(x * 1, 0.7), [(3, 4)], {"grad_atol": 1e-8}),
    ("channel_shuffle", lambda L, x: L.channel_shuffle(x, 2), [(2, 4, 3)], {}),
    ("conv1d", lambda L, x, w, b: L.conv1d(x, w, b, 2, 1, 1, 2), [(2, 4, 9), (6, 2, 3), (6,)], {}),
    ("conv2d", lambda L, x, w, b: L.conv2d(x, w, b, 1, 1, 2), [(2, 3, 7, 6), (4, 3, 3, 3), (4,)], {}),
    ("conv2d", lambda L, x, w: L.conv2d(x, w, padding="same"), [(1, 2, 5, 5), (3, 2, 3, 3)], {}),
    ("conv3d", lambda L, x, w: L.conv3d(x, w, None, 2), [(1, 2, 5, 5, 5), (3, 2, 2, 2, 2)], {}),
    ("conv_transpose1d", lambda L, x, w, b: L.conv_transpose1d(x, w, b, 2, 1, 1, 1, 1), [(2, 3, 5), (3, 2, 3), (2,)],
     {}),
    ("conv_transpose2d", lambda L, x, w: L.conv_transpose2d(x, w, None, 2, 0, 0, 2, 1), [(1, 4, 3, 3), (4, 1, 2, 2)],
     {}),
    ("conv_transpose3d", lambda L, x, w: L.conv_transpose3d(x, w, None, 1, 0, 0, 1, 2), [(1, 2, 3, 3, 3),
                                                                                      (2, 2, 2, 2, 2)], {}),
    ("cosine_embedding_loss", lambda L, a, b, y: L.cosine_embedding_loss(a, b, y, 0.1, 2), [(5, 4), (5, 4), SIGNS],
     {}),
    ("cosine_embedding_loss", lambda L, a, b, y: L.cosine_embedding_loss(a, b, y), [(5, 4), (5, 4), SIGNS], {}),
    ("cosine_similarity", lambda L, a, b: L.cosine_similarity(a, b, 0, 1e-6), [(3, 4), (3, 4)], {}),
    ("dropout", lambda L, x: L.dropout(x, 0.5, False), [(3, 4)], {}),
    ("dropout_", lambda L, x: L.dropout_(x * 1, 0.0, True), [(3, 4)], {}),
    ("embedding", lambda L, w, i: L.embedding(w, i), [(6, 3), IDX], {}),
    ("embedding", lambda L, w, i: L.embedding(w, i, 2, True), [(6, 3), IDX], {}),
    ("embedding_bag", lambda L, w, i, o: L.embedding_bag(w, i, o), [(6, 3), IDX, np.array([0, 2, 2, 5])], {}),
    ("embedding_bag", lambda L, w, i, o: L.embedding_bag(w, i, o, False, 1, False, None, False, 2),
     [(6, 3), IDX, np.array([0, 2, 2, 5])], {}),
    ("embedding_bag", lambda L, w, i, o: L.embedding_bag(w, i, o, False, 2), [(6, 3), IDX, np.array([0, 2, 2, 5])],
     {}),
    ("embedding_bag", lambda L, w, i, o: L.embedding_bag(w, i, o, False, 2, False, None, True, 4),
     [(6, 3), IDX, np.array([0, 3, 3, 7])], {}),
    ("embedding_bag", lambda L, w, i, o, p: L.embedding_bag(w, i, o, False, 0, False, p, False, 2),
     [(6, 3), IDX, np.array([0, 2, 2, 5]), (7,)], {}),
    ("feature_alpha_dropout", lambda L, x: L.feature_alpha_dropout(x, 0.5, False), [(2, 3, 4)], {}),
    ("feature_alpha_dropout_", lambda L, x: L.feature_alpha_dropout_(x * 1, 0.0, True), [(2, 3, 4)], {}),
    ("group_norm", lambda L, x, w, b: L.group_norm(x, 2, w, b, 1e-3, True), [(2, 4, 5), (4,), (4,)], {}),
    ("group_norm", lambda L, x: L.group_norm(x, 2), [(2, 4, 5)], {}),
    ("hardshrink", lambda L, x: L.hardshrink(x, 0.6), [(3, 4)], {}),
    ("hinge_embedding_loss", lambda L, x, y: L.hinge_embedding_loss(x, y, 0.5, 0), [(5,), SIGNS], {}),
    ("instance_norm", lambda L, x, w, b, rm, rv: (L.instance_norm(x, w, b, rm, rv, True, 0.2, 1e-4, False),
                                                  rm * 1, rv * 1), [(2, 3, 6), (3,), (3,), RM, RV], {}),
    ("kl_div", lambda L, x, t: L.kl_div(x, t), [(3, 4), TARGET01], {}),
    ("kl_div", lambda L, x, t: L.kl_div(x, t, 1), [(3, 4), TARGET01], {}),
    ("hinge_embedding_loss", lambda L, x, y: L.hinge_embedding_loss(x, y), [(5,), SIGNS], {}),
    ("margin_ranking_loss", lambda L, a, b, y: L.margin_ranking_loss(a, b, y, 0.1, 1), [(5,), (5,), SIGNS], {}),
    ("kl_div", lambda L, x, t: L.kl_div(x, t, 2, log_target=True), [(3, 4), (3, 4)], {}),
    ("layer_norm", lambda L, x, w, b: L.layer_norm(x, (4,), w, b, 1e-3, False), [(3, 4), (4,), (4,)], {}),
    ("layer_norm", lambda L, x: L.layer_norm(x, [3, 4]), [(2, 3, 4)], {}),
    ("margin_ranking_loss", lambda L, a, b, y: L.margin_ranking_loss(a, b, y, 0.2, 0), [(5,), (5,), SIGNS], {}),
    ("max_pool1d", lambda L, x: L.max_pool1d(x, 3, 2, 1, 1, True), [(2, 3, 8)], {}),
    ("max_pool1d", lambda L, x: L.max_pool1d(x, 2), [(2, 3, 8)], {}),
    ("max_pool1d_with_indices", lambda L, x: L.max_pool1d_with_indices(x, 3, 1, 1, 2), [(2, 3, 8)], {}),
    ("max_pool2d", lambda L, x: L.max_pool2d(x, 2, 1, 1), [(1, 2, 5, 5)], {}),
    ("max_pool3d", lambda L, x: L.max_pool3d(x, 2), [(1, 2, 4, 4, 4)], {}),
    ("pairwise_distance", lambda L, a, b: L.pairwise_distance(a, b, 3.0, 1e-3, True), [(3, 4), (3, 4)], {}),
    ("pixel_shuffle", lambda L, x: L.pixel_shuffle(x, 2), [(1, 8, 2, 3)], {}),
    ("pixel_unshuffle", lambda L, x: L.pixel_unshuffle(x, 2), [(1, 2, 4, 6)], {}),
    ("poisson_nll_loss", lambda L, x, t: L.poisson_nll_loss(x, t, True, True, 1e-8, 2), [(3, 4), POS_TARGET], {}),
    ("poisson_nll_loss", lambda L, x, t: L.poisson_nll_loss(x, t, False, False, 1e-3, 1), [(3, 4), POS_TARGET],
     {"positive": True}),
    ("prelu", lambda L, x, w: L.prelu(x, w), [(2, 3, 4), (3,)], {}),
    ("relu_", lambda L, x: L.relu_(x * 1), [(3, 4)], {}),
    ("rms_norm", lambda L, x, w: L.rms_norm(x, (4,), w, 1e-3), [(3, 4), (4,)], {}),
    ("rrelu", lambda L, x: L.rrelu(x, 0.1, 0.3), [(3, 4)], {}),
    ("rrelu_", lambda L, x: L.rrelu_(x * 1, 0.2, 0.4, False), [(3, 4)], {}),
    ("selu", lambda L, x: L.selu(x), [(3, 4)], {}),
    ("selu_", lambda L, x: L.selu_(x * 1), [(3, 4)], {}),
    ("sigmoid_", lambda L, x: L.sigmoid_(x * 1), [(3, 4)], {}),
    ("tanh_", lambda L, x: L.tanh_(x * 1), [(3, 4)], {}),
    ("threshold", lambda L, x: L.threshold(x, 0.1, 2.0), [(3, 4)], {}),
    ("threshold_", lambda L, x: L.threshold_(x * 1, -0.1, 5.0), [(3, 4)], {}),
    ("triplet_margin_loss", lambda L, a, p, n: L.triplet_margin_loss(a, p, n, 0.5, 3.0, 1e-6, True, 0),
     [(4, 3), (4, 3), (4, 3)], {}),
    ("triplet_margin_loss", lambda L, a, p, n: L.triplet_margin_loss(a, p, n), [(4, 3), (4, 3), (4, 3)], {}),
]


def test_every_alias_has_a_case():
    assert sorted({c[0] for c in CASES}) == sorted(ember.ops.functional_aliases.__all__)


@pytest.mark.parametrize("name,fn,inputs,kw", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_alias_matches_torch(name, fn, inputs, kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_op(fn, *inputs, **kw)


@pytest.mark.parametrize("name,functional,inplace", [
    ("dropout", lambda x: ember.nn.functional.dropout(x, 0.5, True), False),
    ("dropout_", lambda x: ember.nn.functional.dropout(x, 0.5, True), True),
    ("alpha_dropout", lambda x: ember.nn.functional.alpha_dropout(x, 0.5, True), False),
    ("alpha_dropout_", lambda x: ember.nn.functional.alpha_dropout(x, 0.5, True), True),
    ("feature_alpha_dropout", lambda x: ember.nn.functional.feature_alpha_dropout(x, 0.5, True), False),
    ("feature_alpha_dropout_", lambda x: ember.nn.functional.feature_alpha_dropout(x, 0.5, True), True),
])
def test_dropout_aliases_in_training_draw_as_the_functional_op(name, functional, inplace):
    # random masks cannot be compared with torch's: the same seed gives F's mask (and dropout's 0 / 2x,
    # alpha_dropout's constant for dropped units, feature_alpha_dropout's whole channels differ from each other)
    x = ember.randn(4, 6, 5)
    ember.manual_seed(3)
    expected = functional(x)
    ember.manual_seed(3)
    y = x.clone()
    out = getattr(ember, name)(y, 0.5, True)
    assert (out is y) == inplace
    np.testing.assert_array_equal(out.numpy(), expected.numpy())
    assert not np.array_equal(out.numpy(), x.numpy())


def test_rrelu_draws_from_the_generator_given():
    x = ember.tensor(-np.ones(200))
    a = ember.rrelu(x, 0.1, 0.3, True, ember.Generator().manual_seed(5))
    b = ember.rrelu(x, 0.1, 0.3, True, ember.Generator().manual_seed(5))
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert ((-a.numpy() >= 0.1) & (-a.numpy() < 0.3)).all() and len(set(a.tolist())) > 100
    y = x.clone()
    assert ember.rrelu_(y, 0.1, 0.3, True, ember.Generator().manual_seed(5)) is y
    np.testing.assert_array_equal(y.numpy(), a.numpy())


def test_integer_reduction_and_bad_values():
    x, t = ember.randn(3), ember.rand(3)
    for r, name in ((0, "none"), (1, "mean"), (2, "sum")):
        np.testing.assert_allclose(ember.kl_div(x, t, r).numpy(),
                                   ember.nn.functional.kl_div(x, t, reduction=name).numpy())
    with pytest.raises(RuntimeError, match=r"kl_div: reduction must be 0 \('none'\), 1 \('mean'\) or 2 \('sum'\), "
                                           r"got 3"):
        ember.kl_div(x, t, 3)
    with pytest.raises(RuntimeError, match=r"embedding_bag: mode must be 0 \('sum'\), 1 \('mean'\) or 2 \('max'\), "
                                           r"got 5"):
        ember.embedding_bag(ember.randn(4, 2), ember.tensor([0, 1]), ember.tensor([0]), False, 5)


@pytest.mark.parametrize("call", [
    lambda L, x: L.batch_norm(x, None, None, None, None, True, 0.1),   # eps, cudnn_enabled missing
    lambda L, x: L.instance_norm(x, None, None, None, None, True, 0.1, 1e-5),
    lambda L, x: L.dropout(x, 0.5),                                     # train missing
    lambda L, x: L.poisson_nll_loss(x, x, True, False, 1e-8),           # reduction missing
])
def test_every_aten_argument_is_required_as_in_torch(call):
    for L, x in ((torch, torch.randn(2, 3)), (ember, ember.randn(2, 3))):
        with pytest.raises(TypeError):
            call(L, x)


def test_import_ember_does_not_load_nn():
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-c", "import sys, ember; ember.conv1d; print('ember.nn' in sys.modules)"],
                       capture_output=True, text=True)
    assert r.stdout.strip() == "False", r.stdout + r.stderr
