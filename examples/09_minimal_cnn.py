"""A minimal CNN (two conv/pool stages and a linear classifier) fit to random 28x28 images.

The labels are a fixed function of the images (which quadrant is brightest), so there is signal to learn.
Run: python examples/09_minimal_cnn.py
"""
import ember
import ember.nn as nn
import ember.nn.functional as F


class SmallCNN(nn.Module):
    def __init__(self, num_classes=4):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.fc = nn.Linear(16 * 7 * 7, num_classes)

    def forward(self, x):                                   # (N, 1, 28, 28)
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)          # (N, 8, 14, 14)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)          # (N, 16, 7, 7)
        return self.fc(x.flatten(1))                        # (N, num_classes)


def make_data(n):
    x = ember.randn(n, 1, 28, 28)
    quadrants = ember.stack([x[:, 0, :14, :14].mean((1, 2)), x[:, 0, :14, 14:].mean((1, 2)),
                             x[:, 0, 14:, :14].mean((1, 2)), x[:, 0, 14:, 14:].mean((1, 2))], 1)
    return x, quadrants.argmax(1)


def main(steps=60, batch=32, seed=0):
    ember.manual_seed(seed)
    x, y = make_data(256)
    model = SmallCNN()
    optimizer = ember.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses = []
    for t in range(steps):
        i = (t * batch) % x.shape[0]
        xb, yb = x[i:i + batch], y[i:i + batch]
        loss = F.cross_entropy(model(xb), yb)
        losses.append(loss.item())
        if t % 20 == 19:
            print(t, loss.item())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    with ember.no_grad():
        acc = (model(x).argmax(1) == y).float().mean().item()
    print(f"train accuracy {acc:.2f}")
    return losses


if __name__ == "__main__":
    main()
