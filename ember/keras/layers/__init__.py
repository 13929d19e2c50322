"""`ember.keras.layers`: Keras's layers (re-exports only)."""
from .base import Layer, InputLayer, Input, InputSpec
from .core import Dense, Activation, Dropout, Flatten, Reshape, Embedding
from .conv import (Conv1D, Conv2D, MaxPooling1D, AveragePooling1D, GlobalAveragePooling1D, GlobalMaxPooling1D,
                   UpSampling1D, MaxPooling2D, AveragePooling2D, GlobalAveragePooling2D, GlobalMaxPooling2D, Conv3D,
                   Conv1DTranspose, Conv2DTranspose, Conv3DTranspose, MaxPooling3D, AveragePooling3D, GlobalAveragePooling3D, GlobalMaxPooling3D)
from .normalization import BatchNormalization
from .rnn import SimpleRNN, LSTM, GRU, Bidirectional, TimeDistributed
from .merge import Concatenate, Add, Subtract, Multiply, Average

MaxPool1D, AvgPool1D = MaxPooling1D, AveragePooling1D
GlobalAvgPool1D, GlobalMaxPool1D = GlobalAveragePooling1D, GlobalMaxPooling1D
MaxPool2D, AvgPool2D = MaxPooling2D, AveragePooling2D
GlobalAvgPool2D, GlobalMaxPool2D = GlobalAveragePooling2D, GlobalMaxPooling2D
MaxPool3D, AvgPool3D = MaxPooling3D, AveragePooling3D
GlobalAvgPool3D, GlobalMaxPool3D = GlobalAveragePooling3D, GlobalMaxPooling3D
Convolution1D, Convolution2D, Convolution3D = Conv1D, Conv2D, Conv3D
Convolution1DTranspose, Convolution2DTranspose, Convolution3DTranspose = Conv1DTranspose, Conv2DTranspose, Conv3DTranspose

__all__ = ["Layer", "InputLayer", "Input", "InputSpec", "Dense", "Activation", "Dropout", "Flatten", "Reshape",
           "Embedding", "Conv1D", "MaxPooling1D", "AveragePooling1D", "GlobalAveragePooling1D",
           "GlobalMaxPooling1D", "UpSampling1D", "MaxPool1D", "AvgPool1D", "GlobalAvgPool1D", "GlobalMaxPool1D",
           "Convolution1D", "Conv2D", "MaxPooling2D", "AveragePooling2D", "GlobalAveragePooling2D",
           "GlobalMaxPooling2D", "BatchNormalization", "SimpleRNN", "LSTM", "GRU",
           "Bidirectional", "TimeDistributed", "Concatenate", "Add", "Subtract",
           "Multiply", "Average", "MaxPool2D", "AvgPool2D", "GlobalAvgPool2D", "GlobalMaxPool2D", "Convolution2D",
           "Conv1DTranspose", "Conv2DTranspose", "Conv3DTranspose", "Convolution1DTranspose",
           "Convolution2DTranspose", "Convolution3DTranspose",
           "Conv3D", "Convolution3D", "MaxPooling3D", "AveragePooling3D", "GlobalAveragePooling3D",
           "GlobalMaxPooling3D", "MaxPool3D", "AvgPool3D", "GlobalAvgPool3D", "GlobalMaxPool3D"]
