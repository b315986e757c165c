// Host cost of a tuned call: tunable::gemm (validate, lookup, dispatch) against a direct
// cublasLtMatmul with the same algorithm, descriptors created once. Google Benchmark times the
// enqueue of a batch of calls (host only); the GPU is drained outside the timed region so the
// launch queue never fills.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <vector>

#include "cuda/cuda_util.hpp"
#include "tune/cuda_timing.hpp"
#include "gemm/cuda/cublaslt.hpp"
#include "gemm/cpu/cpu_gemm.hpp"
#include "gemm/cuda/cuda_resources.hpp"
#include "gemm/cuda/skinny_provider.hpp"
#include "tunable/gemm.hpp"

namespace tunable {
namespace {

constexpr int kBatch = 256;

/// A context on `dev` that finds `solution` stored for `d` and never tunes: its results file is
/// written here with the device's own validators, so a tuned call dispatches exactly that solution.
std::unique_ptr<Context> context_with_result(Device dev, const GemmDesc& d, const std::string& solution) {
  Options o;
  o.enabled = true;
  o.tuning = false;
  o.filename = "/tmp/tunable_overhead_%d.csv";
  {
    Context probe(dev, o);
    std::ofstream f(probe.results_path(), std::ios::trunc);
    for (const auto& [k, v] : probe.validators()) f << "Validator," << k << "," << v << "\n";
    f << op_signature(d) << "," << params_signature(d) << "," << solution << ",0.01\n";
  }
  return std::make_unique<Context>(dev, o);
}

struct Fixture {
  GemmDesc d = GemmDesc::make(DataType::kBF16, Transpose::kT, Transpose::kN, 256, 16, 256);
  DeviceBuffer a, b, c;
  cudaStream_t s = nullptr;
  std::unique_ptr<CudaGemmResources> res;
  SolutionPtr<GemmArgs> lt0;  // cuBLASLt heuristic #0, rebuilt from its name
  std::unique_ptr<Context> ctx;
  void* ws = nullptr;

  Fixture() {
    throw_if_error(a.allocate(1 << 20));
    throw_if_error(b.allocate(1 << 20));
    throw_if_error(c.allocate(1 << 20));
    throw_if_error(fill_random(a.get(), DataType::kBF16, 1 << 19, 1, 1.0f, nullptr));
    throw_if_error(fill_random(b.get(), DataType::kBF16, 1 << 19, 2, 1.0f, nullptr));
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    throw_if_error(CudaGemmResources::create(0, 32u << 20, &res));
    std::vector<SolutionPtr<GemmArgs>> hs;
    throw_if_error(make_lt_heuristic_provider(res.get())->enumerate(GemmArgs{d, {}}, &hs));
    lt0 = hs.at(0);
    throw_if_error(res->workspace(s, lt0->workspace_bytes(GemmArgs{d, {}}), &ws));
    ctx = context_with_result(Device::cuda(0), d, lt0->name());
  }
  GemmOperands ops() const { return GemmOperands{a.get(), b.get(), c.get()}; }
};

Fixture& fx() {
  static Fixture f;
  return f;
}

void BM_DirectCublasLt(benchmark::State& state) {
  Fixture& f = fx();
  const GemmArgs args{f.d, f.ops()};
  const std::size_t wsb = f.lt0->workspace_bytes(args);
  for (auto _ : state) {
    for (int i = 0; i < kBatch; ++i)
      if (!f.lt0->run(args, f.ws, wsb, reinterpret_cast<Stream>(f.s)).is_ok()) {
        // Leave the timed loop at once: pausing the timer after an error aborts the benchmark.
        state.SkipWithError("run");
        return;
      }
    state.PauseTiming();
    cudaStreamSynchronize(f.s);
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
}

void BM_TunedDispatch(benchmark::State& state) {
  Fixture& f = fx();
  if (!gemm(*f.ctx, f.d, f.ops(), reinterpret_cast<Stream>(f.s)).is_ok()) {
    state.SkipWithError("first call");
    return;
  }
  // Google Benchmark calls this function more than once: every call so far must have been a hit.
  if (f.ctx->stats().hits == 0 || f.ctx->stats().fallbacks != 0 || f.ctx->stats().tuned != 0) {
    state.SkipWithError("stored result not used");
    return;
  }
  for (auto _ : state) {
    for (int i = 0; i < kBatch; ++i)
      if (!gemm(*f.ctx, f.d, f.ops(), reinterpret_cast<Stream>(f.s)).is_ok()) {
        state.SkipWithError("gemm");
        return;
      }
    state.PauseTiming();
    cudaStreamSynchronize(f.s);
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
  state.SetLabel(f.lt0->name());
}

// One named skinny candidate per family on the fixture's problem (256 x 256 weight, 16 tokens),
// run directly: what each family's launcher costs on the host per call (the TMA-fed families
// encode their tensor maps on every call, the others only fill a parameter block).
const char* const kSkinnyNames[] = {"skinny_gemv_bf16_r1_t256_ks1", "skinny_mma_bf16_bm16_wk8_ks1",
                                    "skinny_mmap_bf16_bm16_wk8_ks1_wc", "skinny_mmt_bf16_bm16_wk4_ks1_b8s2",
                                    "skinny_wgt_bf16_bm64_wk4_ks1_b4s3"};

void BM_DirectSkinny(benchmark::State& state) {
  Fixture& f = fx();
  const char* name = kSkinnyNames[state.range(0)];
  GemmDesc d = f.d;
  d.n = std::string(name).find("_gemv_") != std::string::npos ? 8 : 16;  // the GEMV takes <= 8 tokens
  const GemmArgs args{d, f.ops()};
  const auto sol = skinny_gemm_provider(&f.res->skinny())->from_name(name, args);
  if (sol == nullptr) {
    state.SkipWithError("unknown name");
    return;
  }
  const Status can = sol->can_implement(args);
  if (!can.is_ok()) {
    state.SkipWithError(can.to_string().c_str());
    return;
  }
  const std::size_t wsb = sol->workspace_bytes(args);
  void* ws = nullptr;
  if (wsb > 0 && !f.res->workspace(f.s, wsb, &ws).is_ok()) {
    state.SkipWithError("workspace");
    return;
  }
  for (auto _ : state) {
    for (int i = 0; i < kBatch; ++i) {
      const Status st = sol->run(args, ws, wsb, reinterpret_cast<Stream>(f.s));
      if (!st.is_ok()) {
        state.SkipWithError(st.to_string().c_str());
        return;
      }
    }
    state.PauseTiming();
    cudaStreamSynchronize(f.s);
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
  state.SetLabel(name);
}

// The same comparison without a GPU: a 4x4x4 fp32 GEMM through the CPU Default (OpenBLAS) called
// directly, and through tunable::gemm with a stored result naming it. The difference is what the
// runtime's layers (validation, op and result lookup, can_implement, workspace) cost per call on
// the host, without the GPU driver's own variance in the way.
struct CpuFixture {
  GemmDesc d = GemmDesc::make(DataType::kF32, Transpose::kN, Transpose::kN, 4, 4, 4);
  std::vector<float> a = std::vector<float>(16, 0.5f), b = std::vector<float>(16, 0.25f), c = std::vector<float>(16);
  SolutionPtr<GemmArgs> def = cpu_default_solution();
  std::unique_ptr<Context> ctx;
  CpuFixture() : ctx(context_with_result(Device::cpu(), d, def->name())) {}
  GemmOperands ops() { return GemmOperands{a.data(), b.data(), c.data()}; }
};

CpuFixture& cpu_fx() {
  static CpuFixture f;
  return f;
}

void BM_CpuDirectDefault(benchmark::State& state) {
  CpuFixture& f = cpu_fx();
  const GemmArgs args{f.d, f.ops()};
  for (auto _ : state)
    if (!f.def->run(args, nullptr, 0, nullptr).is_ok()) state.SkipWithError("run");
}

void BM_CpuTunedDispatch(benchmark::State& state) {
  CpuFixture& f = cpu_fx();
  for (auto _ : state)
    if (!gemm(*f.ctx, f.d, f.ops(), nullptr).is_ok()) state.SkipWithError("gemm");
  if (f.ctx->stats().hits == 0 || f.ctx->stats().tuned != 0) state.SkipWithError("stored result not used");
}

BENCHMARK(BM_DirectCublasLt)->UseRealTime()->MinTime(1.0);
BENCHMARK(BM_TunedDispatch)->UseRealTime()->MinTime(1.0);
BENCHMARK(BM_DirectSkinny)->DenseRange(0, 4)->UseRealTime()->MinTime(0.5);
BENCHMARK(BM_CpuDirectDefault)->MinTime(0.5);
BENCHMARK(BM_CpuTunedDispatch)->MinTime(0.5);

}  // namespace
}  // namespace tunable

BENCHMARK_MAIN();
