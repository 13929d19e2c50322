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


def test_readable_memory_size_units_as_keras():
    from ember.keras.summary import readable_memory_size as size
    assert [size(0), size(1023), size(1024), size(1536), size(1024 ** 2 - 1)] == \
        ["0.00 B", "1023.00 B", "1.00 KB", "1.50 KB", "1024.00 KB"]
    assert [size(1024 ** 2), size(3 * 1024 ** 3), size(1024 ** 4), size(1024 ** 5), size(2.5 * 1024 ** 5)] == \
        ["1.00 MB", "3.00 GB", "1.00 TB", "1.00 PB", "2.50 PB"]


def test_fit_takes_the_excess_off_as_rich_does():
    rich_ratio = pytest.importorskip("rich._ratio")
    from ember.keras.summary import _fit
    rng = np.random.default_rng(0)
    for _ in range(300):
        widths = [int(w) for w in rng.integers(3, 40, rng.integers(2, 5))]
        limit = int(rng.integers(5, sum(widths) + 10))
        excess = sum(widths) - limit
        want = widths if excess <= 0 else rich_ratio.ratio_reduce(excess, [1] * len(widths), widths, widths)
        assert _fit(list(widths), limit) == want, (widths, limit)


def test_wrap_and_shape_text():
    from ember.keras.summary import _shape_text, _wrap
    assert _wrap("abcdefghij klm", 4) == ["abc…", "klm"]          # a long word is cut with "…", as rich does
    assert _wrap("ab abcdefg", 3) == ["ab", "ab…"] and _wrap("xy", 1) == ["…"] and _wrap("x", 1) == ["x"]
    assert _wrap("a b c", 3) == ["a b", "c"] and _wrap("a bc", 4) == ["a bc"] and _wrap("", 3) == [""]
    assert _wrap("abc", 0) == [""] and _wrap("abc", -1) == [""]
    assert _shape_text(None) == "?" and _shape_text((None,)) == "(None,)" and _shape_text((None, 3)) == "(None, 3)"
    assert _shape_text(()) == "()"
    assert _shape_text([(None, 2), (None, 3, 4)]) == "[(None, 2), (None, 3, 4)]"
    assert _shape_text(((None, 2), (None, 1))) == "[(None, 2), (None, 1)]"


def test_wrap_matches_rich():
    pytest.importorskip("rich")
    from rich.console import Console
    from rich.text import Text
    from ember.keras.summary import _wrap
    console = Console(width=200)
    rng = np.random.default_rng(0)
    for _ in range(500):
        words = ["".join(rng.choice(list("ab[]_(0"), rng.integers(1, 14))) for _ in range(rng.integers(1, 5))]
        text, width = " ".join(words), int(rng.integers(1, 16))
        want = [line.plain.rstrip() for line in Text(text).wrap(console, width, overflow="ellipsis")]
        assert [line.rstrip() for line in _wrap(text, width)] == want, (text, width)


def rich_table(text, length, positions):
    """The rows of a summary `text` drawn again by rich at `length` (as Keras draws them)."""
    import rich.console
    import rich.table
    lines = text.splitlines()
    header = [c.strip() for c in lines[2].strip("┃").split("┃")]
    align = ["right" if h == "Param #" else "left" for h in header]
    widths, current = [], 0
    for p in positions:
        widths.append(int(p * length) - current)
        current += widths[-1]
    table = rich.table.Table(*[rich.table.Column(h, justify=a, width=w) for h, a, w in zip(header, align, widths)],
                             width=length, show_lines=True)
    rows = []
    for line in lines[4:-3]:
        if line.startswith("│"):
            cells = [c.strip() for c in line.strip("│").split("│")]
            if cells[0] and cells[1]:
                rows.append(cells)
            else:
                rows[-1] = [f"{r} {c}".strip() for r, c in zip(rows[-1], cells)]
    for r in rows:
        table.add_row(*r)
    console = rich.console.Console(width=200, force_terminal=False, color_system=None, highlight=False)
    with console.capture() as cap:
        console.print(table)
    return cap.get().splitlines()


@pytest.mark.parametrize("length", [22, 24, 26, 30, 40])
def test_narrow_functional_tables_match_rich(length):
    """At 22 columns the third column of the functional table had no room: `_wrap` cut its text into
    empty pieces forever (the summary hung). Long words are cut with "…" as rich does."""
    pytest.importorskip("rich")
    lines = []
    keras.clear_session()
    two_input_model().summary(line_length=length, print_fn=lines.append)
    assert lines[0].splitlines()[1:-3] == rich_table(TWO_INPUT, length, [0.3, 0.56, 0.74, 1.0])


def test_too_narrow_a_line_is_refused():
    model = notes_mlp()
    with pytest.raises(ValueError, match=r"^Insufficient console width to print summary\.$"):
        model.summary(line_length=8)
    with pytest.raises(ValueError, match="Insufficient console width"):
        model.summary(line_length=15)                                 # 6, 6, 3: the last column too narrow
    lines = []
    model.summary(line_length=16, print_fn=lines.append)              # 7, 5, 4: just enough
    assert {len(line) for line in lines[0].splitlines()[1:-3]} == {16}
    model.summary(line_length=40, positions=[0.5, 0.6, 1.0], print_fn=lines.append)   # 20, 4, 16: fine
    with pytest.raises(ValueError, match="Insufficient console width"):
        model.summary(line_length=40, positions=[0.5, 0.59, 1.0])     # 20, 3, 17


def test_frozen_float64_weights_and_print_without_print_fn(capsys):
    class Wide(layers.Layer):
        def build(self, input_shape):
            self.w = self.add_weight(shape=(input_shape[-1], 3), dtype="float64")
            self.b = self.add_weight(shape=(3,), dtype="float64", initializer="zeros")

        def call(self, x):
            return x.double() @ self.w + self.b

    model = models.Sequential([Wide(input_shape=(2,)), layers.Dense(1)])
    model.layers[0].trainable = False
    from ember.keras.summary import print_summary, summary_text
    text = summary_text(model, line_length=88)
    assert text.endswith(" Total params: 13 (88.00 B)\n Trainable params: 4 (16.00 B)\n"
                         " Non-trainable params: 9 (72.00 B)\n")
    print_summary(model, line_length=88)
    assert capsys.readouterr().out == text
    got = []
    print_summary(model, line_length=88, print_fn=got.append)
    assert got == [text]


def test_a_multi_output_layer_row_and_sgd_optimizer_params():
    a = keras.Input(shape=(4,), name="a")
    m = keras.Model(a, [layers.Dense(2, name="p")(a), layers.Dense(1, name="q")(a)])
    m.compile("sgd", ["mse", "mse"])
    m.fit(np.zeros((2, 4)), [np.zeros((2, 2)), np.zeros((2, 1))], verbose=0)
    text = []
    m.summary(line_length=108, print_fn=text.append)
    # plain SGD keeps no slot: its variables are the iteration counter and the learning rate (2 x 4 bytes + 4)
    assert text[0].splitlines()[-4:] == [" Total params: 17 (72.00 B)", " Trainable params: 15 (60.00 B)",
                                         " Non-trainable params: 0 (0.00 B)", " Optimizer params: 2 (12.00 B)"]


@pytest.mark.parametrize("length", [16, 18, 20, 30, 50])
def test_narrow_sequential_tables_match_rich(length):
    pytest.importorskip("rich")
    lines = []
    keras.clear_session()
    notes_mlp().summary(line_length=length, print_fn=lines.append)
    assert lines[0].splitlines()[1:-3] == rich_table(NOTES_MLP, length, [0.45, 0.80, 1.0])


def test_wrap_keeps_a_double_space_as_rich_does_and_functional_default_width(monkeypatch):
    from ember.keras.summary import _wrap
    assert [line.rstrip() for line in _wrap("a  b", 3)] == ["a", "b"]      # rich: ['a  ', 'b']
    monkeypatch.setenv("COLUMNS", "200")
    lines = []
    keras.clear_session()
    two_input_model().summary(print_fn=lines.append)                     # min(108, 200 - 4)
    assert lines == [TWO_INPUT]
