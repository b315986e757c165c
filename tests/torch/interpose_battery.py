"""PyTorch GEMMs under the cuBLAS interposer, checked against a float64 reference and against the
same program without it.

    python tests/torch/interpose_battery.py run OUT.pt        # computes every case, saves outputs
    python tests/torch/interpose_battery.py compare PLAIN.pt PRELOADED.pt

`run` is executed twice on the GPU machine (lab/device/device_check.sh, step torch-interpose): plain,
and under `tunable run --tune`. `compare` fails (exit 1) when a case is outside its tolerance of the
float64 reference in either run, or when a preloaded output differs from the plain one without
being within tolerance (a forwarded call must be bitwise cuBLAS's; a served one within tolerance).
Every case's inputs come from a seed that the report prints.
"""
import sys

import torch

# Per output dtype: |got - ref| <= atol * sqrt(k) + rtol * |ref| for inputs uniform in [-1, 1].
TOL = {torch.float32: (2e-3, 2e-3), torch.float16: (2e-3, 4e-3), torch.bfloat16: (8e-3, 1.6e-2)}


def cases():
    """(name, k, fn(gen) -> (out, ref64)) over the GEMM entry points PyTorch uses."""
    out = []

    def rand(gen, *shape, dtype):
        return (torch.rand(*shape, generator=gen, device="cuda", dtype=torch.float32) * 2 - 1).to(dtype)

    for dtype in (torch.bfloat16, torch.float16, torch.float32):
        d = str(dtype).split(".")[-1]
        # F.linear as decode and prefill run it (cublasGemmEx TN, n = tokens), odd sizes included.
        for m, k, n in ((1, 4096, 4096), (8, 2048, 6144), (16, 4096, 1024), (5, 1000, 777), (128, 512, 1536)):
            def linear(gen, m=m, k=k, n=n, dtype=dtype):
                x, w = rand(gen, m, k, dtype=dtype), rand(gen, n, k, dtype=dtype)
                return torch.nn.functional.linear(x, w), x.double() @ w.double().t()
            out.append((f"linear_{d}_m{m}_k{k}_n{n}", k, linear))
        # torch.mm over the four transposes (views, not copies: cuBLAS sees T or N).
        for ta in (False, True):
            for tb in (False, True):
                def mm(gen, ta=ta, tb=tb, dtype=dtype):
                    a = rand(gen, 96, 200, dtype=dtype) if not ta else rand(gen, 200, 96, dtype=dtype).t()
                    b = rand(gen, 200, 72, dtype=dtype) if not tb else rand(gen, 72, 200, dtype=dtype).t()
                    return a @ b, a.double() @ b.double()
                out.append((f"mm_{d}_{'t' if ta else 'n'}{'t' if tb else 'n'}", 200, mm))
        # addmm with alpha and beta (a 2-D C: cublasGemmEx with beta != 0).
        def addmm(gen, dtype=dtype):
            c, a, b = rand(gen, 64, 48, dtype=dtype), rand(gen, 64, 300, dtype=dtype), rand(gen, 300, 48, dtype=dtype)
            return (torch.addmm(c, a, b, beta=0.5, alpha=2.0),
                    0.5 * c.double() + 2.0 * (a.double() @ b.double()))
        out.append((f"addmm_{d}_alpha2_beta05", 300, addmm))
        # bmm / baddbmm: cublasGemmStridedBatchedEx (and Sgemm/HgemmStridedBatched paths).
        def bmm(gen, dtype=dtype):
            a, b = rand(gen, 6, 40, 130, dtype=dtype), rand(gen, 6, 130, 24, dtype=dtype)
            return torch.bmm(a, b), a.double() @ b.double()
        out.append((f"bmm_{d}", 130, bmm))
        def baddbmm(gen, dtype=dtype):
            c, a, b = rand(gen, 4, 32, 16, dtype=dtype), rand(gen, 4, 32, 64, dtype=dtype), rand(gen, 4, 64, 16, dtype=dtype)
            return (torch.baddbmm(c, a, b, beta=0.25, alpha=1.5),
                    0.25 * c.double() + 1.5 * (a.double() @ b.double()))
        out.append((f"baddbmm_{d}", 64, baddbmm))
        # A strided (non-contiguous) input: a column slice keeps its leading dimension.
        def sliced(gen, dtype=dtype):
            big = rand(gen, 256, 512, dtype=dtype)
            a, b = big[:, 100:356], rand(gen, 256, 64, dtype=dtype)
            return a @ b, a.double() @ b.double()
        out.append((f"mm_{d}_sliced_lda", 256, sliced))
        # F.linear with a bias and addmm with a 1-D bias: cublasLtMatmul with the bias epilogue.
        for m, k, n in ((1, 4096, 4096), (8, 2048, 2560), (16, 1024, 1000)):
            def linear_bias(gen, m=m, k=k, n=n, dtype=dtype):
                x, w, b = rand(gen, m, k, dtype=dtype), rand(gen, n, k, dtype=dtype), rand(gen, n, dtype=dtype)
                return torch.nn.functional.linear(x, w, b), x.double() @ w.double().t() + b.double()
            out.append((f"linear_bias_{d}_m{m}_k{k}_n{n}", k, linear_bias))
        if dtype != torch.float32:
            # bias + ReLU / GELU-tanh epilogues (torch._addmm_activation, as fused linear layers call it).
            for gelu in (False, True):
                def act(gen, gelu=gelu, dtype=dtype):
                    b, a, w = rand(gen, 768, dtype=dtype), rand(gen, 8, 512, dtype=dtype), rand(gen, 512, 768, dtype=dtype)
                    y = a.double() @ w.double() + b.double()
                    ref = torch.nn.functional.gelu(y, approximate="tanh") if gelu else torch.relu(y)
                    return torch._addmm_activation(b, a, w, use_gelu=gelu), ref
                out.append((f"addmm_{'gelu' if gelu else 'relu'}_{d}", 512, act))
    # torch._scaled_mm: FP8 e4m3 with per-tensor scales, bf16 out (cublasLtMatmul with scale pointers).
    for m, k, n in ((16, 4096, 4096), (32, 2048, 1024)):
        def scaled(gen, m=m, k=k, n=n):
            x = rand(gen, m, k, dtype=torch.float32).to(torch.float8_e4m3fn)
            w = rand(gen, n, k, dtype=torch.float32).to(torch.float8_e4m3fn)
            sa = torch.tensor(0.5, device="cuda")
            sb = torch.tensor(1.5, device="cuda")
            y = torch._scaled_mm(x, w.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)
            return y, (x.double() * 0.5) @ (w.double() * 1.5).t()
        out.append((f"scaled_mm_e4m3_m{m}_k{k}_n{n}", k, scaled))
    return out


def run(path):
    torch.backends.cuda.matmul.allow_tf32 = False
    results = {}
    for i, (name, k, fn) in enumerate(cases()):
        for rep in range(3):  # the first call may tune; later ones are served or forwarded
            got, ref = fn(torch.Generator(device="cuda").manual_seed(1000 + i))
        torch.cuda.synchronize()
        results[name] = {"got": got.cpu(), "ref": ref.cpu(), "k": k, "seed": 1000 + i}
    torch.save(results, path)
    print(f"{len(results)} cases computed")


def within(got, ref, k):
    atol, rtol = TOL[got.dtype]
    err = (got.double() - ref).abs()
    bound = atol * k ** 0.5 + rtol * ref.abs()
    bad = (err > bound) | ~torch.isfinite(got.double())
    return int(bad.sum()), float(err.max())


def compare(plain_path, pre_path):
    plain, pre = torch.load(plain_path), torch.load(pre_path)
    failures, same, differ = 0, 0, 0
    for name, p in plain.items():
        q = pre.get(name)
        if q is None:
            print(f"FAIL {name}: missing from the preloaded run")
            failures += 1
            continue
        for tag, r in (("plain", p), ("preloaded", q)):
            bad, worst = within(r["got"], r["ref"], r["k"])
            if bad:
                print(f"FAIL {name} ({tag}, seed {r['seed']}): {bad} elements outside tolerance, max error {worst:.3g}")
                failures += 1
        if torch.equal(p["got"], q["got"]):
            same += 1
        else:
            differ += 1
            print(f"served {name}: differs from cuBLAS by {float((p['got'].double() - q['got'].double()).abs().max()):.3g} "
                  f"(within tolerance of the float64 reference)")
    print(f"{len(plain)} cases: {same} bitwise equal to plain cuBLAS, {differ} served by tuned solutions, "
          f"{failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "run":
        run(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] == "compare":
        sys.exit(compare(sys.argv[2], sys.argv[3]))
    else:
        print(__doc__)
        sys.exit(2)
