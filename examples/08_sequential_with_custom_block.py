"""A custom Module used as one block inside `nn.Sequential`: a residual MLP block between Linear layers.

Run: python examples/08_sequential_with_custom_block.py
"""
import ember
import ember.nn as nn

N, D_in, H, D_out = 64, 1000, 100, 10


class ResidualBlock(nn.Module):
    """x + MLP(LayerNorm(x)): the shape in is the shape out, so it drops into any Sequential."""

    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, x):
        return x + self.mlp(self.norm(x))


def main(steps=300, learning_rate=1e-3, seed=0):
    ember.manual_seed(seed)
    x = ember.randn(N, D_in)
    y = ember.randn(N, D_out)
    model = nn.Sequential(nn.Linear(D_in, H), ResidualBlock(H), nn.ReLU(), nn.Linear(H, D_out))
    print(model)
    optimizer = ember.optim.Adam(model.parameters(), lr=learning_rate)
    losses = []
    for t in range(steps):
        loss = nn.functional.mse_loss(model(x), y)
        losses.append(loss.item())
        if t % 100 == 99:
            print(t, loss.item())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return losses


if __name__ == "__main__":
    main()
