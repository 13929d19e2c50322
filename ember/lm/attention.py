"""What a Transformer layer attends to: its attention weights for an input, and a heatmap of them (the
lecture notes' translation figure, where each output word's row shows the input words it looked at).

    >>> maps = ember.lm.attention_maps(model, idx)          # {block index: (B, heads, T, T)}
    >>> ember.lm.plot_attention(maps[0][0], tokens, "attention.png")

It works with nanoGPT-style blocks (`transformer.h[i].ln_1` feeding `attn.c_attn`, causal) — Ember's
`ember.models.GPT` — and with `nn.MultiheadAttention` modules. The weights are recomputed from the layer's
own input and projections with plain Tensor ops, so the model's fast attention kernel is left as it is;
each row is softmax(q k^T / sqrt(head size)) over the positions the causal mask allows, and sums to 1.
"""
from __future__ import annotations

import math

import ember
from ember.nn import functional as F

__all__ = ["attention_maps", "plot_attention"]


def attention_maps(model, idx, layers=None) -> dict:
    """{block index: attention weights (B, n_head, T, T)} of a nanoGPT-style `model` run on `idx` (B, T).

    The input of each block's attention is captured with a forward hook on its `ln_1` during one forward
    pass in eval mode (no dropout); `layers` restricts the blocks (default: all)."""
    blocks = getattr(getattr(model, "transformer", None), "h", None)
    if blocks is None:
        raise TypeError(f"attention_maps: expected a GPT-style model with model.transformer.h blocks "
                        f"(ember.models.GPT), got {type(model).__name__}")
    chosen = range(len(blocks)) if layers is None else list(layers)
    inputs, handles = {}, []
    for i in chosen:
        if not 0 <= i < len(blocks):
            raise IndexError(f"attention_maps: the model has {len(blocks)} blocks, no block {i}")
        handles.append(blocks[i].ln_1.register_forward_hook(
            lambda mod, args, out, i=i: inputs.__setitem__(i, out.detach())))
    was_training = model.training
    model.eval()
    try:
        with ember.no_grad():
            model(idx)
            return {i: _causal_weights(blocks[i].attn, inputs[i]) for i in chosen}
    finally:
        for h in handles:
            h.remove()
        model.train(was_training)


def _causal_weights(attn, x):
    B, T, C = x.shape
    nh = attn.n_head
    q, k, _ = attn.c_attn(x).split(C, dim=2)
    q = q.view(B, T, nh, C // nh).transpose(1, 2)
    k = k.view(B, T, nh, C // nh).transpose(1, 2)
    scores = q @ k.transpose(-2, -1) / math.sqrt(C // nh)                # (B, nh, T, T)
    future = ember.ones(T, T, dtype=ember.bool, device=x.device).triu(1)
    return F.softmax(scores.masked_fill(future, -math.inf), dim=-1)


def plot_attention(weights, tokens, path, title="Attention weights", query_tokens=None) -> str:
    """Save a heatmap PNG of one (T, T) attention matrix (or (heads, T, T): one panel per head). Rows are
    the positions that attend (`query_tokens`, default `tokens`), columns the positions attended to."""
    from ember.scaling import _pyplot, _save_figure
    w = weights.detach().cpu()
    if w.ndim == 2:
        w = w.unsqueeze(0)
    if w.ndim != 3 or w.shape[-1] != len(tokens):
        raise ValueError(f"plot_attention: expected weights (T, T) or (heads, T, T) with T = {len(tokens)} "
                         f"tokens, got shape {tuple(weights.shape)}")
    rows = list(query_tokens) if query_tokens is not None else list(tokens)
    plt = _pyplot()
    heads = w.shape[0]
    size = max(3.0, 0.3 * len(tokens))
    fig, axes = plt.subplots(1, heads, figsize=(size * heads + 1, size), dpi=100, squeeze=False)
    shown = [repr(t)[1:-1] if isinstance(t, str) else str(t) for t in tokens]   # '\n' as \n
    shown_rows = [repr(t)[1:-1] if isinstance(t, str) else str(t) for t in rows]
    for h, ax in enumerate(axes[0]):
        im = ax.imshow(w[h].numpy(), cmap="viridis", vmin=0.0, vmax=1.0)
        ax.set_xticks(range(len(shown)), shown, fontsize=8)
        ax.set_yticks(range(len(shown_rows)), shown_rows, fontsize=8)
        ax.set_xlabel("attended to")
        if h == 0:
            ax.set_ylabel("attending")
        ax.set_title(f"head {h}" if heads > 1 else title)
    fig.colorbar(im, ax=list(axes[0]), shrink=0.8)
    if heads > 1:
        fig.suptitle(title)
    _save_figure(fig, path)
    plt.close(fig)
    return path
