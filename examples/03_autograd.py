"""The two-layer net with autograd: `loss.backward()` computes the gradients.

Run: python examples/03_autograd.py
"""
import ember

N, D_in, H, D_out = 64, 1000, 100, 10


def main(steps=500, learning_rate=1e-6, seed=0):
    ember.manual_seed(seed)
    x = ember.randn(N, D_in)
    y = ember.randn(N, D_out)
    w1 = ember.randn(D_in, H, requires_grad=True)
    w2 = ember.randn(H, D_out, requires_grad=True)
    losses = []
    for t in range(steps):
        y_pred = x.mm(w1).clamp(min=0).mm(w2)
        loss = (y_pred - y).pow(2).sum()
        losses.append(loss.item())
        if t % 100 == 99:
            print(t, loss.item())
        loss.backward()
        with ember.no_grad():                   # the update itself is not part of the graph
            w1 -= learning_rate * w1.grad
            w2 -= learning_rate * w2.grad
            w1.grad = None
            w2.grad = None
    return losses


if __name__ == "__main__":
    main()
