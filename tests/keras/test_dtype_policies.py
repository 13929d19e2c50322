"""ember/keras/dtype_policies.py and the layers' dtypes: Keras 3's DTypePolicy ('float64', 'mixed_float16',
'mixed_bfloat16'), the global policy (keras.config / keras.mixed_precision), `layer.dtype`,
`compute_dtype`, `variable_dtype`; float64 layers against torch in float64, mixed-precision layers against
torch computing in the 16-bit type from float32 weights, BatchNormalization's float32 statistics, fit,
save / load_model and summary."""
import numpy as np
import pytest
import torch

import ember
from ember import keras
from ember.keras import dtype_policies, layers, models

from .test_layers_bidirectional import functional_call, torch_module, torch_params
from .test_layers_conv_rnn import n, run_both, t

RNG = np.random.default_rng(31)


# --- the policy objects ---------------------------------------------------------------------------------------

def test_policy_names_and_dtypes():
    for name, compute, variable in (("float32", "float32", "float32"), ("float64", "float64", "float64"),
                                    ("mixed_float16", "float16", "float32"), ("mixed_bfloat16", "bfloat16", "float32"),
                                    ("float16", "float16", "float16"), ("int32", "int32", "int32")):
        p = keras.DTypePolicy(name)
        assert (p.name, p.compute_dtype, p.variable_dtype, p.quantization_mode) == (name, compute, variable, None)
        assert p.get_config() == {"name": name} and keras.DTypePolicy.from_config(p.get_config()) == p
    p = keras.DTypePolicy("mixed_float16")
    assert repr(p) == '<DTypePolicy "mixed_float16">'
    assert p == keras.FloatDTypePolicy("mixed_float16") and p != keras.DTypePolicy("float16") and p != "mixed_float16"
    assert len({p, keras.DTypePolicy("mixed_float16")}) == 1
    assert keras.DTypePolicy().name == "float32"                            # None: the global policy's name
    assert keras.mixed_precision.Policy is keras.DTypePolicy
    with pytest.raises(TypeError, match=r"^'name' must be a string, such as 'mixed_float16'. Received: name=3 "
                                        r"\(of type <class 'int'>\)$"):
        keras.DTypePolicy(3)
    with pytest.raises(ValueError, match=r"^Cannot convert 'mixed_float64' to a mixed precision DTypePolicy. Valid "
                                         r"policies include 'mixed_float16', 'mixed_bfloat16', and the name of any "
                                         r"float dtype such as 'float32'.$"):
        keras.DTypePolicy("mixed_float64")


def test_get_serialize_and_deserialize():
    assert dtype_policies.get(None) == keras.DTypePolicy("float32")
    policy = keras.DTypePolicy("float64")
    assert dtype_policies.get(policy) is policy
    assert dtype_policies.get("mixed_bfloat16").compute_dtype == "bfloat16"
    assert dtype_policies.get(ember.float64).name == "float64"
    assert dtype_policies.get(np.dtype("float16")).name == "float16"
    assert dtype_policies.get(np.float64).name == "float64"
    double = dtype_policies.get("double")                                  # Keras's standardize_dtype aliases
    assert (double.name, double.compute_dtype) == ("double", "float64")
    ser = dtype_policies.serialize(keras.DTypePolicy("mixed_float16"))
    assert ser == {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "mixed_float16"},
                   "registered_name": None}
    assert dtype_policies.get(ser) == keras.DTypePolicy("mixed_float16")
    with pytest.raises(ValueError, match=r"^Cannot interpret `dtype` argument. Expected a string or an instance of "
                                         r"DTypePolicy. Received: identifier=1.5$"):
        dtype_policies.get(1.5)
    with pytest.raises(ValueError, match=r"^Unknown dtype policy: 'QuantizedDTypePolicy'"):
        dtype_policies.get({"class_name": "QuantizedDTypePolicy", "config": {"mode": "int8"}})


def test_global_policy_reaches_new_layers_and_clear_session_resets_it():
    assert keras.mixed_precision.global_policy() == keras.config.dtype_policy() == keras.DTypePolicy("float32")
    keras.mixed_precision.set_global_policy("mixed_float16")
    assert keras.config.dtype_policy().name == "mixed_float16"
    dense = layers.Dense(2)
    assert (dense.dtype_policy.name, dense.compute_dtype, dense.variable_dtype, dense.dtype) == \
        ("mixed_float16", "float16", "float32", "float32")
    assert layers.Dense(2, dtype="float64").dtype_policy.name == "float64"   # an explicit dtype wins
    keras.config.set_dtype_policy(keras.DTypePolicy("float64"))
    assert layers.LSTM(2).dtype == "float64" and dense.compute_dtype == "float16"   # made before: unchanged
    keras.clear_session()                                                   # Keras clears its global state
    assert layers.Dense(2).dtype_policy.name == "float32"
    with pytest.raises(ValueError, match=r"^Invalid `policy` argument. Expected the string name of a policy \(such "
                                         r"as 'mixed_float16'\) or a `DTypePolicy` instance. Received: policy=None"):
        keras.mixed_precision.set_global_policy(None)
    keras.mixed_precision.set_dtype_policy("bfloat16")
    assert layers.Dense(1).compute_dtype == "bfloat16"


def test_layer_dtype_argument_forms_and_setter():
    assert layers.Dense(2).dtype_policy == keras.DTypePolicy("float32")
    for dtype in ("float64", ember.float64, keras.DTypePolicy("float64"), {"class_name": "DTypePolicy",
                                                                           "config": {"name": "float64"}}):
        layer = layers.Conv1D(2, 3, dtype=dtype)
        assert (layer.dtype, layer.compute_dtype, layer.variable_dtype) == ("float64", "float64", "float64")
        assert layer.get_config()["dtype"] == "float64"
    layer = layers.Dense(2)
    layer.dtype_policy = "mixed_bfloat16"
    assert (layer.compute_dtype, layer.dtype) == ("bfloat16", "float32")
    with pytest.raises(ValueError, match=r"Cannot convert 'float65'"):
        layers.Dense(2, dtype="float65")


# --- float64 layers: every step in float64 (tolerances only float64 meets) ---------------------------------

def conv_ref(xt, kernel, bias):
    return torch.nn.functional.conv1d(xt.transpose(1, 2), kernel.permute(2, 1, 0), bias).transpose(1, 2)


@pytest.mark.parametrize("case", ["dense", "conv1d", "conv2d", "simple_rnn", "lstm", "gru", "bidirectional"])
def test_float64_layers_against_torch_in_float64(case):
    x = RNG.standard_normal((2, 5, 3))                                     # float64 data, read exactly
    if case == "dense":
        layer = layers.Dense(4, dtype="float64", bias_initializer="random_normal")
        ref = lambda xt, k, b: xt @ k + b                                      # noqa: E731
    elif case == "conv1d":
        layer = layers.Conv1D(4, 2, dtype="float64", bias_initializer="random_normal")
        ref = conv_ref
    elif case == "conv2d":
        x = RNG.standard_normal((2, 5, 4, 3))
        layer = layers.Conv2D(2, 2, dtype="float64", bias_initializer="random_normal")
        ref = lambda xt, k, b: torch.nn.functional.conv2d(xt.permute(0, 3, 1, 2), k.permute(3, 2, 0, 1),  # noqa
                                                          b).permute(0, 2, 3, 1)
    else:
        kind = {"simple_rnn": "SimpleRNN", "lstm": "LSTM", "gru": "GRU", "bidirectional": "GRU"}[case]
        inner = getattr(layers, kind)(3, return_sequences=True, bias_initializer="random_normal", dtype="float64")
        layer = layers.Bidirectional(inner, dtype="float64") if case == "bidirectional" else inner
        module = torch_module(kind, 3, 3, bidirectional=case == "bidirectional").double()

        def ref(xt, *w):
            params = torch_params(kind, w[:3])
            if case == "bidirectional":
                params.update(torch_params(kind, w[3:], "_reverse"))
            return functional_call(module, params, (xt,))[0]
    layer.build(x.shape)
    assert all(w.dtype == ember.float64 for w in layer.weights)
    (y,) = run_both(layer, x, ref, layer.weights, rtol=1e-11, atol=1e-12)
    assert y.dtype == ember.float64


def test_float64_initialisers_and_lstm_forget_bias():
    lstm = layers.LSTM(2, dtype="float64", bias_initializer="random_normal")
    lstm.build((None, 3, 4))
    assert lstm.bias.dtype == ember.float64 and np.all(lstm.bias.numpy()[2:4] == 1.0)
    rk = lstm.recurrent_kernel.numpy()
    np.testing.assert_allclose(rk @ rk.T, np.eye(2), atol=1e-12)          # orthogonal to float64 precision
    bn = layers.BatchNormalization(dtype="float64")
    y = bn(np.ones((2, 3)), training=True)
    assert y.dtype == ember.float64 and bn.moving_mean.dtype == ember.float64


# --- mixed precision: float32 weights, 16-bit computation ------------------------------------------------------

@pytest.mark.parametrize("policy, half", [("mixed_float16", torch.float16), ("mixed_bfloat16", torch.bfloat16)])
def test_mixed_dense_computes_in_16_bits_from_float32_weights(policy, half):
    x = RNG.standard_normal((4, 6)).astype(np.float32)
    dense = layers.Dense(5, dtype=policy, bias_initializer="random_normal")
    dense.build((4, 6))
    assert dense.kernel.dtype == ember.float32 and dense.bias.dtype == ember.float32
    xe = ember.tensor(x, requires_grad=True)
    y = dense(xe)
    assert y.dtype == getattr(ember, str(half).split(".")[1])
    kt, bt = (t(w.numpy()).requires_grad_() for w in dense.weights)
    want = t(x).to(half) @ kt.to(half) + bt.to(half)                          # torch: weights cast, 16-bit matmul
    np.testing.assert_array_equal(n(y.float()), want.float().detach().numpy())
    g = RNG.standard_normal((4, 5)).astype(np.float32)
    (y.float() * ember.tensor(g)).sum().backward()
    (want.float() * t(g)).sum().backward()
    assert dense.kernel.grad.dtype == ember.float32 and xe.grad.dtype == ember.float32
    tol = 1e-2 if half is torch.float16 else 5e-2
    np.testing.assert_allclose(n(dense.kernel.grad), kt.grad.numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(n(dense.bias.grad), bt.grad.numpy(), rtol=tol, atol=tol)
    # not a float32 computation: the 16-bit rounding shows
    assert not np.array_equal(n(y.float()), x @ dense.kernel.numpy() + dense.bias.numpy())


@pytest.mark.parametrize("make", [lambda: layers.Conv1D(3, 2, padding="causal", dtype="mixed_float16"),
                                  lambda: layers.LSTM(3, return_sequences=True, dtype="mixed_float16"),
                                  lambda: layers.Bidirectional(layers.GRU(2), dtype="mixed_float16"),
                                  lambda: layers.SimpleRNN(2, dtype="mixed_float16")])
def test_mixed_conv_and_rnn_layers_keep_float32_weights_and_return_float16(make):
    layer = make()
    x = RNG.standard_normal((2, 5, 3)).astype(np.float32)
    ref = make()
    ref.dtype_policy = "float32"
    y = layer(x)
    ref.build((2, 5, 3))
    ref.set_weights(layer.get_weights())
    assert y.dtype == ember.float16 and all(w.dtype == ember.float32 for w in layer.weights)
    np.testing.assert_allclose(n(y.float()), n(ref(x)), rtol=2e-2, atol=2e-2)
    (y.float() ** 2).sum().backward()
    assert all(w.grad is not None and w.grad.dtype == ember.float32 for w in layer.weights)
    assert layer(keras.Input((5, 3))).dtype == "float16"                   # symbolic outputs: the compute dtype


def test_bidirectional_returns_its_own_compute_dtype():
    # Keras casts both directions' outputs to the wrapper's compute dtype, whatever the wrapped layers compute in
    bi = layers.Bidirectional(layers.LSTM(2, dtype="float64", return_state=True))
    assert bi.forward_layer.dtype == "float64" and bi.compute_dtype == "float32"
    out, *states = bi(np.ones((1, 3, 2)))
    assert out.dtype == ember.float32 and all(s.dtype == ember.float64 for s in states)
    half = layers.Bidirectional(layers.GRU(2), merge_mode=None, dtype="mixed_float16")
    assert [y.dtype for y in half(np.ones((1, 3, 2)))] == [ember.float16, ember.float16]


def test_mixed_batch_normalization_keeps_float32_statistics():
    bn = layers.BatchNormalization(dtype="mixed_float16", momentum=0.5)
    x = (RNG.standard_normal((8, 3)) * 2 + 5).astype(np.float32)
    y = bn(x, training=True)
    assert y.dtype == ember.float16
    assert all(w.dtype == ember.float32 and not w.autocast for w in bn.weights)
    # the moving statistics are updated in place in float32 (not in a float16 copy that is thrown away)
    np.testing.assert_allclose(bn.moving_mean.numpy(), 0.5 * x.astype(np.float16).astype(np.float32).mean(0),
                               rtol=1e-6)
    np.testing.assert_allclose(n(y.float()), (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-3), atol=1e-2)


def test_inputs_are_cast_to_the_compute_dtype_but_integers_are_not():
    seen = []

    class Probe(layers.Layer):
        def call(self, x):
            seen.append(x.dtype)
            return x

    Probe(dtype="float64")(ember.ones(2, dtype=ember.float16))
    Probe(dtype="mixed_float16")(np.ones(2))
    Probe(dtype="float64")(np.arange(3))
    Probe(dtype="float64", autocast=False)(ember.ones(2))
    Probe()(np.ones(2, dtype=np.float64))
    assert seen == [ember.float64, ember.float16, ember.int64, ember.float32, ember.float32]
    x = np.array([[1 + 1e-12]])                                             # float64 data stays float64 exactly
    assert layers.Dense(1, dtype="float64", kernel_initializer="ones", use_bias=False)(x).detach().numpy()[0, 0] \
        == x[0, 0]
    emb = layers.Embedding(5, 2, dtype="mixed_float16")
    out = emb(np.array([[1, 4]]))
    assert out.dtype == ember.float16 and emb.embeddings.dtype == ember.float32


def test_add_weight_takes_the_variable_dtype_and_autocast():
    class Two(layers.Layer):
        def build(self, input_shape):
            self.a = self.add_weight(shape=(2,), initializer="ones", name="a")
            self.b = self.add_weight(shape=(2,), initializer="ones", name="b", autocast=False)
            self.c = self.add_weight(shape=(2,), initializer="ones", name="c", dtype="float64")

        def call(self, x):
            self.read = (self.a.dtype, self.b.dtype, self.c.dtype)
            return x * self.a

    two = Two(dtype="mixed_float16")
    assert two(np.ones((1, 2))).dtype == ember.float16
    assert [w.dtype for w in two.weights] == [ember.float32, ember.float32, ember.float64]
    assert two.read == (ember.float16, ember.float32, ember.float16)        # read in call: cast unless autocast=False
    assert two.a.dtype == ember.float32                                     # outside call: the variable itself
    assert Two(dtype="float64")(np.ones((1, 2))).dtype == ember.float64


# --- in models: fit, save / load_model, summary -------------------------------------------------------------

@pytest.mark.parametrize("policy", ["float64", "mixed_float16", "mixed_bfloat16"])
def test_models_under_a_global_policy_fit_save_and_load(policy, tmp_path):
    keras.mixed_precision.set_global_policy(policy)
    model = models.Sequential([keras.Input((6, 2)), layers.Conv1D(4, 3, padding="causal"),
                               layers.BatchNormalization(), layers.Bidirectional(layers.LSTM(3)),
                               layers.Dense(2, activation="softmax", dtype="float32")])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    x = RNG.standard_normal((16, 6, 2))
    y = RNG.integers(0, 2, 16)
    variable = "float64" if policy == "float64" else "float32"
    before = model.get_weights()
    hist = model.fit(x, y, epochs=2, batch_size=8, verbose=0)
    assert all(np.isfinite(v) for v in hist.history["loss"])
    assert [w.dtype.name for w in model.weights] == [variable] * 12 + ["float32"] * 2   # the head's own dtype
    assert all(not np.array_equal(a, b) for a, b in zip(before, model.get_weights()) if a.size > 1)
    assert model(x).dtype == ember.float32                                 # the float32 head
    assert model.layers[2](np.ones((1, 6, 4))).dtype.name == keras.DTypePolicy(policy).compute_dtype
    model.save(tmp_path / "m.keras")
    keras.clear_session()                                                   # a float32 session loads it
    again = models.load_model(tmp_path / "m.keras")
    assert [la.dtype_policy.name for la in again.layers] == [policy] * 3 + ["float32"]
    assert again.layers[2].forward_layer.dtype_policy.name == policy
    assert [w.dtype.name for w in again.weights] == [variable] * 12 + ["float32"] * 2
    for a, b in zip(model.get_weights(), again.get_weights()):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(again.predict(x, verbose=0), model.predict(x, verbose=0))


def test_summary_counts_float64_bytes(capsys):
    model = models.Sequential([keras.Input((3,)), layers.Dense(4, dtype="float64"), layers.Dense(2)])
    model.summary()
    out = capsys.readouterr().out
    assert " Total params: 26 (168.00 B)" in out                           # 16 float64 weights + 10 float32
