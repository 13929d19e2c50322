"""The two-layer net trained by `ember.optim.Adam`.

Run: python examples/06_optim.py
"""
import ember
import ember.nn as nn

N, D_in, H, D_out = 64, 1000, 100, 10


def main(steps=500, learning_rate=1e-4, seed=0):
    ember.manual_seed(seed)
    x = ember.randn(N, D_in)
    y = ember.randn(N, D_out)
    model = nn.Sequential(nn.Linear(D_in, H), nn.ReLU(), nn.Linear(H, D_out))
    loss_fn = nn.MSELoss(reduction="sum")
    optimizer = ember.optim.Adam(model.parameters(), lr=learning_rate)
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
