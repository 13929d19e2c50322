"""A GPT with nanoGPT's configuration, module and parameter names (Karpathy's `model.py`), plus a KV cache.

`GPTConfig` has nanoGPT's fields and defaults; a nanoGPT state dict saved as safetensors loads with
`model.load_state_dict(ember.load(path))` (the tied `lm_head.weight` / `transformer.wte.weight` pair may
both be present, as torch writes them). `generate` keeps nanoGPT's signature and sampling; it runs the
prompt once and then each new token alone against cached keys and values, so a token costs one
position's forward work (plus attention over the cache) instead of the whole context's. Once the
context outgrows `block_size` the window slides, the positions of every kept token change, and the
cache is refilled each step (which is what nanoGPT computes).

>>> model = GPT(GPTConfig(block_size=16, vocab_size=11, n_layer=2, n_head=2, n_embd=8))
>>> logits, loss = model(ember.zeros(1, 4, dtype=ember.int64), ember.zeros(1, 4, dtype=ember.int64))
>>> logits.shape, loss.shape
((1, 4, 11), ())
>>> model.generate(ember.zeros(1, 1, dtype=ember.int64), max_new_tokens=5).shape
(1, 6)
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import ember
from ember import nn
from ember.nn import functional as F

__all__ = ["GPTConfig", "GPT", "gpt"]


@dataclass
class GPTConfig:
    block_size: int = 1024
    vocab_size: int = 50304  # GPT-2's 50257 padded up to a multiple of 64
    n_layer: int = 12
    n_head: int = 12
    n_embd: int = 768
    dropout: float = 0.0
    bias: bool = True  # bias in Linears and LayerNorms, as GPT-2; False is a bit better and faster


class LayerNorm(nn.Module):
    """LayerNorm with an optional bias (nanoGPT's: torch's had no `bias=False` then)."""

    def __init__(self, ndim: int, bias: bool) -> None:
        super().__init__()
        self.weight = nn.Parameter(ember.ones(ndim))
        self.bias = nn.Parameter(ember.zeros(ndim)) if bias else None

    def forward(self, input):
        return F.layer_norm(input, self.weight.shape, self.weight, self.bias, 1e-5)


class _KVCache:
    """Keys and values of every layer for positions [0, pos), in buffers of `block_size` positions."""

    def __init__(self, config: GPTConfig, batch: int, dtype, device) -> None:
        hs = config.n_embd // config.n_head
        shape = (batch, config.n_head, config.block_size, hs)
        self.k = [ember.zeros(*shape, dtype=dtype, device=device) for _ in range(config.n_layer)]
        self.v = [ember.zeros(*shape, dtype=dtype, device=device) for _ in range(config.n_layer)]
        self.pos = 0


class CausalSelfAttention(nn.Module):
    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        if config.n_embd % config.n_head != 0:
            raise ValueError(f"GPT: n_embd={config.n_embd} is not a multiple of n_head={config.n_head}")
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)  # q, k, v for all heads
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.attn_dropout = nn.Dropout(config.dropout)
        self.resid_dropout = nn.Dropout(config.dropout)
        self.n_head = config.n_head
        self.n_embd = config.n_embd
        self.dropout = config.dropout

    def forward(self, x, cache: Optional[_KVCache] = None, layer: int = 0):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        p = self.dropout if self.training else 0.0
        if cache is None:
            y = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)
        else:
            pos = cache.pos
            cache.k[layer][:, :, pos:pos + T] = k
            cache.v[layer][:, :, pos:pos + T] = v
            k, v = cache.k[layer][:, :, :pos + T], cache.v[layer][:, :, :pos + T]  # (B, nh, pos+T, hs)
            if T == 1:      # the newest token sees everything cached
                y = F.scaled_dot_product_attention(q, k, v, dropout_p=p)
            elif pos == 0:  # the prompt
                y = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)
            else:           # query i sits at position pos + i
                rows = ember.arange(pos, pos + T, device=x.device).unsqueeze(1)
                mask = ember.arange(0, pos + T, device=x.device).unsqueeze(0) <= rows   # (T, pos+T)
                y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # re-assemble all head outputs side by side
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.ln_1 = LayerNorm(config.n_embd, bias=config.bias)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = LayerNorm(config.n_embd, bias=config.bias)
        self.mlp = MLP(config)

    def forward(self, x, cache: Optional[_KVCache] = None, layer: int = 0):
        x = x + self.attn(self.ln_1(x), cache, layer)
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        if config.vocab_size is None or config.block_size is None:
            raise ValueError("GPT: config.vocab_size and config.block_size must be set")
        self.config = config
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(config.vocab_size, config.n_embd),
            wpe=nn.Embedding(config.block_size, config.n_embd),
            drop=nn.Dropout(config.dropout),
            h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
            ln_f=LayerNorm(config.n_embd, bias=config.bias),
        ))
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # weight tying (Press & Wolf, 2017)
        self.apply(self._init_weights)
        for pn, p in self.named_parameters():  # GPT-2's scaled init of the residual projections
            if pn.endswith("c_proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    def get_num_params(self, non_embedding: bool = True) -> int:
        """Parameters, counting the tied weight once; without the position embeddings by default (nanoGPT)."""
        n = sum(p.numel() for p in self.parameters())
        if non_embedding:
            n -= self.transformer.wpe.weight.numel()
        return n

    @staticmethod
    def _init_weights(module) -> None:
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets=None):
        """Logits (B, T, vocab) and the cross-entropy loss for `targets` (-1 ignored); without targets,
        the logits of the last position only, (B, 1, vocab), and None (nanoGPT's inference shortcut)."""
        b, t = idx.shape
        if t > self.config.block_size:
            raise ValueError(f"GPT: cannot forward a sequence of length {t}, block size is only "
                             f"{self.config.block_size}")
        pos = ember.arange(0, t, dtype=ember.int64, device=idx.device)  # (t,)
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))  # (b, t, n_embd)
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        if targets is not None:
            logits = self.lm_head(x)
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        else:
            logits = self.lm_head(x[:, -1:, :])  # (b, 1, vocab)
            loss = None
        return logits, loss

    def _forward_cached(self, idx, cache: _KVCache):
        """Logits (B, 1, vocab) of the last of `idx`'s tokens, which sit at positions cache.pos onwards."""
        t = idx.shape[1]
        pos = ember.arange(cache.pos, cache.pos + t, dtype=ember.int64, device=idx.device)
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
        for i, block in enumerate(self.transformer.h):
            x = block(x, cache, i)
        cache.pos += t
        return self.lm_head(self.transformer.ln_f(x[:, -1:, :]))

    def crop_block_size(self, block_size: int) -> None:
        """Shrink the context (e.g. to fine-tune a checkpoint with a smaller one)."""
        if block_size > self.config.block_size:
            raise ValueError(f"GPT.crop_block_size: {block_size} > current block size {self.config.block_size}")
        self.config.block_size = block_size
        self.transformer.wpe.weight = nn.Parameter(self.transformer.wpe.weight.detach()[:block_size].clone())

    def configure_optimizers(self, weight_decay: float, learning_rate: float, betas, device_type: str = "cpu"):
        """AdamW with weight decay on the 2-D (matmul and embedding) weights only, as nanoGPT."""
        params = {pn: p for pn, p in self.named_parameters() if p.requires_grad}
        groups = [{"params": [p for p in params.values() if p.dim() >= 2], "weight_decay": weight_decay},
                  {"params": [p for p in params.values() if p.dim() < 2], "weight_decay": 0.0}]
        return ember.optim.AdamW(groups, lr=learning_rate, betas=betas)

    @ember.no_grad()
    def generate(self, idx, max_new_tokens: int, temperature: float = 1.0, top_k: Optional[int] = None,
                 use_cache: bool = True):
        """Append `max_new_tokens` tokens sampled one at a time to `idx` (B, T) and return it.

        `use_cache=False` runs the whole (cropped) context each step, as nanoGPT; both draw the same
        random numbers, so under one seed they give the same tokens up to float rounding of the logits.
        """
        bs = self.config.block_size
        cache: Optional[_KVCache] = None
        for _ in range(max_new_tokens):
            if not use_cache:
                logits, _ = self(idx if idx.shape[1] <= bs else idx[:, -bs:])
            elif cache is None or idx.shape[1] > bs:   # the prompt, or the window slid: (re)fill the cache
                cache = _KVCache(self.config, idx.shape[0], self.lm_head.weight.dtype, idx.device)
                logits = self._forward_cached(idx[:, -bs:], cache)
            else:
                logits = self._forward_cached(idx[:, -1:], cache)
            logits = logits[:, -1, :] / temperature                     # (B, vocab)
            if top_k is not None:
                v, _ = ember.topk(logits, min(top_k, logits.shape[-1]))
                logits = logits.masked_fill(logits < v[:, -1:], -float("inf"))
            probs = F.softmax(logits, dim=-1)
            idx_next = ember.multinomial(probs, num_samples=1)          # (B, 1)
            idx = ember.cat((idx, idx_next), dim=1)
        return idx


def gpt(*, weights=None, progress: bool = True, **kwargs) -> GPT:
    """A GPT from GPTConfig's fields as keyword arguments; `weights`: None or a local file."""
    from ember.models._weights import load_weights
    model = GPT(GPTConfig(**kwargs))
    load_weights(model, weights)
    return model
