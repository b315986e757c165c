// The naive CPU GEMM: the numerics reference, and a (slow) candidate of its own.
#include <fmt/format.h>

#include <vector>

#include "gemm/cpu/cpu_gemm.hpp"

namespace tunable {
namespace {

template <class T>
T load_a(const T* A, const GemmDesc& d, std::int64_t i, std::int64_t p) {
  return d.transa == Transpose::kN ? A[i + p * d.lda] : A[p + i * d.lda];
}
template <class T>
T load_b(const T* B, const GemmDesc& d, std::int64_t p, std::int64_t j) {
  return d.transb == Transpose::kN ? B[p + j * d.ldb] : B[j + p * d.ldb];
}

// Packs op(A) row-wise and op(B) column-wise so the inner product walks contiguous memory; the
// reference is run on every tuned problem and must not take minutes.
template <class T, class Acc, class Store>
void reference_impl(const GemmArgs& args, Store store) {
  const GemmDesc& d = args.desc;
  std::vector<Acc> a(d.m * d.k), b(d.k * d.n);
  for (std::int64_t bt = 0; bt < d.batch; ++bt) {
    const T* A = static_cast<const T*>(args.ops.a) + bt * d.stride_a;
    const T* B = static_cast<const T*>(args.ops.b) + bt * d.stride_b;
    for (std::int64_t i = 0; i < d.m; ++i)
      for (std::int64_t p = 0; p < d.k; ++p) a[i * d.k + p] = load_a(A, d, i, p);
    for (std::int64_t j = 0; j < d.n; ++j)
      for (std::int64_t p = 0; p < d.k; ++p) b[j * d.k + p] = load_b(B, d, p, j);
    for (std::int64_t j = 0; j < d.n; ++j) {
      for (std::int64_t i = 0; i < d.m; ++i) {
        const Acc* ar = &a[i * d.k];
        const Acc* bc = &b[j * d.k];
        Acc acc = 0;
        for (std::int64_t p = 0; p < d.k; ++p) acc += ar[p] * bc[p];
        store(bt, i, j, acc);
      }
    }
  }
}

template <class T>
void reference_run(const GemmArgs& args) {
  const GemmDesc& d = args.desc;
  reference_impl<T, double>(args, [&](std::int64_t bt, std::int64_t i, std::int64_t j, double acc) {
    T* C = static_cast<T*>(args.ops.c) + bt * d.stride_c;
    T& c = C[i + j * d.ldc];
    // beta == 0 must not read C (it may hold NaN), as BLAS specifies.
    c = static_cast<T>(d.beta == 0 ? d.alpha * acc : d.alpha * acc + d.beta * static_cast<double>(c));
  });
}

template <class T>
void reference_double(const GemmArgs& args, double* out) {
  const GemmDesc& d = args.desc;
  reference_impl<T, long double>(
      args, [&](std::int64_t bt, std::int64_t i, std::int64_t j, long double acc) {
        const T* C = static_cast<const T*>(args.ops.c) + bt * d.stride_c;
        long double v = static_cast<long double>(d.alpha) * acc;
        if (d.beta != 0) v += static_cast<long double>(d.beta) * C[i + j * d.ldc];
        out[bt * d.m * d.n + i + j * d.m] = static_cast<double>(v);
      });
}

class ReferenceSolution final : public Solution<GemmArgs> {
 public:
  const std::string& name() const override { return name_; }
  Status can_implement(const GemmArgs& a) const override { return cpu_supports(a.desc); }
  Status run(const GemmArgs& a, void*, std::size_t, Stream) const override {
    TUNABLE_RETURN_IF_ERROR(cpu_supports(a.desc));
    if (a.desc.dtype == DataType::kF32) reference_run<float>(a);
    else reference_run<double>(a);
    return Status::ok();
  }

 private:
  std::string name_ = "cpu_reference";
};

class ReferenceProvider final : public Provider<GemmArgs> {
 public:
  std::string name() const override { return "cpu_reference"; }
  Status enumerate(const GemmArgs&, std::vector<SolutionPtr<GemmArgs>>* out) const override {
    out->push_back(sol_);
    return Status::ok();
  }
  SolutionPtr<GemmArgs> from_name(const std::string& n, const GemmArgs&) const override {
    return n == sol_->name() ? sol_ : nullptr;
  }

 private:
  SolutionPtr<GemmArgs> sol_ = std::make_shared<ReferenceSolution>();
};

}  // namespace

Status cpu_supports(const GemmDesc& d) {
  TUNABLE_RETURN_IF_ERROR(validate(d));
  if (d.dtype != DataType::kF32 && d.dtype != DataType::kF64)
    return Status(StatusCode::kNotSupported,
                  fmt::format("CPU providers implement fp32 and fp64, not {}", short_name(d.dtype)));
  if (d.op != GemmOp::kGemm && d.op != GemmOp::kGemmStridedBatched)
    return Status(StatusCode::kNotSupported,
                  "CPU providers implement Gemm and GemmStridedBatched only");
  return Status::ok();
}

void reference_gemm_to_double(const GemmArgs& args, double* out) {
  if (args.desc.dtype == DataType::kF32) reference_double<float>(args, out);
  else reference_double<double>(args, out);
}

std::shared_ptr<const Provider<GemmArgs>> cpu_reference_provider() {
  static auto p = std::make_shared<ReferenceProvider>();
  return p;
}

}  // namespace tunable
