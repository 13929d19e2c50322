"""The public classes that tools return (ember.jit's compiled function and graph, the planner's
Summary/Device/StepTime, Keras's symbolic tensor) are what the functions really return."""
import ember
from ember import jit, nn, planner
from ember.keras import layers


def test_compile_returns_a_compiled_function_with_a_typed_graph():
    f = ember.compile(lambda x: (x * 2).relu())
    assert isinstance(f, jit.CompiledFunction)
    f(ember.ones(3))
    f(ember.ones(3))
    info = f.cache_info()
    assert isinstance(info, jit.CacheInfo) and info.hits >= 1
    g = f.graph
    assert all(isinstance(n, jit.Node) for n in g.nodes)
    assert all(isinstance(v, jit.Value) for n in g.nodes for v in n.outputs)


def test_planner_returns_its_types():
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    s = ember.summary(model, (4,), batch_size=8, verbose=False)
    assert isinstance(s, planner.Summary) and s.total_params == 4 * 3 + 3 + 3 * 2 + 2
    assert isinstance(planner.get_device("H100"), planner.Device)
    assert isinstance(s.step_time(8, "H100"), planner.StepTime)
    twin = planner.meta_twin(model, ember.float32)
    assert next(twin.parameters()).device.type == "meta" and next(model.parameters()).device.type == "cpu"


def test_keras_inputs_are_symbolic_tensors():
    from ember.keras import KerasTensor
    x = layers.Input(shape=(5,))
    assert isinstance(x, KerasTensor) and isinstance(layers.Dense(2)(x), KerasTensor)
