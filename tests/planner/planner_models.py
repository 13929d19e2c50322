"""Models the planner tests count by hand, built from ember.nn (the model zoo is not merged yet):
VGG16 as the notes draw it (224x224 ImageNet and the appendix's 32x32 CIFAR-10 variant), ResNet-18 as
torchvision builds it, the Keras MLP (784-100-10), a CNN with BatchNorm and a small GPT."""
from __future__ import annotations

import ember
import ember.nn as nn
import ember.nn.functional as F

VGG16_CFG = (64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M")


def vgg16(num_classes=1000, cifar=False, avgpool=True, device=None):
    """torchvision's vgg16 (in-place ReLU, dropout, an adaptive 7x7 average pool that is the identity at
    224x224); `cifar=True`: the notes' appendix, 32x32 inputs, fc 512 -> 4096 -> 4096 -> 10."""
    layers, cin = [], 3
    for v in VGG16_CFG:
        if v == "M":
            layers.append(nn.MaxPool2d(2, 2))
        else:
            layers += [nn.Conv2d(cin, v, 3, padding=1, device=device), nn.ReLU(inplace=True)]
            cin = v
    flat = 512 if cifar else 512 * 7 * 7
    model = nn.Sequential()
    model.add_module("features", nn.Sequential(*layers))
    if avgpool and not cifar:
        model.add_module("avgpool", nn.AdaptiveAvgPool2d((7, 7)))
    model.add_module("flatten", nn.Flatten())
    model.add_module("classifier", nn.Sequential(
        nn.Linear(flat, 4096, device=device), nn.ReLU(True), nn.Dropout(), nn.Linear(4096, 4096, device=device), nn.ReLU(True), nn.Dropout(),
        nn.Linear(4096, num_classes, device=device)))
    return model


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride, device=None):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False, device=device)
        self.bn1 = nn.BatchNorm2d(cout, device=device)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False, device=device)
        self.bn2 = nn.BatchNorm2d(cout, device=device)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False, device=device), nn.BatchNorm2d(cout, device=device))

    def forward(self, x):
        idt = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += idt
        return self.relu(out)


def resnet18(num_classes=1000, device=None):
    """torchvision's resnet18 (11,689,512 parameters)."""
    layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=False, device=device), nn.BatchNorm2d(64, device=device), nn.ReLU(inplace=True),
              nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        layers += [nn.Sequential(BasicBlock(cin, cout, stride, device), BasicBlock(cout, cout, 1, device))]
        cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, num_classes, device=device)]
    return nn.Sequential(*layers)


def keras_mlp(device=None):
    """The Keras MNIST MLP of the notes: 784 -> 100 -> 10, 79,510 parameters."""
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 100, device=device), nn.ReLU(), nn.Linear(100, 10, device=device))


def mlp(device=None):
    return nn.Sequential(nn.Linear(512, 1024, device=device), nn.ReLU(), nn.Dropout(0.1), nn.Linear(1024, 1024, device=device), nn.ReLU(),
                         nn.Linear(1024, 10, device=device))


def cnn_bn(device=None):
    """A small CNN with BatchNorm (CIFAR-sized)."""
    return nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1, device=device), nn.BatchNorm2d(32, device=device), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1, device=device), nn.BatchNorm2d(64, device=device), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 8 * 8, 10, device=device))


class Block(nn.Module):
    def __init__(self, d, heads, device=None):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d, device=device), nn.LayerNorm(d, device=device)
        self.qkv, self.proj = nn.Linear(d, 3 * d, device=device), nn.Linear(d, d, device=device)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d, device=device), nn.GELU(), nn.Linear(4 * d, d, device=device))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)                            # (B, T, C) each
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)                # (B, nh, T, hs)
        x = x + self.proj(y.transpose(1, 2).contiguous().view(B, T, C))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    """A small GPT: token and position embeddings, `layers` pre-norm blocks, a linear head."""

    def __init__(self, vocab=512, block=64, d=128, heads=4, layers=2, device=None):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d, device=device), nn.Embedding(block, d, device=device)
        self.blocks = nn.Sequential(*[Block(d, heads, device) for _ in range(layers)])
        self.ln_f, self.head = nn.LayerNorm(d, device=device), nn.Linear(d, vocab, device=device)

    def forward(self, idx):
        T = idx.shape[1]
        x = self.tok(idx) + self.pos(ember.arange(T, device=idx.device))          # (B, T, C)
        return self.head(self.ln_f(self.blocks(x)))                               # (B, T, vocab)


# `module:callable` specs for the CLI tests (tests/planner/test_planner_cli.py)
CALLS = []


def tiny(device=None):
    CALLS.append(device)
    return nn.Linear(4, 2, device=device)


def tiny_no_device():
    return nn.Linear(4, 2)


class Factories:
    tiny = staticmethod(tiny)


def not_a_model():
    return 3
