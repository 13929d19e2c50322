"""ember.models.GPT against a nanoGPT-shaped torch module (nanoGPT's model.py, written out here):
same names, outputs, loss and gradients; KV-cached generation equals nanoGPT's uncached loop; causal
masking is exact."""
import math

import numpy as np
import pytest
import torch
import torch.nn as tnn
import torch.nn.functional as TF

import ember
from ember.models import GPT, GPTConfig
from tests.models._oracle import save_torch_state


class TLayerNorm(tnn.Module):
    def __init__(self, ndim, bias):
        super().__init__()
        self.weight = tnn.Parameter(torch.ones(ndim))
        self.bias = tnn.Parameter(torch.zeros(ndim)) if bias else None

    def forward(self, input):
        return TF.layer_norm(input, self.weight.shape, self.weight, self.bias, 1e-5)


class TCausalSelfAttention(tnn.Module):
    def __init__(self, config):
        super().__init__()
        self.c_attn = tnn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = tnn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.attn_dropout = tnn.Dropout(config.dropout)
        self.resid_dropout = tnn.Dropout(config.dropout)
        self.n_head, self.n_embd, self.dropout = config.n_head, config.n_embd, config.dropout

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        y = TF.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=0, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class TMLP(tnn.Module):
    def __init__(self, config):
        super().__init__()
        self.c_fc = tnn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.gelu = tnn.GELU()
        self.c_proj = tnn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = tnn.Dropout(config.dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class TBlock(tnn.Module):
    def __init__(self, config):
        super().__init__()
        self.ln_1 = TLayerNorm(config.n_embd, bias=config.bias)
        self.attn = TCausalSelfAttention(config)
        self.ln_2 = TLayerNorm(config.n_embd, bias=config.bias)
        self.mlp = TMLP(config)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class TGPT(tnn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.transformer = tnn.ModuleDict(dict(
            wte=tnn.Embedding(config.vocab_size, config.n_embd), wpe=tnn.Embedding(config.block_size, config.n_embd),
            drop=tnn.Dropout(config.dropout), h=tnn.ModuleList([TBlock(config) for _ in range(config.n_layer)]),
            ln_f=TLayerNorm(config.n_embd, bias=config.bias)))
        self.lm_head = tnn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight
        self.apply(self._init_weights)
        for pn, p in self.named_parameters():
            if pn.endswith("c_proj.weight"):
                tnn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    def _init_weights(self, module):
        if isinstance(module, tnn.Linear):
            tnn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                tnn.init.zeros_(module.bias)
        elif isinstance(module, tnn.Embedding):
            tnn.init.normal_(module.weight, mean=0.0, std=0.02)

    def get_num_params(self, non_embedding=True):
        n = sum(p.numel() for p in self.parameters())
        return n - self.transformer.wpe.weight.numel() if non_embedding else n

    def forward(self, idx, targets=None):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long)
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        if targets is not None:
            logits = self.lm_head(x)
            loss = TF.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        else:
            logits, loss = self.lm_head(x[:, [-1], :]), None
        return logits, loss


def _pair(tmp_path, bias=True, **kw):
    cfg = dict(block_size=16, vocab_size=23, n_layer=2, n_head=4, n_embd=32, dropout=0.0, bias=bias)
    cfg.update(kw)
    torch.manual_seed(0)
    ref = TGPT(GPTConfig(**cfg)).double()
    with torch.no_grad():     # nanoGPT initialises biases and LayerNorms trivially: make them count
        for n, p in ref.named_parameters():
            if n.endswith("bias") or "ln_" in n:
                p.add_(0.1 * torch.randn_like(p))
    save_torch_state(ref, tmp_path / "gpt.safetensors")
    model = GPT(GPTConfig(**cfg)).double()
    model.load_state_dict(ember.load(tmp_path / "gpt.safetensors"))
    return ref, model


@pytest.mark.parametrize("bias", [True, False])
def test_names_outputs_loss_and_gradients_match_nanogpt(tmp_path, bias):
    ref, model = _pair(tmp_path, bias)
    assert {k: tuple(v.shape) for k, v in model.state_dict().items()} == \
        {k: tuple(v.shape) for k, v in ref.state_dict().items()}
    assert model.transformer.wte.weight is model.lm_head.weight
    assert model.get_num_params() == ref.get_num_params()
    assert model.get_num_params(False) == ref.get_num_params(False)
    rs = np.random.RandomState(0)
    idx, targets = rs.randint(0, 23, (3, 16)), rs.randint(0, 23, (3, 16))
    targets[0, :4] = -1                                                   # nanoGPT's ignore_index
    lt, losst = ref(torch.from_numpy(idx), torch.from_numpy(targets))
    le, losse = model(ember.tensor(idx), ember.tensor(targets))
    np.testing.assert_allclose(le.detach().numpy(), lt.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(losse.item(), losst.item(), rtol=1e-12)
    losst.backward()
    losse.backward()
    tgrads = dict(ref.named_parameters())
    for n, p in model.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), tgrads[n].grad.numpy(), rtol=1e-8, atol=1e-12, err_msg=n)
    with ember.no_grad():
        last, none = model(ember.tensor(idx[:, :5]))
    assert none is None and last.shape == (3, 1, 23)
    np.testing.assert_allclose(last.numpy(), ref(torch.from_numpy(idx[:, :5]))[0].detach().numpy(), rtol=1e-10,
                               atol=1e-12)


def _sample(model, prompt, n, seed, **kw):
    ember.manual_seed(seed)
    return model.generate(ember.tensor(prompt), n, **kw).numpy()


@pytest.mark.parametrize("kw", [{}, {"temperature": 0.7, "top_k": 5}])
def test_cached_generation_equals_uncached(tmp_path, kw):
    _, model = _pair(tmp_path)
    model.eval()
    prompt = np.random.RandomState(1).randint(0, 23, (2, 5))
    # 20 new tokens: past block_size (16), where the window slides and the cache is refilled each step
    cached = _sample(model, prompt, 20, seed=3, **kw)
    uncached = _sample(model, prompt, 20, seed=3, use_cache=False, **kw)
    assert cached.shape == (2, 25)
    np.testing.assert_array_equal(cached, uncached)
    assert not np.array_equal(cached, _sample(model, prompt, 20, seed=4, **kw))   # the seed matters


def test_cached_logits_equal_full_forward(tmp_path):
    """Token by token through the cache gives the full forward's logits at every position."""
    _, model = _pair(tmp_path)
    model.eval()
    idx = ember.tensor(np.random.RandomState(2).randint(0, 23, (2, 12)))
    from ember.models.gpt import _KVCache
    with ember.no_grad():
        full, _ = model(idx, ember.zeros(2, 12, dtype=ember.int64))       # (2, 12, V): every position
        cache = _KVCache(model.config, 2, ember.float64, idx.device)
        steps = [model._forward_cached(idx[:, :4], cache)]              # a prompt, then a 3-token chunk,
        steps.append(model._forward_cached(idx[:, 4:7], cache))         # then one token at a time
        steps += [model._forward_cached(idx[:, t:t + 1], cache) for t in range(7, 12)]
    ends = [3, 6] + list(range(7, 12))
    for logits, t in zip(steps, ends):
        np.testing.assert_allclose(logits.numpy()[:, 0], full.numpy()[:, t], rtol=1e-10, atol=1e-12)


def test_each_new_token_is_one_position_of_work(tmp_path):
    """After the prompt, every forward the cache runs sees a single position (O(1) per token) until the
    context fills the block; then the window slides and nanoGPT's full recompute is the only exact option."""
    _, model = _pair(tmp_path)
    model.eval()
    seen = []
    model.transformer.h[0].attn.c_attn.register_forward_hook(lambda m, inp, out: seen.append(inp[0].shape[1]))
    model.generate(ember.zeros(1, 6, dtype=ember.int64), 10)
    assert seen == [6] + [1] * 9
    seen.clear()
    model.generate(ember.zeros(1, 6, dtype=ember.int64), 10, use_cache=False)
    assert seen == list(range(6, 16))


def test_causal_mask_is_exact(tmp_path):
    """d output[t] / d input[s] is exactly zero for s > t (and not for s <= t)."""
    _, model = _pair(tmp_path)
    model.eval()
    x = ember.tensor(np.random.RandomState(0).randn(2, 10, 32), requires_grad=True)
    h = x
    for block in model.transformer.h:
        h = block(h)
    logits = model.lm_head(model.transformer.ln_f(h))                    # (2, 10, V)
    for t in (0, 4):
        (g,) = ember.autograd.grad(logits[:, t].sum(), [x], retain_graph=True)
        g = g.numpy()
        assert (g[:, t + 1:] == 0).all()
        assert (np.abs(g[:, :t + 1]).sum(axis=(0, 2)) > 0).all()


def test_forward_rejects_too_long_sequences():
    model = GPT(GPTConfig(block_size=4, vocab_size=7, n_layer=1, n_head=1, n_embd=4))
    with pytest.raises(ValueError, match="length 5, block size is only 4"):
        model(ember.zeros(1, 5, dtype=ember.int64))
