// The project's cache-blocked CPU GEMM (Goto-style): op(B) is packed in KC x NC panels that stay
// in L2/L3, op(A) in MC x KC blocks that stay in L1/L2, and an MR x NR register-tile micro-kernel
// streams both packed buffers. Block sizes are compile-time; each set is its own candidate.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "gemm/cpu/cpu_gemm.hpp"

namespace tunable {
namespace {

struct BlockConfig {
  int mc, kc, nc, mr, nr;
  std::string name() const {
    return fmt::format("cpu_blocked_mc{}_kc{}_nc{}_mr{}_nr{}", mc, kc, nc, mr, nr);
  }
};

template <class T, int MR, int NR>
inline void micro_kernel(int kc, const T* __restrict ap, const T* __restrict bp, T* __restrict acc) {
  // acc: MR x NR row-major in registers; the inner j loop vectorizes.
  T c[MR][NR] = {};
  for (int p = 0; p < kc; ++p) {
    const T* a = ap + p * MR;
    const T* b = bp + p * NR;
    for (int i = 0; i < MR; ++i) {
      const T ai = a[i];
      for (int j = 0; j < NR; ++j) c[i][j] += ai * b[j];
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) acc[i * NR + j] = c[i][j];
}

template <class T, int MC, int KC, int NC, int MR, int NR>
void blocked_gemm(const GemmDesc& d, const T* A, const T* B, T* C, std::vector<T>& apack,
                  std::vector<T>& bpack) {
  const T alpha = static_cast<T>(d.alpha), beta = static_cast<T>(d.beta);
  apack.assign(static_cast<std::size_t>(((MC + MR - 1) / MR) * MR) * KC, T(0));
  bpack.assign(static_cast<std::size_t>(((NC + NR - 1) / NR) * NR) * KC, T(0));
  T acc[MR * NR];
  for (std::int64_t jc = 0; jc < d.n; jc += NC) {
    const int nc = static_cast<int>(std::min<std::int64_t>(NC, d.n - jc));
    for (std::int64_t pc = 0; pc < d.k; pc += KC) {
      const int kc = static_cast<int>(std::min<std::int64_t>(KC, d.k - pc));
      // Pack op(B)[pc:pc+kc, jc:jc+nc] as NR-wide panels, zero-padded at the right edge.
      for (int jr = 0; jr < nc; jr += NR) {
        T* panel = bpack.data() + static_cast<std::size_t>(jr) * kc;
        for (int p = 0; p < kc; ++p)
          for (int j = 0; j < NR; ++j) {
            const std::int64_t col = jc + jr + j, row = pc + p;
            panel[p * NR + j] =
                jr + j < nc ? (d.transb == Transpose::kN ? B[row + col * d.ldb] : B[col + row * d.ldb])
                            : T(0);
          }
      }
      const bool first_k = pc == 0;
      for (std::int64_t ic = 0; ic < d.m; ic += MC) {
        const int mc = static_cast<int>(std::min<std::int64_t>(MC, d.m - ic));
        for (int ir = 0; ir < mc; ir += MR) {
          T* panel = apack.data() + static_cast<std::size_t>(ir) * kc;
          for (int p = 0; p < kc; ++p)
            for (int i = 0; i < MR; ++i) {
              const std::int64_t row = ic + ir + i, col = pc + p;
              panel[p * MR + i] =
                  ir + i < mc ? (d.transa == Transpose::kN ? A[row + col * d.lda] : A[col + row * d.lda])
                              : T(0);
            }
        }
        for (int jr = 0; jr < nc; jr += NR) {
          for (int ir = 0; ir < mc; ir += MR) {
            micro_kernel<T, MR, NR>(kc, apack.data() + static_cast<std::size_t>(ir) * kc,
                                    bpack.data() + static_cast<std::size_t>(jr) * kc, acc);
            const int mi = std::min(MR, mc - ir), nj = std::min(NR, nc - jr);
            for (int j = 0; j < nj; ++j) {
              T* c = C + (ic + ir) + (jc + jr + j) * d.ldc;
              for (int i = 0; i < mi; ++i) {
                const T v = alpha * acc[i * NR + j];
                // beta == 0 never reads C, which may hold NaN.
                if (!first_k) c[i] += v;
                else c[i] = beta == T(0) ? v : v + beta * c[i];
              }
            }
          }
        }
      }
    }
  }
}

template <int MC, int KC, int NC, int MR, int NR>
class BlockedSolution final : public Solution<GemmArgs> {
 public:
  BlockedSolution() : name_(BlockConfig{MC, KC, NC, MR, NR}.name()) {}
  const std::string& name() const override { return name_; }
  Status can_implement(const GemmArgs& a) const override { return cpu_supports(a.desc); }
  Status run(const GemmArgs& a, void*, std::size_t, Stream) const override {
    TUNABLE_RETURN_IF_ERROR(cpu_supports(a.desc));
    const GemmDesc& d = a.desc;
    if (d.dtype == DataType::kF32) return go<float>(a);
    return go<double>(a);
  }

 private:
  template <class T>
  Status go(const GemmArgs& a) const {
    // Packing buffers per thread: solutions are shared and may run concurrently.
    thread_local std::vector<T> apack, bpack;
    const GemmDesc& d = a.desc;
    for (std::int64_t bt = 0; bt < d.batch; ++bt) {
      blocked_gemm<T, MC, KC, NC, MR, NR>(d, static_cast<const T*>(a.ops.a) + bt * d.stride_a,
                                          static_cast<const T*>(a.ops.b) + bt * d.stride_b,
                                          static_cast<T*>(a.ops.c) + bt * d.stride_c, apack, bpack);
    }
    return Status::ok();
  }
  std::string name_;
};

class BlockedProvider final : public Provider<GemmArgs> {
 public:
  BlockedProvider() {
    sols_.push_back(std::make_shared<BlockedSolution<64, 256, 512, 4, 8>>());
    sols_.push_back(std::make_shared<BlockedSolution<128, 256, 1024, 4, 8>>());
    sols_.push_back(std::make_shared<BlockedSolution<32, 128, 256, 4, 4>>());
    sols_.push_back(std::make_shared<BlockedSolution<96, 384, 2048, 6, 8>>());
  }
  std::string name() const override { return "cpu_blocked"; }
  Status enumerate(const GemmArgs&, std::vector<SolutionPtr<GemmArgs>>* out) const override {
    out->insert(out->end(), sols_.begin(), sols_.end());
    return Status::ok();
  }
  SolutionPtr<GemmArgs> from_name(const std::string& n, const GemmArgs&) const override {
    for (const auto& s : sols_)
      if (s->name() == n) return s;
    return nullptr;
  }

 private:
  std::vector<SolutionPtr<GemmArgs>> sols_;
};

}  // namespace

std::shared_ptr<const Provider<GemmArgs>> cpu_blocked_provider() {
  static auto p = std::make_shared<BlockedProvider>();
  return p;
}

}  // namespace tunable
