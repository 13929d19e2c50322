"""The lecture notes' Keras MLP, as written, on Fashion-MNIST: Flatten -> Dense(100, relu) -> Dense(10, softmax).

79,510 parameters; 5 epochs of Adam reach about 88% test accuracy (the notes quote > 97% on MNIST digits;
clothes are harder). Needs the Debian package dataset-fashion-mnist.

Run: python examples/keras/fashion_mnist_mlp.py [--epochs 5] [--verbose 1]
"""
import argparse

import ember
from ember.keras import datasets, layers, models


def main(epochs=5, verbose=1, seed=0):
    ember.manual_seed(seed)
    (x_train, y_train), (x_test, y_test) = datasets.fashion_mnist.load_data()
    x_train, x_test = x_train / 255.0, x_test / 255.0          # pixels 0..255 -> 0..1

    model = models.Sequential([
        layers.Flatten(input_shape=(28, 28)),
        layers.Dense(100, activation='relu'),
        layers.Dense(10, activation='softmax')
    ])
    model.compile(optimizer='adam', loss='sparse_categorical_crossentropy', metrics=['accuracy'])
    model.summary()
    history = model.fit(x_train, y_train, epochs=epochs, verbose=verbose)
    test_loss, test_acc = model.evaluate(x_test, y_test, verbose=0)
    print(f"test accuracy: {test_acc:.4f} (loss {test_loss:.4f})")
    return model, history, test_acc


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--verbose", type=int, default=1)
    args = parser.parse_args()
    main(args.epochs, args.verbose)
