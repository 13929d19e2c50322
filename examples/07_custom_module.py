"""The two-layer net as a custom `nn.Module`: layers set in __init__, the computation in forward.

Run: python examples/07_custom_module.py
"""
import ember
import ember.nn as nn

N, D_in, H, D_out = 64, 1000, 100, 10


class TwoLayerNet(nn.Module):
    def __init__(self, D_in, H, D_out):
        super().__init__()
        self.linear1 = nn.Linear(D_in, H)
        self.linear2 = nn.Linear(H, D_out)

    def forward(self, x):
        h_relu = self.linear1(x).clamp(min=0)
        return self.linear2(h_relu)


def main(steps=500, learning_rate=1e-4, seed=0):
    ember.manual_seed(seed)
    x = ember.randn(N, D_in)
    y = ember.randn(N, D_out)
    model = TwoLayerNet(D_in, H, D_out)
    loss_fn = nn.MSELoss(reduction="sum")
    optimizer = ember.optim.SGD(model.parameters(), lr=learning_rate)
    losses = []
    for t in range(steps):
        loss = loss_fn(model(x), y)
        losses.append(loss.item())
        if t % 100 == 99:
            print(t, loss.item())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return losses


if __name__ == "__main__":
    main()
