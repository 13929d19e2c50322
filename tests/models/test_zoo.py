"""The zoo against torchvision: names, shapes and parameter counts of every model; weights exported from
torchvision as safetensors reproduce its outputs and gradients; get_model / list_models."""
import numpy as np
import pytest
import torch

import ember
from tests.models._oracle import save_torch_state, tvm

TORCHVISION = ["alexnet", "vgg11", "vgg11_bn", "vgg13", "vgg13_bn", "vgg16", "vgg16_bn", "vgg19", "vgg19_bn",
               "resnet18", "resnet34", "resnet50", "resnet101", "mobilenet_v2"]
MIN_SIZE = {"alexnet": 63}


def _ember(name, **kw):
    return ember.models.get_model(name, **kw)


@pytest.fixture
def no_init(monkeypatch):
    """Skip random initialisation (drawing VGG's 120M values takes seconds): shapes and counts only."""
    monkeypatch.setattr(ember.nn.Linear, "reset_parameters", lambda self: None)
    monkeypatch.setattr(ember.nn.Conv2d, "reset_parameters", lambda self: None)
    for fn in ("kaiming_normal_", "normal_", "constant_", "zeros_", "ones_"):
        monkeypatch.setattr(ember.nn.init, fn, lambda t, *a, **k: t)


class TorchLeNet5(torch.nn.Module):
    """The classic LeNet-5 as tutorials write it in torch."""

    def __init__(self, num_classes=10):
        super().__init__()
        nn = torch.nn
        self.features = nn.Sequential(nn.Conv2d(1, 6, 5, padding=2), nn.Tanh(), nn.AvgPool2d(2, 2),
                                      nn.Conv2d(6, 16, 5), nn.Tanh(), nn.AvgPool2d(2, 2))
        self.classifier = nn.Sequential(nn.Linear(400, 120), nn.Tanh(), nn.Linear(120, 84), nn.Tanh(),
                                        nn.Linear(84, num_classes))

    def forward(self, x):
        return self.classifier(torch.flatten(self.features(x), 1))


class TorchCifarResNet(torch.nn.Module):
    """He et al.'s CIFAR ResNet from torchvision's BasicBlock, projection shortcuts (chenyaofo's layout)."""

    def __init__(self, n, num_classes=10):
        super().__init__()
        nn = torch.nn
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.relu = nn.ReLU(inplace=True)
        self.inplanes = 16
        self.layer1, self.layer2, self.layer3 = (self._layer(c, n, s) for c, s in ((16, 1), (32, 2), (64, 2)))
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(64, num_classes)

    def _layer(self, planes, n, stride):
        nn = torch.nn
        down = None
        if stride != 1 or self.inplanes != planes:
            down = nn.Sequential(nn.Conv2d(self.inplanes, planes, 1, stride, bias=False), nn.BatchNorm2d(planes))
        blocks = [tvm.resnet.BasicBlock(self.inplanes, planes, stride, down)]
        self.inplanes = planes
        return nn.Sequential(*blocks, *[tvm.resnet.BasicBlock(planes, planes) for _ in range(n - 1)])

    def forward(self, x):
        x = self.layer3(self.layer2(self.layer1(self.relu(self.bn1(self.conv1(x))))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def _torch_model(name, **kw):
    if name == "lenet5":
        return TorchLeNet5(**kw)
    if name in ("resnet20", "resnet56"):
        return TorchCifarResNet({"resnet20": 3, "resnet56": 9}[name], **kw)
    return tvm.get_model(name, **kw)


def _shapes(state):
    return {k: tuple(v.shape) for k, v in state.items()}


@pytest.mark.parametrize("name", TORCHVISION + ["lenet5", "resnet20", "resnet56"])
def test_names_shapes_and_parameter_counts_equal_the_reference(name, no_init):
    with torch.device("meta"):
        ref = _torch_model(name)
    model = _ember(name)
    assert _shapes(model.state_dict()) == _shapes(ref.state_dict())
    assert list(model.state_dict()) == list(ref.state_dict())          # same order too
    assert sum(p.numel() for p in model.parameters()) == sum(p.numel() for p in ref.parameters())
    if name in TORCHVISION:
        assert sum(p.numel() for p in model.parameters()) == tvm.get_model_weights(name).DEFAULT.meta["num_params"]


def test_published_parameter_counts():
    assert sum(p.numel() for p in ember.models.lenet5().parameters()) == 61706
    assert sum(p.numel() for p in ember.models.resnet20().parameters()) == 272474


@pytest.mark.parametrize("name", TORCHVISION + ["lenet5", "resnet20", "resnet56"])
def test_output_shape(name, no_init):
    """On the meta device (shapes only): the values are checked against torchvision below and in
    test_torch_weights_reproduce_outputs_and_gradients; torchvision's meta run is the reference."""
    model = _ember(name, num_classes=7).eval().to("meta")
    with torch.device("meta"):
        ref = _torch_model(name, num_classes=7).eval()
    size = 28 if name == "lenet5" else 224
    channels = 1 if name == "lenet5" else 3
    y = model(ember.randn(2, channels, size, size, device="meta"))
    assert y.shape == tuple(ref(torch.empty(2, channels, size, size, device="meta")).shape) == (2, 7)
    assert y.dtype == ember.float32
    if name != "lenet5":   # the smallest input each accepts (adaptive pooling makes the rest size-free)
        small = MIN_SIZE.get(name, 32)
        assert model(ember.randn(1, 3, small, small, device="meta")).shape == (1, 7)


def _randomise_batch_norm(model):
    """Non-trivial running statistics and affine parameters, so that eval-mode BN is really checked."""
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5, generator=g)
                m.running_var.uniform_(0.5, 1.5, generator=g)
                m.weight.uniform_(0.5, 1.5, generator=g)
                m.bias.uniform_(-0.2, 0.2, generator=g)


FAST = ["lenet5", "resnet20", "resnet18", "mobilenet_v2"]
SLOW = ["alexnet", "vgg11_bn", "resnet50"]


@pytest.mark.parametrize("name", FAST + [pytest.param(n, marks=pytest.mark.slow) for n in SLOW])
def test_torch_weights_reproduce_outputs_and_gradients(name, tmp_path):
    torch.manual_seed(0)
    ref = _torch_model(name, num_classes=10).double().eval()
    _randomise_batch_norm(ref)
    path = tmp_path / f"{name}.safetensors"
    save_torch_state(ref, path)

    model = _ember(name, num_classes=10).double().eval()
    model.load_state_dict(ember.load(path))
    size = {"lenet5": 28, "alexnet": 63, "vgg11_bn": 32}.get(name, 16)   # small: Ember's float64 conv is slow
    x = np.random.RandomState(0).randn(2, 1 if name == "lenet5" else 3, size, size)
    w = np.random.RandomState(1).randn(2, 10)       # a loss that weighs every output differently

    xt = torch.from_numpy(x).requires_grad_()
    (ref(xt) * torch.from_numpy(w)).sum().backward()
    xe = ember.tensor(x, requires_grad=True)
    ye = model(xe)
    (ye * ember.tensor(w)).sum().backward()

    np.testing.assert_allclose(ye.detach().numpy(), ref(xt).detach().numpy(), rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-9, atol=1e-11)
    tgrads = {n: p.grad.numpy() for n, p in ref.named_parameters()}
    for n, p in model.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), tgrads[n], rtol=1e-8, atol=1e-11, err_msg=n)


def test_train_mode_batch_norm_matches_torchvision(tmp_path):
    """Training-mode forward (batch statistics) and the running-statistics update of a loaded ResNet-18."""
    torch.manual_seed(0)
    ref = tvm.resnet18(num_classes=4).double().train()
    _randomise_batch_norm(ref)
    save_torch_state(ref, tmp_path / "r.safetensors")
    model = ember.models.resnet18(num_classes=4).double().train()
    model.load_state_dict(ember.load(tmp_path / "r.safetensors"))
    x = np.random.RandomState(0).randn(4, 3, 32, 32)
    np.testing.assert_allclose(model(ember.tensor(x)).detach().numpy(), ref(torch.from_numpy(x)).detach().numpy(),
                               rtol=1e-9, atol=1e-11)
    ours, theirs = model.state_dict(), ref.state_dict()
    for k in ("layer3.1.bn2.running_mean", "layer3.1.bn2.running_var", "bn1.num_batches_tracked"):
        np.testing.assert_allclose(ours[k].numpy(), theirs[k].numpy(), rtol=1e-9, err_msg=k)


def test_weights_argument_takes_a_local_file(tmp_path):
    ref = tvm.resnet18(num_classes=3).eval()
    save_torch_state(ref, tmp_path / "r18.safetensors")
    for weights in (tmp_path / "r18.safetensors", str(tmp_path / "r18.safetensors")):
        model = ember.models.resnet18(weights=weights, num_classes=3)
        np.testing.assert_array_equal(model.fc.weight.detach().numpy(), ref.fc.weight.detach().numpy())
    model = ember.models.get_model("resnet20", weights=None)
    ember.save(model.state_dict(), tmp_path / "r20.safetensors")
    again = ember.models.get_model("resnet20", weights=tmp_path / "r20.safetensors")
    np.testing.assert_array_equal(again.conv1.weight.detach().numpy(), model.conv1.weight.detach().numpy())


def test_get_model_and_list_models():
    names = ember.models.list_models()
    assert names == sorted(names)
    assert set(TORCHVISION + ["lenet5", "resnet20", "resnet56", "gpt"]) == set(names)
    assert isinstance(ember.models.get_model("ResNet20"), ember.models.CifarResNet)
    with pytest.raises(ValueError, match="unknown model 'resnet99'.*resnet18"):
        ember.models.get_model("resnet99")
    assert ember.models.get_model_weights("vgg16") is ember.models.VGG16_Weights


def test_import_ember_does_not_import_the_zoo():
    import subprocess
    import sys
    code = "import ember, sys; print('ember.models' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_builders_return_their_classes_and_weight_tables(no_init, monkeypatch, tmp_path):
    M = ember.models
    tables = {"alexnet": M.AlexNet_Weights, "vgg11": M.VGG11_Weights, "vgg11_bn": M.VGG11_BN_Weights,
              "vgg13": M.VGG13_Weights, "vgg13_bn": M.VGG13_BN_Weights, "vgg16": M.VGG16_Weights,
              "vgg16_bn": M.VGG16_BN_Weights, "vgg19": M.VGG19_Weights, "vgg19_bn": M.VGG19_BN_Weights,
              "resnet18": M.ResNet18_Weights, "resnet34": M.ResNet34_Weights, "resnet50": M.ResNet50_Weights,
              "resnet101": M.ResNet101_Weights, "mobilenet_v2": M.MobileNet_V2_Weights}
    for name, table in tables.items():
        assert M.get_model_weights(name) is table
    with pytest.raises(ValueError, match="no pretrained weights are published for 'resnet20'"):
        M.get_model_weights("resnet20")
    classes = {"lenet5": M.LeNet5, "alexnet": M.AlexNet, "vgg11": M.VGG, "resnet50": M.ResNet,
               "resnet20": M.CifarResNet, "mobilenet_v2": M.MobileNetV2}
    for name, cls in classes.items():
        assert type(M.get_model(name)) is cls
    assert isinstance(M.resnet50().layer1[0], M.Bottleneck) and isinstance(M.resnet18().layer1[0], M.BasicBlock)
    monkeypatch.setenv("EMBER_HOME", str(tmp_path))
    assert M.weights_cache_dir() == tmp_path / "models"
