"""The CNNs of the conv benchmarks, written once against `lib` (ember or torch) from nn layers, so both
libraries run the same architecture with the same weights (`copy_weights`). The model zoo
(ember.models) is not used here: these scripts measure the layers, not the zoo.
"""
from __future__ import annotations

import numpy as np


def w4_cnn(lib):
    """W4 of shared/WORKLOADS.md: the small CNN for 1x28x28 inputs."""
    nn = lib.nn
    return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(1568, 10))


def resnet18(lib, num_classes=1000):
    """torchvision's ResNet-18 layout (7x7 stem, max pool, four stages of two BasicBlocks)."""
    nn = lib.nn

    class BasicBlock(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.relu = nn.ReLU()
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.downsample = None
            if stride != 1 or cin != cout:
                self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            idt = x if self.downsample is None else self.downsample(x)
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return self.relu(out + idt)

    class ResNet18(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
            self.bn1 = nn.BatchNorm2d(64)
            self.relu = nn.ReLU()
            self.maxpool = nn.MaxPool2d(3, 2, 1)
            layers, cin = [], 64
            for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
                layers.append(nn.Sequential(BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)))
                cin = cout
            self.layer1, self.layer2, self.layer3, self.layer4 = layers
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(512, num_classes)

        def forward(self, x):
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(self.avgpool(x).flatten(1))

    return ResNet18()


def vgg16(lib, num_classes=1000):
    """torchvision's VGG16 (configuration D, no batch norm)."""
    nn = lib.nn
    cfg = [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"]
    layers, cin = [], 3
    for v in cfg:
        if v == "M":
            layers.append(nn.MaxPool2d(2, 2))
        else:
            layers += [nn.Conv2d(cin, v, 3, padding=1), nn.ReLU()]
            cin = v
    return nn.Sequential(nn.Sequential(*layers), nn.AdaptiveAvgPool2d((7, 7)), nn.Flatten(),
                         nn.Linear(512 * 7 * 7, 4096), nn.ReLU(), nn.Dropout(),
                         nn.Linear(4096, 4096), nn.ReLU(), nn.Dropout(), nn.Linear(4096, num_classes))


def copy_weights(ember, tmodel, emodel):
    """torch model's parameters and buffers into the Ember model of the same layout."""
    sd = {k: ember.from_numpy(v.detach().numpy().copy()) for k, v in tmodel.state_dict().items()}
    emodel.load_state_dict(sd)


def train_step(lib, model, x_np, y_np, lr=0.01):
    """zero_grad, forward, cross-entropy, backward, SGD(momentum 0.9) step."""
    opt = lib.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    loss_fn = lib.nn.CrossEntropyLoss()
    x, y = lib.from_numpy(x_np), lib.from_numpy(y_np)

    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return step
