"""ember.lm.train (the `ember train-gpt` command): exact resume after a stop, the LR schedule, gradient
accumulation, sampling and the curve; ember.lm.attention: the weights are the ones the layer used."""
import math

import numpy as np
import pytest

import ember
from ember.lm.train import TrainConfig, Trainer

TINY = dict(block_size=16, n_layer=1, n_head=2, n_embd=16, batch_size=4, eval_interval=3, eval_iters=1,
            max_iters=6, warmup_iters=2, dropout=0.1)


def _quiet(*a, **k):
    pass


def test_a_stopped_and_resumed_run_gives_the_same_losses_as_an_uninterrupted_one(tmp_path):
    a = Trainer(TrainConfig(out_dir=str(tmp_path / "a"), **TINY), log=_quiet)
    a.run()
    b = Trainer(TrainConfig(out_dir=str(tmp_path / "b"), **TINY), log=_quiet)
    b.run(stop_after=3)                                  # killed after the checkpoint at iteration 3
    assert len(b.losses) == 3
    del b
    c = Trainer.resume(str(tmp_path / "b"), log=_quiet)
    assert c.iter == 3
    c.run()
    assert c.losses == a.losses                          # bit for bit: batches, dropout, AdamW state
    assert c.curve == a.curve | {"seconds": c.curve["seconds"]}
    for (k, p), q in zip(a.model.state_dict().items(), c.model.state_dict().values()):
        np.testing.assert_array_equal(p.numpy(), q.numpy(), err_msg=k)


def test_learning_rate_warms_up_then_decays_by_a_cosine():
    cfg = TrainConfig(learning_rate=1.0, min_lr=0.1, warmup_iters=10, max_iters=110)
    lrs = [cfg.lr_at(i) for i in range(120)]
    assert lrs[0] < lrs[5] < lrs[9] < 1.0
    assert lrs[10] == pytest.approx(1.0)
    assert lrs[60] == pytest.approx(0.55)                # half way: (1 + 0.1) / 2
    assert all(x >= y for x, y in zip(lrs[10:110], lrs[11:110]))
    assert lrs[115] == 0.1


def test_gradient_accumulation_averages_the_micro_batches(tmp_path, monkeypatch):
    grads = []
    for accum in (1, 2):
        t = Trainer(TrainConfig(out_dir=str(tmp_path), grad_accum=accum, grad_clip=0.0, **{**TINY, "dropout": 0.0}),
                    log=_quiet)
        ember.manual_seed(5)
        x, y = t.batch("train")
        monkeypatch.setattr(t, "batch", lambda split: (x, y))
        monkeypatch.setattr(t.opt, "zero_grad", lambda set_to_none=True: None)   # keep the gradients to look
        monkeypatch.setattr(t.opt, "step", lambda: None)
        t.step()
        grads.append([p.grad.numpy().copy() for p in t.model.parameters()])
    for g1, g2 in zip(*grads):
        np.testing.assert_allclose(g2, g1, rtol=1e-5, atol=1e-7)


def test_sampling_and_the_curve_png(tmp_path):
    t = Trainer(TrainConfig(out_dir=str(tmp_path), **TINY), log=_quiet)
    t.run()
    text = t.sample("ROMEO:", 20)
    assert text.startswith("ROMEO:") and len(text) == 26
    assert t.sample("ROMEO:", 20, temperature=1e-3, top_k=1) == t.sample("ROMEO:", 20, temperature=1e-3, top_k=1,
                                                                            use_cache=False)
    png = t.plot(str(tmp_path / "loss.png"))
    with open(png, "rb") as f:
        assert f.read(4) == b"\x89PNG"


def test_resume_without_a_checkpoint_says_what_to_do(tmp_path):
    with pytest.raises(FileNotFoundError, match="no checkpoint .*train first"):
        Trainer.resume(str(tmp_path / "none"))


def test_the_command_trains_and_samples(tmp_path, capsys):
    from ember import cli
    out = str(tmp_path / "run")
    args = ["train-gpt", "--out", out, "--max-iters", "3", "--eval-interval", "3", "--eval-iters", "1",
            "--n-layer", "1", "--n-embd", "16", "--n-head", "2", "--block-size", "16", "--batch-size", "2",
            "--tokens", "10"]
    assert cli.main(args) == 0
    printed = capsys.readouterr().out
    assert "best validation loss" in printed and "sample" in printed
    assert cli.main(["train-gpt", "--out", out, "--sample", "ROMEO:", "--tokens", "5"]) == 0
    assert capsys.readouterr().out.strip().startswith("ROMEO:")


def test_attention_maps_are_the_weights_the_layer_used(tmp_path):
    from ember.lm import attention_maps, plot_attention
    t = Trainer(TrainConfig(out_dir=str(tmp_path), **{**TINY, "dropout": 0.0}), log=_quiet)
    model = t.model.eval()
    idx = ember.tensor([t.vocab.encode("To be, or not")], dtype=ember.int64)
    maps = attention_maps(model, idx)
    w = maps[0]                                          # (1, heads, T, T)
    T = idx.shape[1]
    assert w.shape == (1, 2, T, T)
    np.testing.assert_allclose(w.sum(-1).numpy(), 1.0, rtol=1e-5)
    assert float(w[..., ember.ones(T, T, dtype=ember.bool).triu(1)].abs().max()) == 0.0   # causal
    # the layer's own output before c_proj is these weights times its values
    attn, seen = model.transformer.h[0].attn, {}
    h = attn.c_proj.register_forward_hook(lambda m, args, out: seen.setdefault("y", args[0]))
    with ember.no_grad():
        model(idx)
    h.remove()
    x = model.transformer.h[0].ln_1(model.transformer.wte(idx) + model.transformer.wpe(ember.arange(T)))
    v = attn.c_attn(x).split(16, dim=2)[2].view(1, T, 2, 8).transpose(1, 2)
    np.testing.assert_allclose((w @ v).transpose(1, 2).reshape(1, T, 16).detach().numpy(),
                               seen["y"].detach().numpy(), rtol=1e-4, atol=1e-6)
    pytest.importorskip("matplotlib")
    path = plot_attention(w[0, 0], list("To be, or not"), str(tmp_path / "attn.png"))
    with open(path, "rb") as f:
        assert f.read(4) == b"\x89PNG"
    with pytest.raises(ValueError, match="T = 3 tokens"):
        plot_attention(w[0, 0], list("abc"), str(tmp_path / "x.png"))
    with pytest.raises(IndexError, match="no block 5"):
        attention_maps(model, idx, layers=[5])


@pytest.mark.parametrize("accum", [1, 2])
def test_the_compiled_step_trains_exactly_as_eager(tmp_path, accum):
    """`compile=True` (`ember train-gpt --compile`): forward+backward per micro-batch and the update
    (clip, AdamW, zero_grad) as two compiled functions give the eager run's losses and weights bit for
    bit, dropout included; the gradients cross from one compiled call to the other in `.grad`."""
    import warnings
    runs = []
    for compiled in (False, True):
        cfg = TrainConfig(out_dir=str(tmp_path / str(compiled)), compile=compiled, grad_accum=accum,
                          **{**TINY, "max_iters": 5})
        t = Trainer(cfg, log=_quiet)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")     # retraces while the gradients and AdamW's state appear
            t.run()
        runs.append(t)
    eager, comp = runs
    assert comp.losses == eager.losses and len(comp.losses) == 5
    for (k, p), q in zip(eager.model.state_dict().items(), comp.model.state_dict().values()):
        np.testing.assert_array_equal(p.numpy(), q.numpy(), err_msg=k)
    assert comp._micro.cache_info()["hits"] >= 5 * accum - 4 and comp._update.cache_info()["hits"] >= 2
