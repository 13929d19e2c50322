"""`ember.keras.layers`: Keras's layers (re-exports only)."""
from .base import Layer, InputLayer, Input, InputSpec
from .core import Dense, Activation, Dropout, Flatten, Reshape, Embedding
from .conv import Conv2D, MaxPooling2D, AveragePooling2D, GlobalAveragePooling2D, GlobalMaxPooling2D
from .normalization import BatchNormalization
from .rnn import LSTM, GRU
from .merge import Concatenate, Add, Subtract, Multiply, Average

MaxPool2D, AvgPool2D = MaxPooling2D, AveragePooling2D
GlobalAvgPool2D, GlobalMaxPool2D = GlobalAveragePooling2D, GlobalMaxPooling2D
Convolution2D = Conv2D

__all__ = ["Layer", "InputLayer", "Input", "InputSpec", "Dense", "Activation", "Dropout", "Flatten", "Reshape",
           "Embedding", "Conv2D", "MaxPooling2D", "AveragePooling2D", "GlobalAveragePooling2D",
           "GlobalMaxPooling2D", "BatchNormalization", "LSTM", "GRU", "Concatenate", "Add", "Subtract",
           "Multiply", "Average", "MaxPool2D", "AvgPool2D", "GlobalAvgPool2D", "GlobalMaxPool2D", "Convolution2D"]
