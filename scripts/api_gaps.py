"""Which public names of torch Ember lacks, grouped with a reason: writes docs/api-gaps.md.

    /work/venv/bin/python scripts/api_gaps.py            # rewrite docs/api-gaps.md
    /work/venv/bin/python scripts/api_gaps.py --check    # exit 1 if a gap falls in no named group

For each pair (torch.X, ember.X) below, the gaps are the names of `dir(torch.X)` not starting with '_'
that `ember.X` does not have (hasattr). Each gap goes to the first group whose rule matches it; the
rules are the table GROUPS (a regex on the name, or an explicit set), so a new torch release or a new
Ember op changes the document when the script is rerun.
"""
from __future__ import annotations

import os
import re
import sys
import types

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # this checkout's ember

import torch  # noqa: E402
import torch.nn.functional  # noqa: E402

import ember  # noqa: E402
import ember.linalg  # noqa: E402
import ember.nn  # noqa: E402
import ember.nn.functional  # noqa: E402
import ember.optim  # noqa: E402
import ember.optim.lr_scheduler  # noqa: E402
import ember.nn.init  # noqa: E402
import ember.nn.utils  # noqa: E402
import ember.autograd  # noqa: E402
import ember.utils.data  # noqa: E402
import ember.utils.checkpoint  # noqa: E402
import ember.testing  # noqa: E402
import ember.func  # noqa: E402
import ember.multiprocessing  # noqa: E402
import torch.optim.lr_scheduler  # noqa: E402
import torch.nn.init  # noqa: E402
import torch.nn.utils  # noqa: E402
import torch.utils.data  # noqa: E402
import torch.utils.checkpoint  # noqa: E402
import torch.testing  # noqa: E402
import torch.func  # noqa: E402
import torch.multiprocessing  # noqa: E402

PAIRS = [
    ("torch", torch, ember),
    ("torch.Tensor", torch.Tensor, ember.Tensor),
    ("torch.nn", torch.nn, ember.nn),
    ("torch.nn.functional", torch.nn.functional, ember.nn.functional),
    ("torch.linalg", torch.linalg, ember.linalg),
    ("torch.optim", torch.optim, ember.optim),
    # the namespaces ported scripts reach next (Module methods, schedulers, init, autograd, data, testing)
    ("torch.nn.Module", torch.nn.Module, ember.nn.Module),
    ("torch.nn.init", torch.nn.init, ember.nn.init),
    ("torch.nn.utils", torch.nn.utils, ember.nn.utils),
    ("torch.optim.lr_scheduler", torch.optim.lr_scheduler, ember.optim.lr_scheduler),
    ("torch.autograd", torch.autograd, ember.autograd),
    ("torch.utils.data", torch.utils.data, ember.utils.data),
    ("torch.utils.checkpoint", torch.utils.checkpoint, ember.utils.checkpoint),
    ("torch.testing", torch.testing, ember.testing),
    ("torch.func", torch.func, ember.func),
    ("torch.multiprocessing", torch.multiprocessing, ember.multiprocessing),
]
# For these the public names are the module's __all__ and its public submodules (they import typing's
# names wholesale); the first six keep dir(), as the document always counted them.
BY_ALL = {"torch.nn.init", "torch.nn.utils", "torch.optim.lr_scheduler", "torch.autograd", "torch.utils.data",
          "torch.utils.checkpoint", "torch.func",
          "torch.multiprocessing"}


def public_names(label, tmod):
    """The public names of a torch namespace (see BY_ALL)."""
    if label in BY_ALL:
        subs = {n for n, v in vars(tmod).items() if isinstance(v, types.ModuleType) and not n.startswith("_")
                and v.__name__.startswith(tmod.__name__ + ".")}
        return sorted(n for n in set(tmod.__all__) | subs if not n.startswith("_"))
    return [n for n in dir(tmod) if not n.startswith("_")]

NOT_API = {
    "T_destination",
    "Callable", "Optional", "TYPE_CHECKING", "Tensor", "np", "math", "warnings", "importlib", "dataclasses", "DType",
    "BroadcastingList1", "BroadcastingList2", "BroadcastingList3", "boolean_dispatch", "handle_torch_function",
    "has_torch_function", "has_torch_function_unary", "has_torch_function_variadic", "assert_int_or_pair",
    "GRID_SAMPLE_INTERPOLATION_MODES", "GRID_SAMPLE_PADDING_MODES", "factory_kwargs", "classproperty",
    "USE_GLOBAL_DEPS", "USE_RTLD_GLOBAL_WITH_LIBTORCH", "PRIVATE_OPS", "typename", "ScalingType", "SwizzleType",
    "AVG", "SUM", "AggregationType", "e", "pi", "inf", "nan", "newaxis", "common_notes", "reproducibility_notes",
    "sparse_support_notes", "tf32_notes", "AcceleratorError", "FatalError", "get_device_module",
}

# name in torch -> what Ember has (checked to exist when the document is written)
ALIASES = {
    "multiply": "ember.mul", "multiply_": "ember.Tensor.mul_", "divide": "ember.div", "divide_": "ember.Tensor.div_",
    "subtract": "ember.sub", "subtract_": "ember.Tensor.sub_", "negative_": "ember.Tensor.neg_",
    "positive": "ember.Tensor.__pos__", "fix": "ember.trunc", "fix_": "ember.Tensor.trunc_", "sgn": "ember.sign",
    "sgn_": "ember.Tensor.sign_", "clamp_min": "ember.clamp", "clamp_max": "ember.clamp",
    "clamp_min_": "ember.Tensor.clamp_", "clamp_max_": "ember.Tensor.clamp_", "ndimension": "ember.Tensor.dim",
    "inverse": "ember.linalg.inv", "det": "ember.linalg.det", "slogdet": "ember.linalg.slogdet",
    "logdet": "ember.linalg.slogdet", "cholesky": "ember.linalg.cholesky", "qr": "ember.linalg.qr",
    "svd": "ember.linalg.svd", "matmul": "ember.matmul", "diagonal": "ember.diagonal", "rsub": "ember.sub",
    "true_divide_": "ember.Tensor.div_", "absolute_": "ember.Tensor.abs_",
    "get_device": "ember.Tensor.device", "nuclear_norm": "ember.linalg.matrix_norm",
    "frobenius_norm": "ember.linalg.matrix_norm", "swapaxes_": "ember.Tensor.transpose", "swapdims_":
    "ember.Tensor.transpose", "t_": "ember.Tensor.t", "transpose_": "ember.Tensor.transpose",
    "squeeze_": "ember.Tensor.squeeze", "unsqueeze_": "ember.Tensor.unsqueeze", "range": "ember.arange",
    "fill": "ember.full_like", "upsample": "ember.nn.functional.interpolate",
    "upsample_bilinear": "ember.nn.functional.interpolate", "upsample_nearest": "ember.nn.functional.interpolate",
    "Upsample": "ember.nn.functional.interpolate", "CosineSimilarity": "ember.nn.functional.cosine_similarity",
    "PairwiseDistance": "ember.nn.functional.pairwise_distance", "Unfold": "ember.nn.functional.unfold",
    "Fold": "ember.nn.functional.fold", "is_anomaly_enabled": "ember.autograd.anomaly",
    "set_anomaly_enabled": "ember.autograd.detect_anomaly", "Buffer": "ember.nn.Module.register_buffer",
}

DEPRECATED = {
    "symeig", "eig", "lstsq", "solve", "matrix_rank", "chain_matmul", "triangular_solve", "volatile", "reinforce",
    "NLLLoss2d", "Container", "set_default_tensor_type", "trapz", "lu", "lu_solve", "norm_except_dim", "type",
    "output_nr", "apply_", "map_", "map2_", "UpsamplingBilinear2d", "UpsamplingNearest2d", "pinverse", "row_stack",
}
# torch's old top-level and Tensor names (torch.lstsq, torch.solve, Tensor.lu ...) are legacy; torch.linalg's
# functions of the same names (linalg.lstsq, linalg.lu, linalg.matrix_rank ...) are its current API
DEPRECATED_NAMESPACES = {"torch", "torch.Tensor", "torch.nn", "torch.nn.functional", "torch.optim"}

# (title, reason, rule): the first group whose rule matches a name gets it. A rule is a regex (searched in
# the name), a set of names, or a function (name, torch object, namespace label) -> bool.
# torch subpackages with an API of their own that Ember lacks (torch's plain imports stay "Not API")
SUBPACKAGES = {"distributions", "fft", "signal", "export", "fx", "hub", "masked", "nested", "sparse", "quasirandom",
               "ao", "quantization", "package", "library", "futures", "monitor", "compiler",
               "overrides", "forward_ad", "graph", "functional", "mps", "xpu", "mtia", "cpu"}
DATAPIPES = {"DFIterDataPipe", "DataChunk", "IterDataPipe", "MapDataPipe", "argument_validation", "functional_datapipe",
             "guaranteed_datapipes_determinism", "non_deterministic", "runtime_validation",
             "runtime_validation_disabled"}

GROUPS = [
    ("Subpackages Ember does not have", "each a subsystem of its own: FFT, torch.export/"
     "fx graph capture, sparse, nested and masked tensors, quantization, forward-mode AD, other accelerators",
     lambda n, obj, ns: isinstance(obj, types.ModuleType) and n in SUBPACKAGES
     and not (ns == "torch" and n == "functional")),
    ("DataPipes: out of scope", "torch.utils.data's DataPipes (deprecated in torch, moved to torchdata)", DATAPIPES),
    ("Selective checkpointing and checkpoint internals: not yet", "Ember's checkpoint recomputes the whole block; "
     "torch's policies for which ops to save, and the helpers its reentrant variant exposes, are not there",
     lambda n, obj, ns: ns == "torch.utils.checkpoint"),
    ("Autograd engine knobs and legacy classes", "settings of torch's C++ engine and pre-1.0 classes",
     {"NestedIOFunction", "enforce_grad_layout_policy", "set_multithreading_enabled", "variable",
      "call_super_init", "dump_patches"}),
    ("Not API", "torch's own imports, typing helpers, constants Python has (math.pi) and doc strings: nothing to add",
     lambda n, obj, ns: isinstance(obj, types.ModuleType) or n in NOT_API),
    ("Available under another name", "Ember has the same operation under the name shown (an alias could be added "
     "where torch users type this one)", set(ALIASES)),
    ("In torch.nn.functional", "a torch.* alias of a functional op: Ember has it as ember.nn.functional.<name>",
     lambda n, obj, ns: ns == "torch" and hasattr(ember.nn.functional, n.rstrip("_"))),
    ("Available as a Tensor method", "Ember has it as `Tensor.<name>`; a torch.* function form is one line",
     lambda n, obj, ns: ns == "torch" and hasattr(ember.Tensor, n)),
    ("Complex numbers: out of scope", "Ember has no complex dtypes",
     lambda n, obj, ns: re.search(r"complex|view_as_real|conj|^angle$|^real$|^imag$|^polar$|^isreal$|"
                                  r"^c(float|double|half)$|^chalf$|resolve_neg|^eigvals?$", n) is not None
     or (ns == "torch.linalg" and n == "eig")),   # the general eigendecomposition's results are complex
    ("Sparse and nested tensors: out of scope", "Ember's tensors are dense (strided) only",
     r"sparse|coo|csr|csc|bsr|bsc|(col|row)_indices|coalesce|to_dense|smm$|spmm|sspaddmm|saddmm|^indices|"
     r"^values|dense_dim|to_padded_tensor|^jagged$|^nested|^is_nested"),
    ("Quantization: out of scope", "no quantized dtypes or observers in Ember",
     r"quantiz|fake_quant|^q_|qint|quint|qscheme|int_repr|qparams|per_channel|per_tensor|fbgemm|dequantize|^int[1-7]$|"
     r"^uint([1-7]|16|32|64)$|^bits|^bit$|^float8|^float4"),
    ("Mixed precision (autocast, GradScaler): planned separately", "needs a dtype policy per op; not in issue 9",
     r"autocast|GradScaler"),
    ("Compiler, TorchScript, tracing, symbolic shapes: out of scope", "Ember's compiler is its own (`ember.compile`, `ember.jit`: docs/design-compiler.md); "
     "TorchScript's and FX's objects have no counterpart",
     r"^Script|Type$|^Sym|^sym_|compile|vmap|while_loop|Graph|^Node$|^Block$|^Value$|^Use$|^Code$|"
     r"CompilationUnit|ConcreteModuleType|ArgumentSpec|ExecutionPlan|FunctionSchema|AliasDb|FileCheck|ErrorReport|"
     r"TracingState|parse_ir|parse_schema|import_ir|Lite|StaticModule|IODescriptor|^Argument$|Capsule|CallStack|"
     r"DispatchKey|DisableTorchFunction|^Tag$|OperatorInfo|InferredType|DeepCopyMemoTable|JITException|Benchmark|"
     r"Logger|^ModuleDict$|^ParameterDict$|^fork$|^wait$|Future|^Type$|merge_type|parse_type|unify_type|^Gradient$|^Stream$|^Event$|"
     r"^ScriptObject|^Buffer_?Dict|BufferDict|module_load|slice_inverse|grouped_mm|scaled_mm|hash_tensor|grad_dtype"),
    ("Backend-specific kernels: out of scope", "cuDNN, MIOpen, MKL-DNN, Vulkan, XPU, MPS, IPU, XLA entry points "
     "(Ember picks its kernels per backend itself)",
     r"cudnn|miopen|mkldnn|vulkan|xpu|mtia|ipu|xla|^mps$|^has_(lapack|mkl|openmp|spectral)|compiled_with|"
     r"set_flush_denormal|matmul_precision|profiler_|_interop_threads|^init_num_threads"),
    ("Storage, strides and memory formats: out of scope", "Ember's tensors are NumPy/CuPy arrays; their storage is "
     "not exposed as torch's is",
     r"[Ss]torage|as_strided|^set_$|resize|record_stream|dim_order|empty_strided|empty_permuted|"
     r"channels_last|contiguous_format|preserve_format|memory_format|^layout$|^strided$|^from_file$|^frombuffer$|"
     r"nonzero_static|PyTorchFile|StorageContext|^new$|new_empty_strided|get_file_path|const_data_ptr|"
     r"^to_dlpack$|^as_subclass$"),
    ("Legacy or deprecated in torch", "kept by torch for old code; torch's docs point to the replacement",
     lambda n, obj, ns: (n in DEPRECATED and ns in DEPRECATED_NAMESPACES)
     or re.fullmatch(r"[A-Za-z0-9]+Tensor", n) is not None),
    ("Distributed and multiprocessing: out of scope", "Ember's data parallel is `ember.distributed` (DDP over MPI and NCCL, "
     "docs/distributed.md); torch's SyncBatchNorm and its batch-norm statistics kernels are not in it",
     r"DataParallel|SyncBatchNorm|distributed|multiprocessing|batch_norm_(gather|backward|elemt|stats|update)|"
     r"swap_in_optimizer|thread_safe_generator"),
    ("ATen internals", "entry points torch exposes for its own Python layer (native_*, the functional forms of "
     "RNN cells, fused variants)",
     r"^native_|^(?!index_copy).*_copy$|^convolution$|^conv_tbc$|^constant_pad_nd$|^embedding_renorm_|^grid_sampler|^segment_reduce$|"
     r"^rnn_|^gru|^lstm|^feature_dropout|^affine_grid_generator$|^unsafe_|^is_storage$|"
     r"warn_always|^is_vulkan_available|anomaly_check_nan"),
    ("Linear algebra beyond issue 9's set: to add to ember.linalg next", "ember.linalg has solve, inv, det, slogdet, "
     "cholesky, qr, svd(vals), eigh/eigvalsh and the norms; these build on them",
     r"^cholesky_|^inv_ex$|^solve_ex$|^ldl_|^lu|householder|^pinv$|^matrix_(exp|power|rank)$|^multi_dot$|^lstsq$|"
     r"^tensor(inv|solve)$|^vander$|^cond$|^vecdot$|^solve_triangular$|^cross$|^lobpcg$|_lowrank$|^geqrf$|^orgqr$|"
     r"^ormqr$|^cond$|^diag_embed$|^addmv_?$|^addr_?$|^addbmm_?$|^baddbmm_?$|^addmm_$|^kron$|^block_diag$|"
     r"^cdist$|^adjoint$|^cov$|^corrcoef$"),
    ("Special functions: planned", "gamma family, Bessel, erfinv ...: need NumPy-only code (no SciPy at import)",
     r"gamma|^digamma|^i0|^erfinv|^erfc|^sinc|^xlogy|^logit|^polygamma|^special$"),
    ("Signal processing and FFT: out of scope for now", "Ember has no fft module yet",
     r"stft|_window$|^fft$"),
    ("Lazy modules: to add", "shape-inferring Lazy* modules (a small wrapper around the eager ones)",
     r"^Lazy|Uninitialized"),
    ("Optimizers: to add", "torch.optim's less common optimizers; each is one pure step function in Ember's style",
     r"^(ASGD|Adafactor|Adamax|Muon|NAdam|RAdam|Rprop|SparseAdam)$"),
    ("Elementwise math: small gap, to add", "one NumPy ufunc and a one-line backward each",
     r"^a?(rc)?(sin|cos|tan)h?_?$|^a(rc)?tan2_?$|^atan2_?$|hypot|copysign|deg2rad|rad2deg|ldexp|frexp|nextafter|"
     r"signbit|heaviside|^fmax$|^fmin$|^gcd|^lcm|logaddexp|isposinf|isneginf|nan_to_num|bitwise_(left|right)_shift|"
     r"^float_power_$|^exp2_$|^log(2|10|1p)?_$|^(exp|expm1|erf|sin|cos|tan|sqrt|rsqrt|round|floor|ceil|trunc|frac|"
     r"reciprocal|square|sigmoid|tanh|relu|neg|clamp|clip|abs|zero|detach|index_put)_$"),
    ("In-place forms: small gap, to add", "the out-of-place op exists; `_tensor_methods._make_inplace` generates "
     "the `_` form in one line",
     lambda n, obj, ns: n.endswith("_") and (hasattr(ember.Tensor, n[:-1]) or hasattr(ember, n[:-1]))),
    ("Reductions and statistics: small gap, to add", "composites over existing reductions and sort",
     r"quantile$|^nan(sum|mean|median|quantile)$|^median$|^mode$|^quantile$|^aminmax$|^cum(max|min)$|^logcumsumexp$|^histc$|"
     r"^histogram(dd)?$|^bincount$|^renorm_?$|^sum_to_size$|^(cumulative_)?trapezoid$|^gradient$"),
    ("Shape, indexing and dtype helpers: small gap, to add", "composites of view, cat, gather/scatter",
     r"split|^select|_scatter$|^index(_copy|_reduce)?_?$|^scatter_reduce_?$|^put_?$|^rot90$|^diagflat$|^atleast_|"
     r"_stack$|^dstack$|^cartesian_prod$|^combinations$|^unravel_index$|^unfold$|^fill_diagonal_$|"
     r"^unique_consecutive$|^isin$|^diff$|^broadcast_shapes$|^can_cast$|^finfo$|^iinfo$|^narrow_copy$"),
    ("nn layers and functions: to add", "torch.nn modules and functional ops Ember does not have yet (each is a "
     "composite plus one check_module / check_op line)",
     lambda n, obj, ns: hasattr(torch.nn.functional, n.rstrip("_")) or hasattr(torch.nn, n)
     or (getattr(obj, "__module__", "") or "").startswith("torch.nn")),
    ("Named tensors: out of scope", "torch's named-tensor API is a prototype", r"^names?$|refine_names|rename|align_"),
    ("einops patterns: not yet", "torch.func.rearrange takes einops' pattern strings (functorch.einops); "
     "Ember has permute, reshape and einsum", {"rearrange"}),
    ("Small gaps: to add", "one function each: sampling, global defaults, inference-tensor flag, a grad hook",
     {"binomial", "cauchy_", "get_default_device", "set_default_device", "set_printoptions", "is_inference",
      "register_post_accumulate_grad_hook"}),
]


def gaps():
    """[(namespace, name, torch object)] for every public torch name Ember lacks."""
    out = []
    for label, tmod, emod in PAIRS:
        for name in public_names(label, tmod):
            if hasattr(emod, name):
                continue
            try:
                obj = getattr(tmod, name)
            except Exception:   # noqa: BLE001  (a lazily imported torch submodule may fail to load)
                obj = None
            out.append((label, name, obj))
    return out


def classify(name, obj, label):
    if (label, name) == ("torch", "cond"):   # torch.cond is control flow for torch.compile; linalg.cond a norm
        return "Compiler, TorchScript, tracing, symbolic shapes: out of scope"
    for title, reason, rule in GROUPS:
        if isinstance(rule, str):
            hit = re.search(rule, name) is not None
        elif isinstance(rule, set):
            hit = name in rule
        else:
            hit = rule(name, obj, label)
        if hit:
            return title
    return "Other: to decide"


def render(rows) -> str:
    by_group: dict = {}
    for label, name, obj in rows:
        by_group.setdefault(classify(name, obj, label), {}).setdefault(label, []).append(name)
    total = {label: sum(1 for r in rows if r[0] == label) for label, _, _ in PAIRS}
    have = {label: len(public_names(label, t)) for label, t, _ in PAIRS}
    lines = [
        "# API gaps: public names of torch that Ember lacks",
        "",
        "Made by `scripts/api_gaps.py` (rerun it: `/work/venv/bin/python scripts/api_gaps.py`) against torch "
        f"{torch.__version__.split('+')[0]}: for each torch namespace, the names of `dir()` without a leading "
        "underscore that the matching Ember namespace lacks (`hasattr`), each put in the first group of the "
        "script's `GROUPS` table whose rule matches it. Regenerate it rather than editing it by hand.",
        "",
        "| namespace | public names | missing in Ember |",
        "|---|---|---|",
    ]
    lines += [f"| `{label}` | {have[label]} | {total[label]} |" for label, _, _ in PAIRS]
    reasons = {title: reason for title, reason, _ in GROUPS}
    reasons["Other: to decide"] = "no rule matched: give each a group in scripts/api_gaps.py"
    for title in [g[0] for g in GROUPS] + ["Other: to decide"]:
        if title not in by_group:
            continue
        n = sum(len(v) for v in by_group[title].values())
        lines += ["", f"## {title} ({n})", "", reasons[title] + ".", ""]
        for label, _, _ in PAIRS:
            names = by_group[title].get(label)
            if not names:
                continue
            if title == "Available under another name":
                shown = ", ".join(f"`{x}` ({ALIASES[x]})" for x in sorted(names))
            else:
                shown = ", ".join(f"`{x}`" for x in sorted(names))
            lines.append(f"- `{label}`: {shown}")
    return "\n".join(lines) + "\n"


def _check_aliases():
    for name, target in ALIASES.items():
        parts = target.split(".")
        obj = ember
        for p in parts[1:]:
            obj = getattr(obj, p, None)
            if obj is None:
                raise SystemExit(f"api_gaps.py: ALIASES[{name!r}] names {target}, which Ember lacks")


def main(argv):
    _check_aliases()
    rows = gaps()
    if "--check" in argv:
        other = [f"{label}.{name}" for label, name, obj in rows if classify(name, obj, label) == "Other: to decide"]
        print("\n".join(other))
        return 1 if other else 0
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "api-gaps.md")
    with open(path, "w") as f:
        f.write(render(rows))
    print(f"wrote {path}: {len(rows)} gaps")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
