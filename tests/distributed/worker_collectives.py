"""MPI job: every collective against NumPy for several dtypes and shapes (non-contiguous and 0-d too).
Prints 'CASES n' and 'FAIL ...' lines; rank r's data is a function of (case, r), so each rank computes
the expected result itself."""
import traceback

import numpy as np

import ember
import ember.distributed as dist

dist.init_process_group("mpi")
R, W = dist.get_rank(), dist.get_world_size()
FAILS = []
COUNT = [0]

DTYPES = ["float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8", "bool"]
SHAPES = [(), (5,), (3, 4), (2, 3, 4)]


def data(shape, dtype, rank, salt=0):
    rng = np.random.default_rng(1000 * salt + rank)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype in ("int32", "int64", "uint8"):
        return rng.integers(1, 4, size=shape).astype(dtype)
    a = rng.integers(-8, 8, size=shape).astype(np.float64) / 4    # exact in every float dtype
    return a.astype(np.float32) if dtype == "bfloat16" else a.astype(dtype)


def make(a, dtype, noncontig):
    t = ember.tensor(a, dtype=getattr(ember, dtype))
    if noncontig and t.dim() >= 2:
        t = ember.tensor(np.ascontiguousarray(np.swapaxes(a, -1, -2)), dtype=getattr(ember, dtype)).transpose(-1, -2)
    return t


def host(t):
    return t.float().numpy() if t.dtype == ember.bfloat16 else t.numpy()


def check(name, got, want, tol=0.0):
    COUNT[0] += 1
    want = np.asarray(want)
    ok = got.shape == want.shape and np.allclose(got.astype(np.float64), want.astype(np.float64), atol=tol, rtol=tol)
    if not ok:
        FAILS.append(f"{name}: got {got!r} want {want!r}")


def case(name, fn):
    try:
        fn()
    except Exception:
        FAILS.append(f"{name}: raised {traceback.format_exc()}")


NP_RED = {"sum": lambda xs: np.sum(xs, 0), "max": lambda xs: np.max(xs, 0), "min": lambda xs: np.min(xs, 0),
          "product": lambda xs: np.prod(xs, 0), "avg": lambda xs: np.mean(xs, 0)}

for dtype in DTYPES:
    for shape in SHAPES:
        for nc in (False, True):
            if nc and len(shape) < 2:
                continue
            tag = f"{dtype}{shape}{' nc' if nc else ''}"
            for op in ("sum", "max", "min", "product", "avg"):
                if op == "avg" and dtype == "bool":
                    continue

                def f(op=op):
                    xs = [data(shape, dtype, r, 1) for r in range(W)]
                    t = make(xs[R], dtype, nc)
                    dist.all_reduce(t, op)
                    if dtype == "bool":
                        want = np.any(xs, 0) if op in ("sum", "max") else np.all(xs, 0)
                    else:
                        want = NP_RED[op](np.stack([x.astype(np.float64) for x in xs]))
                        if np.dtype(np.float64) != np.dtype(dtype if dtype != "bfloat16" else "float32") \
                                and dtype in ("int32", "int64", "uint8"):
                            want = np.trunc(want) if op == "avg" else want.astype(dtype)
                    check(f"all_reduce {op} {tag}", host(t), want, 1e-2 if dtype in ("float16", "bfloat16") else 1e-6)
                case(f"all_reduce {op} {tag}", f)

            def bcast():
                for src in range(W):
                    t = make(data(shape, dtype, R, 2), dtype, nc)
                    dist.broadcast(t, src)
                    check(f"broadcast src={src} {tag}", host(t), data(shape, dtype, src, 2).astype(np.float64))
            case(f"broadcast {tag}", bcast)

            def ag():
                outs = [make(np.zeros(shape, "float32").astype(dtype) if dtype != "bfloat16" else np.zeros(shape, "float32"),
                             dtype, nc) for _ in range(W)]
                dist.all_gather(outs, make(data(shape, dtype, R, 3), dtype, nc))
                for r in range(W):
                    check(f"all_gather[{r}] {tag}", host(outs[r]), data(shape, dtype, r, 3).astype(np.float64))
            case(f"all_gather {tag}", ag)

            def gather_scatter():
                dst = W - 1
                lst = [ember.zeros(shape, dtype=getattr(ember, dtype)) for _ in range(W)] if R == dst else None
                dist.gather(make(data(shape, dtype, R, 4), dtype, nc), lst, dst=dst)
                if R == dst:
                    for r in range(W):
                        check(f"gather[{r}] {tag}", host(lst[r]), data(shape, dtype, r, 4).astype(np.float64))
                out = make(data(shape, dtype, R, 9), dtype, nc)
                src_list = [make(data(shape, dtype, 10 + r, 5), dtype, nc) for r in range(W)] if R == 0 else None
                dist.scatter(out, src_list, src=0)
                check(f"scatter {tag}", host(out), data(shape, dtype, 10 + R, 5).astype(np.float64))
            case(f"gather/scatter {tag}", gather_scatter)

            def red():
                for op in ("sum", "max"):
                    xs = [data(shape, dtype, r, 11) for r in range(W)]
                    t = make(xs[R], dtype, nc)
                    dist.reduce(t, dst=W - 1, op=op)
                    if R == W - 1:
                        if dtype == "bool":
                            want = np.any(xs, 0)
                        else:
                            want = NP_RED[op](np.stack([x.astype(np.float64) for x in xs]))
                    else:
                        want = xs[R].astype(np.float64)     # untouched off the root
                    check(f"reduce {op} {tag}", host(t), want, 1e-2 if dtype in ("float16", "bfloat16") else 1e-6)
            case(f"reduce {tag}", red)

            def a2a():
                ins = [make(data(shape, dtype, 10 * R + j, 12), dtype, nc) for j in range(W)]
                outs = [ember.zeros(shape, dtype=getattr(ember, dtype)) for _ in range(W)]
                dist.all_to_all(outs, ins)
                for i in range(W):
                    check(f"all_to_all[{i}] {tag}", host(outs[i]), data(shape, dtype, 10 * i + R, 12).astype(np.float64))
            case(f"all_to_all {tag}", a2a)

            if dtype != "bool":
                def rs():
                    ins = [make(data(shape, dtype, 100 * r + k, 6), dtype, nc) for k in range(W)
                           for r in [R]]
                    out = make(np.zeros(shape, "float32"), "float32", nc).to(getattr(ember, dtype))
                    dist.reduce_scatter(out, ins)
                    want = sum(data(shape, dtype, 100 * r + R, 6).astype(np.float64) for r in range(W))
                    if dtype in ("int32", "int64", "uint8"):
                        want = want.astype(dtype)
                    check(f"reduce_scatter {tag}", host(out), want, 1e-2 if dtype in ("float16", "bfloat16") else 1e-6)
                case(f"reduce_scatter {tag}", rs)

            def p2p():
                if W < 2:
                    return
                if R == 0:
                    dist.send(make(data(shape, dtype, 7, 7), dtype, nc), dst=1, tag=3)
                elif R == 1:
                    t = make(data(shape, dtype, 1, 8), dtype, nc)
                    sender = dist.recv(t, tag=3)
                    check(f"recv sender {tag}", np.asarray(sender), 0)
                    check(f"send/recv {tag}", host(t), data(shape, dtype, 7, 7).astype(np.float64))
            case(f"send/recv {tag}", p2p)


def objects():
    lst = [{"a": [1, 2]}, "x", 3.5] if R == 0 else [None, None, None]
    dist.broadcast_object_list(lst, src=0)
    COUNT[0] += 1
    if lst != [{"a": [1, 2]}, "x", 3.5]:
        FAILS.append(f"broadcast_object_list: {lst}")
    got = [None] * W
    dist.all_gather_object(got, ("rank", R))
    COUNT[0] += 1
    if got != [("rank", r) for r in range(W)]:
        FAILS.append(f"all_gather_object: {got}")


case("objects", objects)


def asyncs():
    t = ember.full((1000,), float(R + 1))
    w = dist.all_reduce(t, async_op=True)
    w2 = dist.broadcast(ember.ones(3) * R, src=0, async_op=True)
    w.wait()
    w2.wait()
    COUNT[0] += 1
    if not (w.is_completed() and w2.is_completed()):
        FAILS.append("async: is_completed False after wait")
    check("async all_reduce", t.numpy(), np.full(1000, W * (W + 1) / 2))
    dist.barrier()


case("async", asyncs)


def tensor_forms_and_p2p():
    # the *_tensor forms (one flat output), non-blocking point to point, the backend queries
    COUNT[0] += 1
    if dist.get_backend() != "mpi" or not dist.is_mpi_available():
        FAILS.append(f"get_backend {dist.get_backend()!r}, is_mpi_available {dist.is_mpi_available()}")
    out = ember.zeros(W * 3)
    dist.all_gather_into_tensor(out, ember.full((3,), float(R)))
    check("all_gather_into_tensor", out.numpy(), np.repeat(np.arange(W, dtype=np.float64), 3))
    part = ember.zeros(2)
    dist.reduce_scatter_tensor(part, ember.arange(2 * W, dtype=ember.float32) + R)
    check("reduce_scatter_tensor", part.numpy(),
          sum(np.arange(2 * W, dtype=np.float64)[2 * R:2 * R + 2] + r for r in range(W)))
    if W >= 2 and R < 2:
        if R == 0:
            work = dist.isend(ember.arange(4, dtype=ember.float32) * 10, dst=1, tag=9)
        else:
            buf = ember.zeros(4)
            work = dist.irecv(buf, src=0, tag=9)
        if not isinstance(work, dist.Work):
            FAILS.append(f"isend/irecv returned {type(work).__name__}, not Work")
        work.wait()
        if R == 1:
            check("isend/irecv", buf.numpy(), np.arange(4) * 10.0)
    dist.barrier()


case("tensor forms, isend/irecv", tensor_forms_and_p2p)


def records_assign():
    # the write-back is an Assign primitive call: a PrimitiveLog sees it
    from ember.autograd.primitive_log import PrimitiveLog
    t = ember.ones(4)
    with PrimitiveLog() as log:
        dist.all_reduce(t)
    COUNT[0] += 1
    if "Assign" not in str(log.counts()):
        FAILS.append(f"all_reduce did not write with Assign: {log.counts()}")


case("assign", records_assign)

print(f"[rank {R}] CASES {COUNT[0]}", flush=True)
for f in FAILS:
    print(f"[rank {R}] FAIL {f}", flush=True)
dist.destroy_process_group()
