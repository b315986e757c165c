// Tuning inputs for CPU GEMMs: rotated copies of A, B, C holding fresh random data, and the
// extended-precision reference of copy 0.
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <new>
#include <type_traits>
#include <vector>

#include "core/platform.hpp"
#include "gemm/cpu/cpu_gemm.hpp"

namespace tunable {
namespace {

class CpuGemmWorkload final : public Workload<GemmArgs> {
 public:
  Status init(const GemmArgs& user, const Options& opt) {
    TUNABLE_RETURN_IF_ERROR(cpu_supports(user.desc));
    desc_ = user.desc;
    const GemmDesc& d = desc_;
    const std::size_t es = size_of(d.dtype);
    // Per batch entry the matrices are placed tightly unless the user's strides are larger.
    sa_ = std::max<std::int64_t>(d.stride_a, span(d.lda, a_rows(d), a_cols(d)));
    sb_ = std::max<std::int64_t>(d.stride_b, span(d.ldb, b_rows(d), b_cols(d)));
    sc_ = std::max<std::int64_t>(d.stride_c, span(d.ldc, d.m, d.n));
    na_ = sa_ * d.batch;
    nb_ = sb_ * d.batch;
    nc_ = sc_ * d.batch;
    // Every size below derives from the user's dimensions: checked, so that an absurd shape is
    // refused rather than wrapped into a small allocation (validate() bounds each matrix's span).
    // m and n fit in 32 bits, so m * n does in size_t.
    std::size_t per_copy = 0, elems = 0, c_bytes = 0, ref_bytes = 0, fixed = 0;
    if (!checked_add(static_cast<std::size_t>(na_), static_cast<std::size_t>(nb_), &elems) ||
        !checked_add(elems, static_cast<std::size_t>(nc_), &elems) || !checked_mul(elems, es, &per_copy) ||
        !checked_mul(static_cast<std::size_t>(nc_), es, &c_bytes) ||
        !checked_mul(static_cast<std::size_t>(d.m) * static_cast<std::size_t>(d.n), sizeof(double), &ref_bytes) ||
        !checked_mul(ref_bytes, static_cast<std::size_t>(d.batch), &ref_bytes) ||
        !checked_mul(ref_bytes, 2, &fixed) || !checked_add(fixed, c_bytes, &fixed) ||
        !checked_add(fixed, per_copy, &fixed))
      return Status(StatusCode::kNotSupported, "tuning this problem would need more bytes than memory can address");
    std::size_t target = 0;
    if (opt.rotating_buffer_size_mib < 0) target = 2 * cpu_last_level_cache_bytes();
    else target = static_cast<std::size_t>(opt.rotating_buffer_size_mib) << 20;
    copies_ = rotating_copies(per_copy, target, 64);
    // Checked against what the host has before anything is allocated: tuning takes at most half of
    // the available memory (the program and its other threads keep the rest), with fewer input copies
    // if need be; when even one copy, the reference and the check's copy of the output (`fixed`) do
    // not fit, the problem is not tuned and runs Default.
    const std::size_t budget = host_memory_available() / 2;
    if (fixed > budget)
      return Status(StatusCode::kNotSupported,
                    fmt::format("not enough host memory to tune: needs {} (an input copy of {} and {} for the "
                                "reference and the check), and tuning may take half of the {} available",
                                format_bytes(fixed), format_bytes(per_copy), format_bytes(fixed - per_copy),
                                format_bytes(budget * 2)));
    copies_ = std::min<std::size_t>(copies_, 1 + (budget - fixed) / per_copy);
    bytes_per_copy_ = per_copy;
    SplitMix64 rng{fresh_seed()};
    if (d.dtype == DataType::kF32) fill<float>(rng);
    else fill<double>(rng);
    // Reference from copy 0's inputs and initial C.
    ref_.resize(ref_bytes / sizeof(double));
    GemmArgs r = args_[0];
    r.ops.c = c_init_.data();
    reference_gemm_to_double(r, ref_.data());
    return Status::ok();
  }

  std::size_t copies() const override { return copies_; }
  std::size_t bytes_per_copy() const override { return bytes_per_copy_; }
  const GemmArgs& args(std::size_t i) const override { return args_[i]; }

  Status prepare_check() override {
    auto* c = static_cast<unsigned char*>(args_[0].ops.c);
    if (desc_.beta == 0) {
      // Poison: an element the candidate does not write stays NaN and fails the check.
      if (desc_.dtype == DataType::kF32) poison<float>(c);
      else poison<double>(c);
    } else {
      std::copy(c_init_.begin(), c_init_.end(), c);
    }
    return Status::ok();
  }

  Status check(const Tolerance& tol, NumericsReport* rep) override {
    const GemmDesc& d = desc_;
    std::vector<double> got(ref_.size());
    for (std::int64_t bt = 0; bt < d.batch; ++bt)
      for (std::int64_t j = 0; j < d.n; ++j)
        for (std::int64_t i = 0; i < d.m; ++i) {
          const std::int64_t at = bt * sc_ + i + j * d.ldc;
          got[bt * d.m * d.n + i + j * d.m] =
              d.dtype == DataType::kF32 ? static_cast<const float*>(args_[0].ops.c)[at]
                                        : static_cast<const double*>(args_[0].ops.c)[at];
        }
    *rep = compare_outputs(got.data(), ref_.data(), got.size(), tol);
    return Status::ok();
  }

  Tolerance default_tolerance() const override { return gemm_tolerance(desc_); }
  Status workspace(std::size_t bytes, void** ptr) override {
    if (ws_.size() < bytes) {
      if (bytes > host_memory_available() / 2)
        return Status(StatusCode::kNotSupported, fmt::format("no host memory for a workspace of {}", format_bytes(bytes)));
      try {
        ws_.resize(bytes);
      } catch (const std::bad_alloc&) {
        return Status(StatusCode::kNotSupported, fmt::format("no host memory for a workspace of {}", format_bytes(bytes)));
      }
    }
    *ptr = ws_.empty() ? nullptr : ws_.data();
    return Status::ok();
  }
  Timer& timer() override { return timer_; }
  bool first_call_is_representative() const override { return true; }

 private:
  template <class T>
  void fill(SplitMix64& rng) {
    const std::size_t total = (na_ + nb_ + nc_) * copies_;
    std::vector<T>& buf = storage<T>();
    buf.resize(total);
    for (auto& v : buf) v = static_cast<T>(rng.uniform());
    c_init_.resize(static_cast<std::size_t>(nc_) * sizeof(T));
    args_.resize(copies_);
    for (std::size_t i = 0; i < copies_; ++i) {
      T* base = buf.data() + i * (na_ + nb_ + nc_);
      GemmArgs& a = args_[i];
      a.desc = desc_;
      a.desc.stride_a = sa_;
      a.desc.stride_b = sb_;
      a.desc.stride_c = sc_;
      a.ops.a = base;
      a.ops.b = base + na_;
      a.ops.c = base + na_ + nb_;
    }
    std::memcpy(c_init_.data(), args_[0].ops.c, c_init_.size());
  }
  template <class T>
  void poison(unsigned char* c) {
    T* p = reinterpret_cast<T*>(c);
    for (std::int64_t i = 0; i < nc_; ++i) p[i] = std::numeric_limits<T>::quiet_NaN();
  }
  template <class T>
  std::vector<T>& storage() {
    if constexpr (std::is_same_v<T, float>) return f32_;
    else return f64_;
  }

  GemmDesc desc_;
  std::int64_t sa_ = 0, sb_ = 0, sc_ = 0, na_ = 0, nb_ = 0, nc_ = 0;
  std::size_t copies_ = 1, bytes_per_copy_ = 0;
  std::vector<float> f32_;
  std::vector<double> f64_;
  std::vector<unsigned char> c_init_, ws_;
  std::vector<GemmArgs> args_;
  std::vector<double> ref_;
  HostTimer timer_;
};

}  // namespace

Status make_cpu_gemm_workload(const GemmArgs& args, const Options& opt,
                              std::unique_ptr<Workload<GemmArgs>>* out) {
  auto w = std::make_unique<CpuGemmWorkload>();
  TUNABLE_RETURN_IF_ERROR(w->init(args, opt));
  *out = std::move(w);
  return Status::ok();
}

}  // namespace tunable
