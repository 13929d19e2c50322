"""Pretrained-weight entries (torchvision's URLs and checksums), the download path (offline: fails at once
with a message saying what to do; a file:// URL stands in for the network), and the torch .pth reader."""
import hashlib
import pickle
import socket

import numpy as np
import pytest
import torch

import ember
from ember.models import Weights, WeightsEnum, load_weights
from ember._torch_file import UnsupportedTorchFile, load_torch_file
from tests.models._oracle import tvm

WITH_WEIGHTS = ["alexnet", "vgg11", "vgg11_bn", "vgg13", "vgg13_bn", "vgg16", "vgg16_bn", "vgg19", "vgg19_bn",
                "resnet18", "resnet34", "resnet50", "resnet101", "mobilenet_v2"]


@pytest.mark.parametrize("name", WITH_WEIGHTS)
def test_entries_keep_torchvision_urls_and_checksums(name):
    ours, theirs = ember.models.get_model_weights(name), tvm.get_model_weights(name)
    ours_entries = {n: e.url for n, e in ours.__members__.items()}
    theirs_entries = {n: e.url for n, e in theirs.__members__.items() if n in ours.__members__}
    assert ours_entries == theirs_entries and ours.DEFAULT.url == theirs.DEFAULT.url
    for entry in ours:
        assert entry.meta["num_params"] == theirs[entry.name].meta["num_params"]
        assert entry.meta["categories"] == theirs[entry.name].meta["categories"]
        assert entry.meta["metrics"]["ImageNet-1K"] == theirs[entry.name].meta["_metrics"]["ImageNet-1K"]
        assert entry.url.endswith(f"-{entry.value.sha256_prefix}.pth") and len(entry.value.sha256_prefix) >= 8


def _table(url):
    class Table(WeightsEnum):
        V1 = Weights(url, {"categories": [str(i) for i in range(10)]})
        DEFAULT = V1
    return Table


def test_offline_download_fails_fast_with_a_clear_message(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBER_HOME", str(tmp_path))
    seen = {}

    def unreachable(url, timeout=None):
        seen["timeout"] = timeout
        raise socket.timeout("timed out")

    monkeypatch.setattr("urllib.request.urlopen", unreachable)
    with pytest.raises(RuntimeError) as info:
        ember.models.resnet18(weights="DEFAULT")
    msg = str(info.value)
    assert "ResNet18_Weights.IMAGENET1K_V1" in msg and "https://download.pytorch.org/models/resnet18-f37072fd.pth" in msg
    assert "offline" in msg and str(tmp_path / "models" / "resnet18-f37072fd.pth") in msg and "f37072fd" in msg
    assert seen["timeout"] == 10.0                 # a short timeout, never urllib's default of none
    monkeypatch.setenv("EMBER_DOWNLOAD_TIMEOUT", "0.5")
    with pytest.raises(RuntimeError):
        ember.models.vgg16(weights=ember.models.VGG16_Weights.IMAGENET1K_V1)
    assert seen["timeout"] == 0.5
    assert not list((tmp_path / "models").iterdir())          # no partial file left behind


def test_refused_connection_is_reported(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBER_HOME", str(tmp_path))
    table = _table("http://127.0.0.1:9/tiny-0123abcd.pth")   # the discard port: nothing listens
    with pytest.raises(RuntimeError, match=r"Table.V1: could not download http://127.0.0.1:9/tiny-0123abcd.pth"):
        load_weights(ember.models.resnet20(), table.V1, table)


def _torch_resnet20_file(tmp_path, legacy=False):
    from tests.models.test_zoo import TorchCifarResNet
    torch.manual_seed(0)
    ref = TorchCifarResNet(3)
    raw = tmp_path / "raw.pth"
    torch.save(ref.state_dict(), raw, _use_new_zipfile_serialization=not legacy)
    sha = hashlib.sha256(raw.read_bytes()).hexdigest()
    return ref, raw, sha


def test_download_checks_the_checksum_and_caches(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBER_HOME", str(tmp_path / "home"))
    ref, raw, sha = _torch_resnet20_file(tmp_path)
    good = tmp_path / f"resnet20-{sha[:10]}.pth"
    raw.rename(good)
    table = _table(good.as_uri())
    model = ember.models.resnet20()
    load_weights(model, "DEFAULT", table)
    np.testing.assert_array_equal(model.layer2[0].conv1.weight.detach().numpy(),
                                  ref.layer2[0].conv1.weight.detach().numpy())
    cached = tmp_path / "home" / "models" / good.name
    assert cached.is_file()
    good.unlink()                                   # the cached copy is used from now on
    load_weights(ember.models.resnet20(), table.V1, table)

    bad = tmp_path / "resnet20-00000000.pth"
    cached.rename(bad)
    with pytest.raises(RuntimeError, match=f"checksum mismatch.*SHA-256 {sha} does not start with 00000000"):
        load_weights(ember.models.resnet20(), "V1", _table(bad.as_uri()))
    assert not list((tmp_path / "home" / "models").iterdir())


def test_weights_of_another_model_are_refused():
    with pytest.raises(TypeError, match="belong to another model.*ResNet18_Weights"):
        ember.models.resnet18(weights=ember.models.VGG16_Weights.DEFAULT)
    with pytest.raises(FileNotFoundError, match="no-such-file.safetensors"):
        ember.models.resnet18(weights="no-such-file.safetensors")


@pytest.mark.parametrize("legacy", [False, True])
def test_torch_pth_files_load_as_weights(tmp_path, legacy):
    ref, raw, _ = _torch_resnet20_file(tmp_path, legacy)
    model = ember.models.resnet20(weights=raw)
    for (k, v), (k2, v2) in zip(model.state_dict().items(), ref.state_dict().items()):
        assert k == k2 and v.dtype.name == str(v2.dtype).replace("torch.", "")
        np.testing.assert_array_equal(v.detach().numpy(), v2.numpy(), err_msg=k)


@pytest.mark.parametrize("legacy", [False, True])
def test_torch_file_reader_handles_views_and_scalars(tmp_path, legacy):
    base = torch.arange(24, dtype=torch.float64)
    obj = {"t": base.reshape(4, 6).t(), "slice": base[3:9:2], "scalar": torch.tensor(7), "half": torch.ones(2).half()}
    torch.save(obj, tmp_path / "x.pth", _use_new_zipfile_serialization=not legacy)
    got = load_torch_file(tmp_path / "x.pth")
    for k, v in obj.items():
        np.testing.assert_array_equal(got[k].numpy(), v.numpy(), err_msg=k)
        assert got[k].shape == tuple(v.shape)


class _Evil:
    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


@pytest.mark.parametrize("legacy", [False, True])
def test_torch_file_reader_runs_no_pickled_code(tmp_path, legacy):
    victim = tmp_path / "pwned"
    path = tmp_path / "evil.pth"
    if legacy:
        path.write_bytes(pickle.dumps(_Evil(str(victim))))
    else:
        torch.save({"w": torch.ones(2), "x": _Evil(str(victim))}, path)   # torch.save pickles anything
        victim.unlink(missing_ok=True)                                    # (pickling does not open it)
    with pytest.raises(UnsupportedTorchFile, match="open|builtins"):
        ember.models.read_state_dict(path)
    assert not victim.exists()


def test_read_state_dict_takes_a_safetensors_file_whose_header_length_starts_with_0x80(tmp_path):
    # a header of 128 + 256k bytes begins with 0x80, the first byte of a pickle: it was sent to the
    # torch-file reader
    path = tmp_path / "w.safetensors"
    for k in range(1, 400):
        ember.save({"w" * k: ember.ones(2)}, path)
        if path.read_bytes()[0] == 0x80:
            break
    assert path.read_bytes()[0] == 0x80
    state = ember.models.read_state_dict(path)
    assert state["w" * k].tolist() == [1.0, 1.0]
