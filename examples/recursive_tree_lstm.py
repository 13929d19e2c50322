"""A recursive network over trees: a Tree-LSTM reads arithmetic expressions and predicts their sign.

Why this needs dynamic graphs (the lecture notes' point): every expression has a different tree, so every
example builds a different graph. The network is the same few weights applied node by node, leaves first,
in whatever shape the tree has; autograd records exactly the graph that ran and differentiates through it.

    ((7 - 9) * (4 - 1)) + 5       ->  value -1  ->  class "negative"

Leaves are digits 0..9 (an embedding); an inner node combines its two children with a binary Tree-LSTM
cell (Tai, Socher and Manning, 2015) whose input is the operator's embedding, so one set of weights
serves +, - and *. The root's hidden state goes to a linear classifier: negative, zero or positive.

Run: python examples/recursive_tree_lstm.py          (about a minute on 2 CPU cores)
"""
import random

import ember
import ember.nn as nn
import ember.nn.functional as F

OPS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b}
CLASSES = ("negative", "zero", "positive")


# ----------------------------------------------------------------------------- data: random trees
def random_tree(rng, depth):
    """A digit (a leaf) or (op, left, right); `depth` bounds the height."""
    if depth == 0 or rng.random() < 0.3:
        return rng.randrange(10)
    return (rng.choice(tuple(OPS)), random_tree(rng, depth - 1), random_tree(rng, depth - 1))


def evaluate(tree):
    if isinstance(tree, int):
        return tree
    op, left, right = tree
    return OPS[op](evaluate(left), evaluate(right))


def show(tree):
    if isinstance(tree, int):
        return str(tree)
    op, left, right = tree
    return f"({show(left)} {op} {show(right)})"


def label(tree):
    v = evaluate(tree)
    return 0 if v < 0 else (1 if v == 0 else 2)


def make_dataset(n, depth=3, seed=0):
    """n (tree, class) pairs, the three classes in equal numbers (zero is rare in random trees)."""
    rng = random.Random(seed)
    per_class, out = [0, 0, 0], []
    while len(out) < n:
        t = random_tree(rng, depth)
        if isinstance(t, int):
            continue
        y = label(t)
        if per_class[y] < (n + 2) // 3:
            per_class[y] += 1
            out.append((t, y))
    rng.shuffle(out)
    return out


# ----------------------------------------------------------------------------- the model
def tree_lstm_cell(x, left, right, weight, bias):
    """Binary Tree-LSTM: gates from the node's input x and both children's hidden states, one forget gate
    per child. x (D,), left/right = (h, c) each (H,), weight (5H, D + 2H), bias (5H,)."""
    (hl, cl), (hr, cr) = left, right
    gates = F.linear(ember.cat([x, hl, hr]), weight, bias)
    i, fl, fr, o, u = gates.chunk(5)
    c = ember.sigmoid(i) * ember.tanh(u) + ember.sigmoid(fl) * cl + ember.sigmoid(fr) * cr
    return ember.sigmoid(o) * ember.tanh(c), c


class TreeLSTMClassifier(nn.Module):
    def __init__(self, dim=32, hidden=64, classes=3):
        super().__init__()
        self.hidden = hidden
        self.digits = nn.Embedding(10, hidden)
        self.ops = nn.Embedding(len(OPS), dim)
        self.cell = nn.Linear(dim + 2 * hidden, 5 * hidden)
        self.head = nn.Linear(hidden, classes)

    def encode(self, tree):
        """(h, c) of a tree's root, computed leaves first: the graph follows the tree's shape."""
        if isinstance(tree, int):
            h = ember.tanh(self.digits.weight[tree])
            return h, ember.zeros_like(h)
        op, left, right = tree
        x = self.ops.weight[list(OPS).index(op)]
        return tree_lstm_cell(x, self.encode(left), self.encode(right), self.cell.weight, self.cell.bias)

    def forward(self, trees):
        """Logits (len(trees), classes); each tree has its own graph, the batch shares one backward."""
        return self.head(ember.stack([self.encode(t)[0] for t in trees]))


# ----------------------------------------------------------------------------- training
def accuracy(model, data):
    with ember.no_grad():
        logits = model([t for t, _ in data])
    return float((logits.argmax(1) == ember.tensor([y for _, y in data])).float().mean())


def main(steps=600, batch_size=32, seed=0, log=print):
    ember.manual_seed(seed)
    train, test = make_dataset(3000, seed=seed), make_dataset(600, seed=seed + 1)
    model = TreeLSTMClassifier()
    opt = ember.optim.Adam(model.parameters(), lr=3e-3)
    losses = []
    for step in range(steps):
        batch = [train[(step * batch_size + k) % len(train)] for k in range(batch_size)]
        loss = F.cross_entropy(model([t for t, _ in batch]), ember.tensor([y for _, y in batch]))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss))
        if log and (step + 1) % 100 == 0:
            log(f"step {step + 1:4d}  loss {sum(losses[-100:]) / 100:.3f}  test accuracy {accuracy(model, test):.1%}")
    if log:
        log(f"test accuracy {accuracy(model, test):.1%} (chance: 33.3%)")
        model.eval()
        for tree, y in test[:5]:
            with ember.no_grad():
                guess = int(model([tree]).argmax(1))
            log(f"  {show(tree)} = {evaluate(tree)}: predicted {CLASSES[guess]}, truly {CLASSES[y]}")
    return model, losses, accuracy(model, test)


if __name__ == "__main__":
    main()
