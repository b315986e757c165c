// OpenBLAS (Debian's package) as candidates at several thread counts, and as the CPU Default.
#include <cblas.h>
#include <fmt/format.h>

#include <algorithm>
#include <mutex>
#include <regex>
#include <thread>
#include <vector>

#include "gemm/cpu/cpu_gemm.hpp"
#include "tune/results_file.hpp"

namespace tunable {
namespace {

// The thread count OpenBLAS chose when it was loaded, read before any candidate changes it.
int openblas_default_threads() {
  static const int n = openblas_get_num_threads();
  return n;
}

CBLAS_TRANSPOSE cblas_t(Transpose t) { return t == Transpose::kN ? CblasNoTrans : CblasTrans; }

class OpenBlasSolution final : public Solution<GemmArgs> {
 public:
  /// threads == 0: the library's default count (the CPU Default solution).
  explicit OpenBlasSolution(int threads)
      : threads_(threads),
        name_(threads == 0 ? std::string("Default") : fmt::format("openblas_t{}", threads)) {}
  const std::string& name() const override { return name_; }
  Status can_implement(const GemmArgs& a) const override { return cpu_supports(a.desc); }
  Status run(const GemmArgs& a, void*, std::size_t, Stream) const override {
    TUNABLE_RETURN_IF_ERROR(cpu_supports(a.desc));
    const GemmDesc& d = a.desc;
    // OpenBLAS's thread count is process-global; set it on every call since other candidates
    // change it.
    openblas_set_num_threads(threads_ == 0 ? openblas_default_threads() : threads_);
    const auto m = static_cast<blasint>(d.m), n = static_cast<blasint>(d.n),
               k = static_cast<blasint>(d.k), lda = static_cast<blasint>(d.lda),
               ldb = static_cast<blasint>(d.ldb), ldc = static_cast<blasint>(d.ldc);
    for (std::int64_t bt = 0; bt < d.batch; ++bt) {
      if (d.dtype == DataType::kF32) {
        cblas_sgemm(CblasColMajor, cblas_t(d.transa), cblas_t(d.transb), m, n, k,
                    static_cast<float>(d.alpha), static_cast<const float*>(a.ops.a) + bt * d.stride_a,
                    lda, static_cast<const float*>(a.ops.b) + bt * d.stride_b, ldb,
                    static_cast<float>(d.beta), static_cast<float*>(a.ops.c) + bt * d.stride_c, ldc);
      } else {
        cblas_dgemm(CblasColMajor, cblas_t(d.transa), cblas_t(d.transb), m, n, k, d.alpha,
                    static_cast<const double*>(a.ops.a) + bt * d.stride_a, lda,
                    static_cast<const double*>(a.ops.b) + bt * d.stride_b, ldb, d.beta,
                    static_cast<double*>(a.ops.c) + bt * d.stride_c, ldc);
      }
    }
    return Status::ok();
  }

 private:
  int threads_;
  std::string name_;
};

class OpenBlasProvider final : public Provider<GemmArgs> {
 public:
  OpenBlasProvider() {
    const int hw = std::max(1u, std::thread::hardware_concurrency());
    std::vector<int> counts = {1, 2, 4, hw / 2, hw};
    std::sort(counts.begin(), counts.end());
    counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
    for (int c : counts)
      if (c >= 1 && c <= hw) sols_.push_back(std::make_shared<OpenBlasSolution>(c));
  }
  std::string name() const override { return "openblas"; }
  Status enumerate(const GemmArgs&, std::vector<SolutionPtr<GemmArgs>>* out) const override {
    out->insert(out->end(), sols_.begin(), sols_.end());
    return Status::ok();
  }
  SolutionPtr<GemmArgs> from_name(const std::string& n, const GemmArgs&) const override {
    static const std::regex re("^openblas_t(\\d{1,4})$");
    std::smatch m;
    if (!std::regex_match(n, m, re)) return nullptr;
    for (const auto& s : sols_)
      if (s->name() == n) return s;
    // A count this machine did not enumerate (another CPU wrote the file) still runs correctly.
    const int t = std::stoi(m[1]);
    return t >= 1 ? std::make_shared<OpenBlasSolution>(t) : nullptr;
  }

 private:
  std::vector<SolutionPtr<GemmArgs>> sols_;
};

}  // namespace

SolutionPtr<GemmArgs> cpu_default_solution() {
  static auto s = std::make_shared<OpenBlasSolution>(0);
  return s;
}

std::shared_ptr<const Provider<GemmArgs>> openblas_provider() {
  static auto p = std::make_shared<OpenBlasProvider>();
  return p;
}

std::string openblas_version() {
  (void)openblas_default_threads();
  return sanitize_field(fmt::format("{} core {}", openblas_get_config(), openblas_get_corename()));
}

}  // namespace tunable
