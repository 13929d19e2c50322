"""User-style code that a type checker must accept (tests/test_typing.py runs mypy on it).

It uses Tensor methods that ember/_tensor_methods.py binds at import time (declared for type checkers by
the generated ember/_tensor_bound.pyi), operators, properties, nn.Module, F, optim and ember.compile, the
way the README and examples/ do. The functions are annotated so that mypy checks their bodies.
"""
import ember
import ember.nn as nn
import ember.nn.functional as F
from ember import Tensor


class TwoLayerNet(nn.Module):
    def __init__(self, d_in: int, hidden: int, d_out: int) -> None:
        super().__init__()
        self.linear1 = nn.Linear(d_in, hidden)
        self.linear2 = nn.Linear(hidden, d_out)

    def forward(self, x: Tensor) -> Tensor:
        h = self.linear1(x).clamp(min=0)
        return self.linear2(h)


def tensor_methods(t: Tensor) -> Tensor:
    a = t.relu().sum(dim=1, keepdim=True)
    b = t.transpose_(0, 1).t().contiguous()
    c = t.reshape(2, -1).view(-1).unsqueeze(0).squeeze(0)
    d = t.softmax(dim=-1).log_softmax(-1).mean(dim=0).exp().clamp_(min=-1.0, max=1.0)
    e = t.float().to(ember.float64).cpu().detach().requires_grad_()
    t.add_(1.0, alpha=2).mul_(0.5).zero_()
    t.uniform_(-1.0, 1.0).normal_(0.0, 0.02)
    f = t.masked_fill(t > 0, 0.0).where(t < 1, t).index_select(0, ember.tensor([0]))
    g = t.T @ t.mT + t.flip(0).roll(1, 0) * 2 - 1 / (t.abs() + 1e-6)
    h = -t ** 2 // 3 % 2
    n: int = t.dim() + t.ndim + t.numel() + t.size(0) + t.shape[0]
    ok: bool = t.is_contiguous() and t.is_floating_point() and t.requires_grad
    value: float = t.sum().item() + float(t.norm()) + n + ok
    t[0] = value
    return a + b + c + d + e + f + g + h + t[0, 1:] + t.new_zeros(2, 3)


def train(steps: int = 3) -> float:
    ember.manual_seed(0)
    x = ember.randn(64, 1000)
    y = ember.randn(64, 10)
    model = nn.Sequential(nn.Linear(1000, 100), nn.ReLU(), nn.Linear(100, 10))
    opt = ember.optim.Adam(model.parameters(), lr=1e-3)
    loss = F.mse_loss(model(x), y)
    for _ in range(steps):
        loss = F.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    for p in model.parameters():
        if p.grad is not None:
            p.grad.zero_()
    return loss.item()


def custom_module() -> Tensor:
    model = TwoLayerNet(1000, 100, 10)
    loss_fn = nn.MSELoss(reduction="sum")
    optimizer = ember.optim.SGD(model.parameters(), lr=1e-4, momentum=0.9)
    x, y = ember.randn(64, 1000), ember.randn(64, 10)
    loss = loss_fn(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    with ember.no_grad():
        out = model(x).argmax(dim=1)
    return out


def compiled() -> Tensor:
    model = nn.Linear(3, 2)
    f = ember.compile(model)
    y = f(ember.ones(4, 3))

    @ember.compile
    def g(x: Tensor) -> Tensor:
        return (x * x).sum().sqrt()
    return y.sum() + g(ember.ones(2))
