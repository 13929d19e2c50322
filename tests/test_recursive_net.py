"""The recursive network of examples/recursive_tree_lstm.py (issue 16): a Tree-LSTM whose graph follows
each expression tree. Its gradients agree with central differences, and it learns the sign of
arithmetic expressions well above chance."""
import pathlib
import runpy

import pytest

import ember

EXAMPLE = runpy.run_path(str(pathlib.Path(__file__).parent.parent / "examples" / "recursive_tree_lstm.py"),
                         run_name="example")


def test_trees_evaluate_and_the_dataset_is_balanced():
    assert EXAMPLE["evaluate"](("*", ("-", 7, 9), ("+", 4, 1))) == -10
    assert EXAMPLE["show"](("-", 3, ("*", 2, 5))) == "(3 - (2 * 5))"
    data = EXAMPLE["make_dataset"](90)
    counts = [sum(1 for _, y in data if y == c) for c in range(3)]
    assert counts == [30, 30, 30]
    assert all(EXAMPLE["label"](t) == y for t, y in data)


def test_gradients_through_trees_of_different_shapes_match_central_differences():
    ember.manual_seed(0)
    model = EXAMPLE["TreeLSTMClassifier"](dim=3, hidden=4).double()
    trees = [("+", ("*", 3, 4), 7), ("-", 2, ("-", ("+", 1, 1), 9)), ("*", 5, 0)]
    params = list(model.parameters())
    assert ember.autograd.gradcheck(lambda *ps: model(trees), params, eps=1e-6, atol=1e-6, rtol=1e-4)


def test_each_tree_builds_its_own_graph():
    model = EXAMPLE["TreeLSTMClassifier"](dim=3, hidden=4)

    def depth(t):   # backward nodes between the root's logits and a leaf embedding, roughly the tree height
        n, seen, stack = 0, set(), [model([t]).grad_fn]
        while stack:
            node = stack.pop()
            if node is None or node in seen:
                continue
            seen.add(node)
            n += 1
            stack.extend(nf for nf, _ in node.next_functions)
        return n

    assert depth(("+", 1, 2)) < depth(("+", ("*", 1, 2), ("-", 3, ("+", 4, 5))))


def test_it_learns_the_sign_of_expressions():
    _, losses, acc = EXAMPLE["main"](steps=80, batch_size=32, log=None)
    assert sum(losses[-10:]) / 10 < 0.8 * sum(losses[:10]) / 10
    assert acc > 0.6, f"test accuracy {acc:.1%}: chance is 33%"
