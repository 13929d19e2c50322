"""The two-layer net as `nn.Sequential`, with the loss from `nn.functional` and a hand-written SGD step.

Run: python examples/05_nn_sequential.py
"""
import ember
import ember.nn as nn
import ember.nn.functional as F

N, D_in, H, D_out = 64, 1000, 100, 10


def main(steps=500, learning_rate=1e-4, seed=0):
    ember.manual_seed(seed)
    x = ember.randn(N, D_in)
    y = ember.randn(N, D_out)
    model = nn.Sequential(nn.Linear(D_in, H), nn.ReLU(), nn.Linear(H, D_out))
    losses = []
    for t in range(steps):
        loss = F.mse_loss(model(x), y, reduction="sum")
        losses.append(loss.item())
        if t % 100 == 99:
            print(t, loss.item())
        model.zero_grad()
        loss.backward()
        with ember.no_grad():
            for param in model.parameters():
                param -= learning_rate * param.grad
    return losses


if __name__ == "__main__":
    main()
