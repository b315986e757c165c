# PyTorch baselines of the fused-op benchmark (bench/fused_ops_bench.cpp): eager and torch.compile,
# each graph-timed (>= --graph-calls calls cycling through the rotated inputs, captured in one CUDA
# graph, replays timed with events, per-call median) and back-to-back (timed as the C++ driver's
# EventTimer does: a sleep kernel before every 32 calls holds the GPU while the host queues them, an
# event pair around every 8 calls, per-call median of the groups), with inputs rotated over > 2x L2. Same ops, shapes and byte counts as
# the C++ driver; the JSON it writes is what `tunable_fused_bench --torch FILE` reads.
# Usage: python3 fused_ops_torch.py OUT.json [--ops add_rmsnorm,silu_and_mul] [--dtype bf16]
#          [--rows 1,16,64,128,1024,2048,4096,8192] [--hidden 4096,8192,16384] [--quick]
import argparse, json, time, torch
import torch.nn.functional as F

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--ops", default="add_rmsnorm,silu_and_mul")
ap.add_argument("--dtype", default="bf16")
ap.add_argument("--rows", default="1,16,64,128,1024,2048,4096,8192")
ap.add_argument("--hidden", default="4096,8192,16384")
ap.add_argument("--reps", type=int, default=20)
ap.add_argument("--b2b-iters", type=int, default=200)
ap.add_argument("--graph-calls", type=int, default=100,
                help="calls per timed graph, rounded up to whole rotations of the input copies")
ap.add_argument("--quick", action="store_true", help="rows 1,64,4096 at hidden 4096")
args = ap.parse_args()
DT = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[args.dtype]
ES = torch.tensor([], dtype=DT).element_size()
ROWS = [1, 64, 4096] if args.quick else [int(v) for v in args.rows.split(",")]
HIDDEN = [4096] if args.quick else [int(v) for v in args.hidden.split(",")]
EPS, FP8 = 1e-6, torch.float8_e4m3fn


def rms(x, w, gemma):  # x already the (rounded) input; fp32 math, one rounding (as our kernels)
    xf = x.float()
    y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS)
    return y * (1.0 + w.float() if gemma else w.float())


def fp8_dyn(y):
    s = (y.abs().amax(-1, keepdim=True) / 448.0).clamp(min=1.0 / (448 * 512))
    return (y / s).clamp(-448, 448).to(FP8), s


# op name -> (is_act, make inputs(rows, hidden) -> tuple, fn(*inputs), bytes(rows, hidden))
def norm_inputs(fused):
    def make(n, h):
        t = [torch.randn(n, h, device="cuda", dtype=DT)]
        if fused:
            t.append(torch.randn(n, h, device="cuda", dtype=DT))
        t.append(torch.randn(h, device="cuda", dtype=DT))
        return tuple(t)
    return make


def act_inputs(n, h):
    return (torch.randn(n, 2 * h, device="cuda", dtype=DT), torch.tensor(1.0 / 128, device="cuda"))


def add_rmsnorm(x, r, w, gemma=False):
    r = x + r  # rounded to the dtype, as the residual stream
    return rms(r, w, gemma).to(DT), r


def add_rmsnorm_fp8dyn(x, r, w):
    r = x + r
    return fp8_dyn(rms(r, w, False)), r


def silu_mul(x, s=None):
    d = x.shape[-1] // 2
    return F.silu(x[..., :d].float()) * x[..., d:].float()


def gelu_mul(x, s=None):
    d = x.shape[-1] // 2
    return F.gelu(x[..., :d].float(), approximate="tanh") * x[..., d:].float()


OPS = {
    "rmsnorm": (False, norm_inputs(False), lambda x, w: rms(x, w, False).to(DT),
                lambda n, h: (2 * n * h + h) * ES),
    "add_rmsnorm": (False, norm_inputs(True), lambda x, r, w: add_rmsnorm(x, r, w),
                    lambda n, h: (4 * n * h + h) * ES),
    "add_rmsnorm_gemma": (False, norm_inputs(True), lambda x, r, w: add_rmsnorm(x, r, w, True),
                          lambda n, h: (4 * n * h + h) * ES),
    "add_rmsnorm_fp8dyn": (False, norm_inputs(True), add_rmsnorm_fp8dyn,
                           lambda n, h: (3 * n * h + h) * ES + n * h + 4 * n),
    "silu_and_mul": (True, act_inputs, lambda x, s: silu_mul(x).to(DT), lambda n, h: 3 * n * h * ES),
    "gelu_and_mul": (True, act_inputs, lambda x, s: gelu_mul(x).to(DT), lambda n, h: 3 * n * h * ES),
    "silu_and_mul_fp8": (True, act_inputs, lambda x, s: (silu_mul(x) / s).clamp(-448, 448).to(FP8),
                         lambda n, h: 2 * n * h * ES + n * h),
}


def graph_us(fns, reps, calls=None):
    # `calls` (default: one per function) cycles through fns: whole rotations, enough calls that the
    # graph's own launch is amortized.
    calls = calls or len(fns)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for f in fns:
            f()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    # Every call's outputs stay alive until the graph is gone: otherwise the graph's pool hands each
    # call the same output memory and the writes never leave L2, while our kernels write rotating
    # buffers that do.
    # Outputs of the last len(fns) calls are alive at any time, so the pool rotates output memory
    # with the same period as the inputs.
    keep = [None] * len(fns)
    with torch.cuda.graph(g):
        for i in range(calls):
            keep[i % len(fns)] = fns[i % len(fns)]()
    for _ in range(2):
        g.replay()
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ts = []
    for _ in range(reps):
        e0.record(); g.replay(); e1.record(); e1.synchronize()
        ts.append(e0.elapsed_time(e1) / calls * 1e3)
    del g, keep
    ts.sort()
    return ts[len(ts) // 2]


def b2b_us(fns, iters):
    # One live output slot per rotated input (see graph_us): the allocator cannot recycle an output
    # written one call ago. As EventTimer: events around groups of 8 calls, a sleep before every 32
    # (longer than the host takes to queue them), so the GPU's back-to-back time is what is timed.
    group, per_prime, sleep_cycles_per_call = 8, 32, 100_000
    keep = [f() for f in fns]
    groups = max(1, iters // group)
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(groups)]
    torch.cuda.synchronize()
    for k in range(groups):
        if (k * group) % per_prime == 0:
            torch.cuda._sleep(sleep_cycles_per_call * per_prime)
        ev[k][0].record()
        for j in range(group):
            i = k * group + j
            keep[i % len(fns)] = fns[i % len(fns)]()
        ev[k][1].record()
    ev[-1][1].synchronize()
    ts = sorted(e0.elapsed_time(e1) / group * 1e3 for e0, e1 in ev)
    return ts[len(ts) // 2]


def per_call_us(fn, iters):
    # Long calls (the 1 GiB copy of the bandwidth probe): an event pair around each.
    fn()
    ts = []
    for _ in range(iters):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record(); fn(); e1.record(); e1.synchronize()
        ts.append(e0.elapsed_time(e1) * 1e3)
    ts.sort()
    return ts[len(ts) // 2]


dev = torch.cuda.get_device_name()
L2 = torch.cuda.get_device_properties(0).L2_cache_size
a = torch.empty(2**30, dtype=torch.uint8, device="cuda"); b = torch.empty_like(a)
BW = 2 * a.numel() / (per_call_us(lambda: b.copy_(a), 10) * 1e-6)
del a, b
empty = torch.empty(1, device="cuda")
empty_graph = graph_us([lambda: empty.add_(1)] * 1000, args.reps)
print(f"device {dev} L2 {L2 >> 20} MiB BW {BW / 1e12:.3f} TB/s, 1-element add in a graph {empty_graph:.2f} us",
      flush=True)

rows_out = []
t_start = time.time()
for name in args.ops.split(","):
    is_act, make, fn, nbytes = OPS[name]
    for h in HIDDEN:
        for n in ROWS:
            per_copy = nbytes(n, h)
            copies = max(2, min(4096, int(2 * L2 // per_copy) + 1))
            data = [make(n, h) for _ in range(copies)]
            torch._dynamo.reset()
            cfn = torch.compile(fn, dynamic=False)
            tc0 = time.time(); cfn(*data[0]); torch.cuda.synchronize(); compile_s = time.time() - tc0
            eager = [(lambda d=d: fn(*d)) for d in data]
            comp = [(lambda d=d: cfn(*d)) for d in data]
            iters = max(args.b2b_iters, copies)
            per_graph = copies * -(-args.graph_calls // copies)
            r = dict(op=name, dtype=args.dtype, rows=n, hidden=h, cols=2 * h if is_act else h, bytes=per_copy,
                     floor_us=per_copy / BW * 1e6, copies=copies, compile_s=compile_s,
                     eager_graph_us=graph_us(eager, args.reps, per_graph),
                     compiled_graph_us=graph_us(comp, args.reps, per_graph),
                     eager_b2b_us=b2b_us(eager, iters), compiled_b2b_us=b2b_us(comp, iters))
            rows_out.append(r)
            print(f"{name:20s} [{n},{r['cols']}] eager {r['eager_graph_us']:8.2f}us graph {r['eager_b2b_us']:8.2f}us b2b"
                  f"  compiled {r['compiled_graph_us']:8.2f}us graph {r['compiled_b2b_us']:8.2f}us b2b"
                  f"  floor {r['floor_us']:7.2f}us", flush=True)
            del data, eager, comp, cfn
            torch.cuda.empty_cache()
json.dump(dict(device=dev, bw=BW, l2_bytes=L2, empty_graph_us=empty_graph, torch=torch.__version__,
               seconds=time.time() - t_start, rows=rows_out), open(args.out, "w"), indent=1)
print(f"wrote {args.out}")
