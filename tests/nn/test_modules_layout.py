"""ember.nn.modules: torch.nn.modules' submodule paths lead to Ember's classes (word_language_model's
safe_globals list, `from torch.nn.modules.utils import _pair`, isinstance checks on private bases)."""
import collections
import importlib
import subprocess
import sys

import pytest
import torch
import torch.nn.modules

import ember
import ember.nn as nn
import ember.nn.modules.utils as U

PATHS = ["activation.MultiheadAttention", "container.ModuleList", "dropout.Dropout", "linear.Linear",
         "linear.NonDynamicallyQuantizableLinear", "normalization.LayerNorm", "sparse.Embedding",
         "transformer.TransformerEncoder", "transformer.TransformerEncoderLayer", "rnn.GRU", "rnn.LSTM", "rnn.RNN",
         "batchnorm.BatchNorm2d", "batchnorm._BatchNorm", "instancenorm.InstanceNorm1d", "conv._ConvNd",
         "conv.Conv2d", "loss._Loss", "loss._WeightedLoss", "pooling._MaxPoolNd", "dropout._DropoutNd",
         "module.Module", "flatten.Flatten", "fold.Unfold", "channelshuffle.ChannelShuffle", "pixelshuffle.PixelShuffle",
         "padding.ReflectionPad2d", "upsampling.Upsample", "adaptive.AdaptiveLogSoftmaxWithLoss", "lazy.LazyModuleMixin",
         "distance.PairwiseDistance"]


@pytest.mark.parametrize("path", PATHS)
def test_torch_module_paths_name_the_same_classes(path):
    sub, name = path.split(".")
    assert hasattr(getattr(torch.nn.modules, sub), name)
    ours = getattr(getattr(nn.modules, sub), name)
    assert isinstance(ours, type)
    assert importlib.import_module(f"ember.nn.modules.{sub}") is getattr(nn.modules, sub)
    if hasattr(torch.nn, name):
        assert ours is getattr(nn, name) is getattr(nn.modules, name)


def test_every_layer_is_reexported_and_submodules_are_torchs():
    public = [n for n in dir(torch.nn.modules) if n[0].isupper()]
    assert [n for n in public if not hasattr(nn.modules, n)] == [n for n in public if not hasattr(nn, n)]
    assert set(nn.modules.SUBMODULES) <= set(dir(torch.nn.modules))
    assert type(nn.MultiheadAttention(4, 2).out_proj).__name__ == type(torch.nn.MultiheadAttention(4, 2).out_proj).__name__
    with pytest.raises(AttributeError, match="module 'ember.nn' has no attribute 'nope'"):
        nn.nope


def test_import_ember_nn_does_not_load_it():
    code = "import sys, ember, ember.nn; print('ember.nn.modules' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "False\n"


def test_utils_helpers_as_torchs():
    from torch.nn.modules import utils as T
    for fn in ("_single", "_pair", "_triple", "_quadruple"):
        for arg in (3, (1, 2), [4, 5, 6]):
            assert getattr(U, fn)(arg) == getattr(T, fn)(arg)
    assert U._ntuple(5, "five")(0) == T._ntuple(5, "five")(0) and U._ntuple(5, "five").__name__ == "five"
    assert U._reverse_repeat_tuple((1, 2, 3), 2) == T._reverse_repeat_tuple((1, 2, 3), 2)
    for out, defaults in ((4, (1, 2)), ([None, 3], (1, 2, 5, 6)), ((2, None), (1, 7, 8))):
        assert U._list_with_default(out, defaults) == T._list_with_default(out, defaults)
    with pytest.raises(ValueError, match="at least 3"):
        T._list_with_default([1, 2], (5, 6))
    with pytest.raises(ValueError, match="at least 3"):
        U._list_with_default([1, 2], (5, 6))


def test_consume_prefix_in_state_dict_as_torch():
    from torch.nn.modules.utils import consume_prefix_in_state_dict_if_present as theirs

    def wrapped(L):   # a DataParallel-style checkpoint: keys and _metadata under 'module.'
        model = L.nn.Sequential(L.nn.Linear(2, 2), L.nn.BatchNorm1d(2))
        holder = L.nn.Module()
        holder.module = model
        return holder.state_dict()

    ours, ref = wrapped(ember), wrapped(torch)
    U.consume_prefix_in_state_dict_if_present(ours, "module.")
    theirs(ref, "module.")
    assert list(ours) == list(ref)
    assert list(ours._metadata) == list(ref._metadata)
    plain = collections.OrderedDict(a=1, b=2)
    U.consume_prefix_in_state_dict_if_present(plain, "module.")
    assert plain == {"a": 1, "b": 2}
    nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2)).load_state_dict(ours)
