"""model.summary() against Keras 3's layout: the expected tables are written out below as Keras prints
them (88 columns for a chain of layers, 108 with "Connected to" for a functional graph), and the drawing
is checked against rich, the library Keras renders its table with. The tables of the two functional models
were also compared with Keras 3.15.1 itself (KERAS_BACKEND=torch) and are identical."""
import numpy as np
import pytest

from ember import keras
from ember.keras import layers, models

NOTES_MLP = '''\
Model: "sequential"
┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━┓
┃ Layer (type)                         ┃ Output Shape                ┃         Param # ┃
┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━┩
│ flatten (Flatten)                    │ (None, 784)                 │               0 │
├──────────────────────────────────────┼─────────────────────────────┼─────────────────┤
│ dense (Dense)                        │ (None, 100)                 │          78,500 │
├──────────────────────────────────────┼─────────────────────────────┼─────────────────┤
│ dense_1 (Dense)                      │ (None, 10)                  │           1,010 │
└──────────────────────────────────────┴─────────────────────────────┴─────────────────┘
 Total params: 79,510 (310.59 KB)
 Trainable params: 79,510 (310.59 KB)
 Non-trainable params: 0 (0.00 B)
'''

TWO_INPUT = '''\
Model: "functional"
┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━━━━━┓
┃ Layer (type)                  ┃ Output Shape              ┃         Param # ┃ Connected to               ┃
┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━━━━┩
│ input_layer (InputLayer)      │ (None, 32)                │               0 │ -                          │
├───────────────────────────────┼───────────────────────────┼─────────────────┼────────────────────────────┤
│ input_layer_1 (InputLayer)    │ (None, 8)                 │               0 │ -                          │
├───────────────────────────────┼───────────────────────────┼─────────────────┼────────────────────────────┤
│ dense (Dense)                 │ (None, 16)                │             528 │ input_layer[0][0]          │
├───────────────────────────────┼───────────────────────────┼─────────────────┼────────────────────────────┤
│ dense_1 (Dense)               │ (None, 16)                │             144 │ input_layer_1[0][0]        │
├───────────────────────────────┼───────────────────────────┼─────────────────┼────────────────────────────┤
│ concatenate (Concatenate)     │ (None, 32)                │               0 │ dense[0][0], dense_1[0][0] │
├───────────────────────────────┼───────────────────────────┼─────────────────┼────────────────────────────┤
│ batch_normalization           │ (None, 32)                │             128 │ concatenate[0][0]          │
│ (BatchNormalization)          │                           │                 │                            │
├───────────────────────────────┼───────────────────────────┼─────────────────┼────────────────────────────┤
│ dense_2 (Dense)               │ (None, 1)                 │              33 │ batch_normalization[0][0]  │
└───────────────────────────────┴───────────────────────────┴─────────────────┴────────────────────────────┘
 Total params: 833 (3.25 KB)
 Trainable params: 769 (3.00 KB)
 Non-trainable params: 64 (256.00 B)
'''


def notes_mlp():
    return models.Sequential([
        layers.Flatten(input_shape=(28, 28)),
        layers.Dense(100, activation='relu'),
        layers.Dense(10, activation='softmax')
    ])


def two_input_model():
    a, b = keras.Input(shape=(32,)), keras.Input(shape=(8,))
    h = layers.Concatenate()([layers.Dense(16, activation="relu")(a), layers.Dense(16, activation="relu")(b)])
    out = layers.Dense(1, activation="sigmoid")(layers.BatchNormalization()(h))
    return keras.Model(inputs=[a, b], outputs=out)


def test_notes_mlp_table(capsys):
    model = notes_mlp()
    assert model.count_params() == 79_510
    model.summary(line_length=88)
    assert capsys.readouterr().out == NOTES_MLP


def test_functional_two_input_table(capsys):
    two_input_model().summary(line_length=108)
    assert capsys.readouterr().out == TWO_INPUT


def test_print_fn_and_default_width(monkeypatch):
    # Keras: the line is min(88, terminal columns - 4) wide
    monkeypatch.setenv("COLUMNS", "200")
    lines = []
    notes_mlp().summary(print_fn=lines.append)
    assert lines == [NOTES_MLP]
    monkeypatch.setenv("COLUMNS", "64")
    out = []
    keras.clear_session()
    notes_mlp().summary(print_fn=out.append)
    assert max(len(line) for line in out[0].splitlines()) == 60


def test_optimizer_params_after_fit(capsys):
    model = notes_mlp()
    model.compile(optimizer='adam', loss='sparse_categorical_crossentropy', metrics=['accuracy'])
    model.fit(np.zeros((4, 28, 28)), np.zeros(4, dtype=int), verbose=0)
    model.summary(line_length=88)
    tail = capsys.readouterr().out.splitlines()[-4:]
    # Keras 3 counts Adam's two moments per weight plus its iteration counter and learning rate
    assert tail == [" Total params: 238,532 (931.77 KB)", " Trainable params: 79,510 (310.59 KB)",
                    " Non-trainable params: 0 (0.00 B)", " Optimizer params: 159,022 (621.18 KB)"]


def test_unbuilt_subclassed_model_rows():
    class Net(keras.Model):
        def __init__(self):
            super().__init__()
            self.fc = layers.Dense(3)

        def call(self, x):
            return self.fc(x)

    net = Net()
    lines = []
    net.summary(line_length=88, print_fn=lines.append)
    assert "│ dense (Dense)                        │ ?                           │     0 (unbuilt) │" in lines[0]
    net(np.ones((2, 5)))
    lines = []
    net.summary(line_length=88, print_fn=lines.append)
    assert "│ dense (Dense)                        │ (None, 3)                   │              18 │" in lines[0]


@pytest.mark.parametrize("which", ["mlp", "functional"])
def test_drawing_matches_rich(which):
    """Render the same rows with rich.table as Keras does (column widths from `positions`, show_lines)
    and compare the box with ours."""
    rich = pytest.importorskip("rich")
    import rich.console
    import rich.table
    if which == "mlp":
        text, length, positions = NOTES_MLP, 88, [0.45, 0.80, 1.0]
        header = ["Layer (type)", "Output Shape", "Param #"]
        align = ["left", "left", "right"]
    else:
        text, length, positions = TWO_INPUT, 108, [0.3, 0.56, 0.74, 1.0]
        header = ["Layer (type)", "Output Shape", "Param #", "Connected to"]
        align = ["left", "left", "right", "left"]
    widths, current = [], 0
    for p in positions:
        widths.append(int(p * length) - current)
        current += widths[-1]
    table = rich.table.Table(*[rich.table.Column(h, justify=a, width=w) for h, a, w in zip(header, align, widths)],
                             width=length, show_lines=True)
    body = text.splitlines()[1:-3]
    rows = []
    for line in body:
        if line.startswith("│"):
            cells = [c.strip() for c in line.strip("│").split("│")]
            if cells[0] and cells[1]:
                rows.append(cells)
            else:   # a wrapped continuation line: join it to the cell above
                rows[-1] = [f"{r} {c}".strip() for r, c in zip(rows[-1], cells)]
    for r in rows:
        table.add_row(*r)
    console = rich.console.Console(width=200, force_terminal=False, color_system=None, highlight=False)
    with console.capture() as cap:
        console.print(table)
    assert cap.get().splitlines() == body


# printed by Keras 3.15.1 itself (KERAS_BACKEND=torch) for the model below: Keras lists layers by depth (the
# longest path to an output first), so input `b`, one step from the Concatenate, comes after `dense`
INPUT_LATE = """\
Model: "functional"
┏━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━┓
┃ Layer (type)        ┃ Output Shape      ┃    Param # ┃ Connected to      ┃
┡━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━┩
│ a (InputLayer)      │ (None, 8)         │          0 │ -                 │
├─────────────────────┼───────────────────┼────────────┼───────────────────┤
│ dense (Dense)       │ (None, 16)        │        144 │ a[0][0]           │
├─────────────────────┼───────────────────┼────────────┼───────────────────┤
│ b (InputLayer)      │ (None, 4)         │          0 │ -                 │
├─────────────────────┼───────────────────┼────────────┼───────────────────┤
│ concatenate         │ (None, 20)        │          0 │ dense[0][0],      │
│ (Concatenate)       │                   │            │ b[0][0]           │
├─────────────────────┼───────────────────┼────────────┼───────────────────┤
│ dense_1 (Dense)     │ (None, 3)         │         63 │ concatenate[0][0] │
└─────────────────────┴───────────────────┴────────────┴───────────────────┘
 Total params: 207 (828.00 B)
 Trainable params: 207 (828.00 B)
 Non-trainable params: 0 (0.00 B)
"""


def test_layers_are_listed_by_depth_as_keras_does(capsys):
    a = keras.Input((8,), name="a")
    b = keras.Input((4,), name="b")
    x = layers.Concatenate()([layers.Dense(16, activation="relu")(a), b])
    model = keras.Model([a, b], layers.Dense(3)(x))
    assert [la.name for la in model.layers] == ["a", "dense", "b", "concatenate", "dense_1"]
    model.summary(line_length=76)     # the width Keras drew at: an 80-column terminal, minus 4
    assert capsys.readouterr().out == INPUT_LATE


def _has_connections_column(model):
    lines = []
    model.summary(line_length=108, print_fn=lines.append)
    return "Connected to" in lines[0].splitlines()[2]


def test_sequential_like_graphs_get_the_three_column_table():
    """Keras prints a functional model without "Connected to" when it is a chain: one input, one output,
    every node with one input tensor, no layer used twice, no tensor used twice."""
    x = keras.Input((4,))
    assert not _has_connections_column(keras.Model(x, layers.Dense(2)(layers.Dense(3)(x))))   # a chain
    x = keras.Input((4,))
    assert _has_connections_column(keras.Model(x, layers.Dense(2)(layers.Concatenate()([x, x]))))  # 2 inputs
    x = keras.Input((4,))
    shared = layers.Dense(4)
    assert _has_connections_column(keras.Model(x, shared(shared(x))))                        # a layer twice
    x = keras.Input((4,))
    assert _has_connections_column(keras.Model(x, [layers.Dense(2)(x), layers.Dense(3)(x)]))  # two outputs
    a, b = keras.Input((4,)), keras.Input((2,))
    assert _has_connections_column(keras.Model([a, b], [layers.Dense(2)(a), layers.Dense(3)(b)]))   # two inputs


def test_connected_to_lists_only_this_models_calls():
    dense = layers.Dense(2)
    dense(keras.Input((3,)))                        # a call in another graph: node 0 of dense
    a, b = keras.Input((3,), name="a"), keras.Input((1,), name="b")
    model = keras.Model([a, b], layers.Concatenate()([dense(a), b]))
    lines = []
    model.summary(line_length=108, print_fn=lines.append)
    row = next(line for line in lines[0].splitlines() if line.startswith("│ dense (Dense)"))
    assert row.split("│")[4].strip() == "a[0][0]"


@pytest.mark.parametrize("length,positions", [(60, [0.5, 0.75, 1.0]), (50, [0.3, 0.6, 1.0]), (88, [0.5, 0.75, 1.0])])
def test_custom_positions_match_rich_with_narrow_headers(length, positions):
    """A header wider than its column wraps, bottom-aligned, as rich draws it (it used to overflow the line)."""
    rich = pytest.importorskip("rich")
    import rich.console
    import rich.table
    model = models.Sequential([layers.Dense(16, activation="relu", input_shape=(4,)),
                               layers.Dense(3, activation="softmax")])
    out = []
    model.summary(line_length=length, positions=positions, print_fn=out.append)
    ours = out[0].splitlines()[1:-3]
    widths, current = [], 0
    for p in positions:
        widths.append(int(p * length) - current)
        current += widths[-1]
    table = rich.table.Table(*[rich.table.Column(h, justify=a, width=w) for h, a, w in
                               zip(["Layer (type)", "Output Shape", "Param #"], ["left", "left", "right"], widths)],
                             width=length, show_lines=True)
    table.add_row("dense (Dense)", "(None, 16)", "80")
    table.add_row("dense_1 (Dense)", "(None, 3)", "51")
    console = rich.console.Console(width=200, force_terminal=False, color_system=None, highlight=False)
    with console.capture() as cap:
        console.print(table)
    assert ours == cap.get().splitlines()
    assert {len(line) for line in ours} == {length}
