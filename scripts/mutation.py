"""Mutation testing of one Ember module at a time with mutmut (results: docs/testing.md, "Mutation testing").

    python scripts/mutation.py optim            # one module
    python scripts/mutation.py all              # the ten modules, one after the other
    python scripts/mutation.py ops --files ember/ops/shape.py   # part of a big module

mutmut reads one `[tool.mutmut]` table (pyproject.toml). This script narrows it to one module: only that
module's files are mutated, and only that module's own test files are collected. mutmut then records which
of those tests execute each function, and runs only those tests against each mutant of it. Without that
narrowing a mutant of `ops.math.add` would run most of the suite (every nn and optim test adds).

mutmut keeps its copy and its results under mutants/; switching module resets the cached results (the test
selection changed), so this script then starts from a clean mutants/; rerunning the same module reruns only
mutants of functions that changed. A summary and
the list of surviving mutants are written to mutants/<module>-summary.txt, their diffs to
mutants/<module>-survivors.diff.
"""
import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# module -> (files to mutate, test files whose coverage picks the tests for each mutant)
MODULES = {
    "serialization": (["ember/serialization.py"], ["tests/test_serialization.py"]),
    "optim": (["ember/optim/*"], ["tests/optim"]),
    # autograd's meta-device path (function._infer_meta, Primitive.infer) is tested in tests/backends/test_meta.py
    # and tests/ops/test_infer.py, and profile_hooks (ember.profiler's hooks into the engine and nn.Module) in
    # tests/test_profiler.py: without them those mutants count as "no tests"
    "autograd": (["ember/autograd/*"], ["tests/autograd", "tests/backends/test_meta.py", "tests/ops/test_infer.py",
                                        "tests/test_profiler.py"]),
    "utils.data": (["ember/utils/data/*"], ["tests/utils"]),
    "nn.functional": (["ember/nn/functional/*"], ["tests/nn"]),
    "ops": (["ember/ops/*"], ["tests/ops", "tests/test_tensor.py", "tests/test_dtype.py"]),
    "jit": (["ember/jit/*"], ["tests/jit"]),
    "keras": (["ember/keras/*"], ["tests/keras"]),
    "amp": (["ember/amp/*"], ["tests/test_amp.py"]),
    "planner": (["ember/planner/*"], ["tests/planner"]),
    # the CPU backend's Python side (the numba loops themselves cannot be mutated: mutmut's trampolines are
    # Python, and numba compiles the loops from their source)
    "backends": (["ember/backends/cpu_conv.py", "ember/backends/cpu_kernels.py", "ember/backends/cpu_pool.py"],
                 ["tests/backends"]),
}

# tests that cannot pass under mutmut, left out of every run of their module: they check the user's
# `file:line`, which mutmut's trampoline.py replaces (a warning's `stacklevel` too), or the
# `axis=`/`keepdims=` aliases its wrappers hide
DESELECT = {
    "autograd": ["tests/autograd/test_anomaly.py::test_backward_nan_names_backward_function_and_forward_line"],
    "ops": ["tests/ops/test_axis_aliases.py"],
    "jit": ["tests/jit/test_guards.py::test_strict_raises_naming_the_guard_and_the_line",
            "tests/jit/test_guards.py::test_value_read_guard_retraces_and_a_guardless_trace_is_stale",
            "tests/jit/test_compile_api.py::test_warnings_point_at_the_callers_line",
            # a fresh interpreter in a temporary directory imports the mutated ember.jit.serialize, whose
            # trampoline then cannot find mutmut's configuration (test_save_load.py runs the same in process)
            "tests/jit/test_save_load.py::test_saved_inference_graph_runs_without_the_model_code",
            "tests/jit/test_save_load.py::test_saved_training_step_trains_in_a_fresh_process"],
    # keras: the user's `file:line` again; and the examples/ script the last test runs is not in mutmut's copy
    "keras": ["tests/keras/test_errors.py::test_errors_end_with_the_users_line",
              "tests/keras/test_callbacks.py::test_mode_warnings_point_at_the_users_line",
              "tests/keras/test_tensorflow_habits.py::test_example_script_learns"],
    # the warnings' file name: mutmut's trampoline is one more frame between the caller and `stacklevel`
    "amp": ["tests/test_amp.py::test_warnings_point_at_the_callers_line"],
}


def summarize(module):
    """Count mutmut's verdicts for the mutated files and list the mutants that are not killed."""
    from mutmut.__main__ import SourceFileMutationData, walk_mutatable_files
    from mutmut.stats import status_by_exit_code

    from mutmut.mutation.diff_apply import get_diff_for_mutant

    counts, not_killed, diffs = {}, [], []
    for path in walk_mutatable_files():
        data = SourceFileMutationData(path=path)
        data.load()
        for name, exit_code in sorted(data.exit_code_by_key.items()):
            status = status_by_exit_code[exit_code]
            counts[status] = counts.get(status, 0) + 1
            if status not in ("killed", "timeout", "caught by type check"):
                not_killed.append(f"{status}: {name}")
                diff = get_diff_for_mutant(name, path=path).splitlines()
                diffs += [f"== {status}: {name}"] + [d for d in diff if d[:1] in "+-" and d[:3] not in ("+++", "---")]
    total = sum(counts.values())
    detected = counts.get("killed", 0) + counts.get("timeout", 0) + counts.get("caught by type check", 0)
    rate = 100.0 * detected / total if total else 0.0
    lines = [f"{module}: {total} mutants, " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
             + f"; killed (incl. timeouts) {detected}/{total} = {rate:.1f}%"]
    lines += ["  " + line for line in not_killed]
    text = "\n".join(lines) + "\n"
    (ROOT / "mutants" / f"{module}-summary.txt").write_text(text)
    (ROOT / "mutants" / f"{module}-survivors.diff").write_text("\n".join(diffs) + "\n")
    print(text, end="")


def _start_fresh_if_module_changed(module):
    """mutmut's cache under mutants/ belongs to one module's file and test selection: switching module
    (or its test selection) starts from a clean copy (keeping the summaries), rerunning a module reuses it."""
    work = ROOT / "mutants"
    marker = work / "module.txt"
    if work.exists() and (not marker.exists() or marker.read_text() != module):
        for entry in work.iterdir():
            if entry.name.endswith(("-summary.txt", "-survivors.diff")):
                continue
            shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
    work.mkdir(exist_ok=True)
    marker.write_text(module)


def run_module(module, files, max_children, deselect, tests=None):
    from mutmut import configuration
    from mutmut.__main__ import cli

    mutate, own_tests = MODULES[module]
    tests = tests or own_tests
    _start_fresh_if_module_changed(module if tests == own_tests else f"{module} {' '.join(tests)}")
    cfg = configuration.config()
    cfg.only_mutate = files or mutate
    deselect = DESELECT.get(module, []) + list(deselect)
    cfg.pytest_add_cli_args_test_selection = tests + [arg for test in deselect for arg in ("--deselect", test)]
    try:
        cli(["run", "--max-children", str(max_children)], standalone_mode=False)
    finally:
        summarize(module)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("module", choices=[*MODULES, "all"])
    parser.add_argument("--files", nargs="+", help="mutate only these files of the module (globs)")
    parser.add_argument("--deselect", action="append", default=[], metavar="NODEID",
                        help="leave out a test that fails on the unmutated code (mutmut needs a green run)")
    parser.add_argument("--tests", nargs="+", metavar="PATH",
                        help="collect these test files instead of the module's own (ember/ops/optim_prims.py is "
                             "tested by tests/optim and tests/backends)")
    parser.add_argument("--max-children", type=int, default=2, help="mutants tested in parallel")
    args = parser.parse_args()

    os.chdir(ROOT)
    # one thread per test process: several run at once on a small shared machine
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    if args.module != "all":
        run_module(args.module, args.files, args.max_children, args.deselect, args.tests)
        return
    # each module in a fresh process: mutmut keeps its configuration and state in globals
    for module in MODULES:
        cmd = [sys.executable, __file__, module, "--max-children", str(args.max_children)]
        subprocess.run(cmd, check=True)


if __name__ == "__main__":
    main()
