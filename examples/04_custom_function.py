"""A custom autograd Function: ReLU with its own forward and backward.

Run: python examples/04_custom_function.py
"""
import ember

N, D_in, H, D_out = 64, 1000, 100, 10


class MyReLU(ember.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)            # backward needs to know where input was negative
        return input.clamp(min=0)

    @staticmethod
    def backward(ctx, grad_output):
        input, = ctx.saved_tensors
        grad_input = grad_output.clone()
        grad_input[input < 0] = 0
        return grad_input


def main(steps=500, learning_rate=1e-6, seed=0):
    ember.manual_seed(seed)
    x = ember.randn(N, D_in)
    y = ember.randn(N, D_out)
    w1 = ember.randn(D_in, H, requires_grad=True)
    w2 = ember.randn(H, D_out, requires_grad=True)
    losses = []
    for t in range(steps):
        y_pred = MyReLU.apply(x.mm(w1)).mm(w2)
        loss = (y_pred - y).pow(2).sum()
        losses.append(loss.item())
        if t % 100 == 99:
            print(t, loss.item())
        loss.backward()
        with ember.no_grad():
            w1 -= learning_rate * w1.grad
            w2 -= learning_rate * w2.grad
            w1.grad = None
            w2.grad = None
    return losses


if __name__ == "__main__":
    main()
