"""`ember.keras.datasets`: `mnist.load_data()` and `fashion_mnist.load_data()` as Keras returns them,
((x_train, y_train), (x_test, y_test)) uint8 NumPy arrays, from data installed offline."""
from . import mnist, fashion_mnist

__all__ = ["mnist", "fashion_mnist"]
