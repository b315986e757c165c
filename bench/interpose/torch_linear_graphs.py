"""F.linear at decode sizes through PyTorch, as a program runs it: cuBLAS plain, or under the cuBLAS
interposer (`tunable run --tune|--use -- python ...`). Each problem is timed as a CUDA graph of
calls over rotated weights (more bytes than the L2 holds), so host launch costs are out and what is
left is the GEMM kernels' time on the GPU.

    python bench/interpose/torch_linear_graphs.py OUT.json [--ms 1,8,16] [--dtype bf16]
"""
import argparse
import json
import os

import torch
import torch.nn.functional as F

SHAPES = {  # (N, K) of the Llama-3-8B and Gemma-2B decoder projections
    "llama8b_qkv": (6144, 4096), "llama8b_o": (4096, 4096), "llama8b_gateup": (28672, 4096),
    "llama8b_down": (4096, 14336), "gemma2b_qkv": (2560, 2048), "gemma2b_o": (2048, 2048),
    "gemma2b_gateup": (32768, 2048), "gemma2b_down": (2048, 16384),
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--ms", default="1,8,16")
    ap.add_argument("--dtype", default="bf16")
    args = ap.parse_args()
    dt = {"bf16": torch.bfloat16, "fp16": torch.float16}[args.dtype]
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    rows = []
    for name, (n, k) in SHAPES.items():
        wbytes = n * k * dt.itemsize
        copies = max(2, min(64, -(-8 * l2 // wbytes)))  # 8x the L2, as the tuner rotates
        ws = [torch.randn(n, k, device="cuda", dtype=dt) for _ in range(copies)]
        for m in [int(x) for x in args.ms.split(",")]:
            x = torch.randn(m, k, device="cuda", dtype=dt)
            outs = [F.linear(x, w) for w in ws]  # outside any capture: a miss tunes here in --tune
            torch.cuda.synchronize()
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for w in ws:
                    F.linear(x, w)
            torch.cuda.current_stream().wait_stream(s)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                for i, w in enumerate(ws):
                    outs[i] = F.linear(x, w)
            ref = x.double() @ ws[-1].double().t()
            for _ in range(3):
                g.replay()
            torch.cuda.synchronize()
            err = float((outs[-1].double() - ref).abs().max() / ref.abs().max())
            times = []
            for _ in range(15):
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record()
                g.replay()
                b.record()
                b.synchronize()
                times.append(a.elapsed_time(b) * 1e3 / copies)
            times.sort()
            rows.append(dict(shape=name, M=m, N=n, K=k, us=times[len(times) // 2], rel_err=err, copies=copies))
            print(f"{name:16s} M={m:3d} {rows[-1]['us']:8.2f} us  rel.err {err:.2e}", flush=True)
            del g
        del ws
        torch.cuda.empty_cache()
    json.dump(dict(device=torch.cuda.get_device_name(), torch=torch.__version__,
                   preload=os.environ.get("LD_PRELOAD", ""), tuning=os.environ.get("TUNABLE_TUNING", ""),
                   rows=rows), open(args.out, "w"), indent=1)


if __name__ == "__main__":
    main()
