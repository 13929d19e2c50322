"""LeNet-5 (LeCun et al., 1998) for 1x28x28 inputs: the first convolution pads by 2 so that MNIST-sized
images give the paper's 32x32 geometry. tanh and average pooling, as in the paper (without its sparse
C3 connection table and RBF output layer, as every modern re-implementation).

>>> model = lenet5()
>>> model(ember.randn(2, 1, 28, 28)).shape
(2, 10)
>>> sum(p.numel() for p in model.parameters())
61706
"""
from __future__ import annotations

import ember
from ember import nn
from ember.models._weights import load_weights

__all__ = ["LeNet5", "lenet5"]


class LeNet5(nn.Module):
    def __init__(self, num_classes: int = 10, in_channels: int = 1) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(in_channels, 6, kernel_size=5, padding=2), nn.Tanh(),   # C1: (B, 6, 28, 28)
            nn.AvgPool2d(kernel_size=2, stride=2),                             # S2: (B, 6, 14, 14)
            nn.Conv2d(6, 16, kernel_size=5), nn.Tanh(),                        # C3: (B, 16, 10, 10)
            nn.AvgPool2d(kernel_size=2, stride=2))                             # S4: (B, 16, 5, 5)
        self.classifier = nn.Sequential(
            nn.Linear(16 * 5 * 5, 120), nn.Tanh(),                             # C5
            nn.Linear(120, 84), nn.Tanh(),                                     # F6
            nn.Linear(84, num_classes))

    def forward(self, x):
        return self.classifier(ember.flatten(self.features(x), 1))


def lenet5(*, weights=None, progress: bool = True, **kwargs) -> LeNet5:
    """LeNet-5 (61,706 parameters for 10 classes); `weights`: None or a local file."""
    model = LeNet5(**kwargs)
    load_weights(model, weights)
    return model
