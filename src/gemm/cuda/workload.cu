// Tuning inputs for GPU GEMMs: rotated copies of A, B, C (+ bias, scales) with fresh random data
// on the device, a double-accumulated reference of copy 0, and a device-side numerics check.
#include <fmt/format.h>

#include <cmath>
#include <vector>

#include "core/platform.hpp"
#include "gemm/cuda/cuda_gemm.hpp"
#include "gemm/cuda/cuda_resources.hpp"
#include "kernels/reference/gemm_reference.cuh"
#include "tune/cuda_timing.hpp"

namespace tunable {
namespace {

constexpr std::size_t kAlign = 256;
std::size_t round_up(std::size_t x) { return (x + kAlign - 1) / kAlign * kAlign; }

// Calls fn(TA{}, TB{}, TC{}, R{}) for the (A, B, output) type triples GEMMs use.
template <class Fn>
Status dispatch_types(const GemmDesc& d, Fn fn) {
  using namespace tunable::kernels;
  auto out = [&](auto ta, auto tb) -> Status {
    using TA = decltype(ta);
    using TB = decltype(tb);
    switch (d.out_dtype) {
      case DataType::kBF16: return fn(ta, tb, __nv_bfloat16{}, float{});
      case DataType::kF16: return fn(ta, tb, __half{}, float{});
      case DataType::kF32: return fn(ta, tb, float{}, float{});
      default: break;
    }
    return Status(StatusCode::kNotSupported, "unsupported output type");
  };
  auto fp8_b = [&](auto ta) -> Status {
    switch (b_type(d)) {
      case DataType::kF8E4M3: return out(ta, __nv_fp8_e4m3{});
      case DataType::kF8E5M2: return out(ta, __nv_fp8_e5m2{});
      case DataType::kBF16: return out(ta, __nv_bfloat16{});  // weight-only
      case DataType::kF16: return out(ta, __half{});
      default: break;
    }
    return Status(StatusCode::kNotSupported, "unsupported type of B with an fp8 A");
  };
  switch (d.dtype) {
    case DataType::kF64: return fn(double{}, double{}, double{}, double{});
    case DataType::kF32:
    case DataType::kTF32: return fn(float{}, float{}, float{}, float{});
    case DataType::kF16: return fn(__half{}, __half{}, __half{}, float{});
    case DataType::kBF16: return fn(__nv_bfloat16{}, __nv_bfloat16{}, __nv_bfloat16{}, float{});
    case DataType::kF8E4M3: return fp8_b(__nv_fp8_e4m3{});
    case DataType::kF8E5M2: return fp8_b(__nv_fp8_e5m2{});
  }
  return Status(StatusCode::kNotSupported, "unsupported input type");
}

class CudaGemmWorkload final : public Workload<GemmArgs> {
 public:
  explicit CudaGemmWorkload(CudaGemmResources* res) : res_(res), timer_(res->tuning_stream()) {}

  Status init(const GemmArgs& user, const Options& opt) {
    desc_ = user.desc;
    GemmDesc& d = desc_;
    cudaStream_t s = res_->tuning_stream();
    TUNABLE_RETURN_IF_ERROR(require_current_device(res_->ordinal()));
    const std::size_t in = size_of(d.dtype), out = size_of(d.out_dtype);
    // The caller's strides are part of the problem (a broadcast A with stride 0, batches whose
    // inputs overlap): every candidate is checked against them, so the copies keep them and each
    // operand is sized to what they reach.
    const bool batched = d.op == GemmOp::kGemmStridedBatched;
    const std::int64_t sa = batched ? d.stride_a : 0, sb = batched ? d.stride_b : 0, sc = batched ? d.stride_c : 0;
    // Every size below derives from the user's dimensions and strides: checked, so that an absurd
    // problem is refused by name instead of wrapping into a small allocation that kernels overrun.
    const auto reach = [&](std::int64_t stride, std::int64_t ld, std::int64_t rows, std::int64_t cols,
                           std::size_t* n) {
      std::int64_t r = 0;
      return !__builtin_mul_overflow(stride, d.batch - 1, &r) && !__builtin_add_overflow(r, span(ld, rows, cols), &r) &&
             r >= 0 && (*n = static_cast<std::size_t>(r), true);
    };
    std::size_t a_bytes = 0, b_bytes = 0, c_bytes = 0, bias_bytes = 0, ref_bytes = 0, fixed = 0;
    const std::size_t nref = static_cast<std::size_t>(d.m) * static_cast<std::size_t>(d.n);  // each < 2^31
    ref_is_double_ = d.dtype == DataType::kF64;
    // Appends a kAlign-aligned slice of `bytes` at *end: its offset in *at.
    const auto carve = [](std::size_t bytes, std::size_t* end, std::size_t* at) {
      *at = *end;
      return bytes <= SIZE_MAX - 2 * kAlign && checked_add(*end, round_up(bytes), end);
    };
    std::size_t end = 0, off_a = 0;
    const bool sized =
        reach(sa, d.lda, a_rows(d), a_cols(d), &na_) && reach(sb, d.ldb, b_rows(d), b_cols(d), &nb_) &&
        reach(sc, d.ldc, d.m, d.n, &nc_) && checked_mul(na_, in, &a_bytes) &&
        checked_mul(nb_, size_of(b_type(d)), &b_bytes) && checked_mul(nc_, out, &c_bytes) &&
        checked_mul(static_cast<std::size_t>(d.m), out, &bias_bytes) &&
        checked_mul(nref, static_cast<std::size_t>(d.batch), &ref_bytes) &&
        checked_mul(ref_bytes, ref_is_double_ ? 8 : 4, &ref_bytes) && carve(a_bytes, &end, &off_a) &&
        carve(b_bytes, &end, &off_b_) && carve(c_bytes, &end, &off_c_) && carve(bias_bytes, &end, &off_bias_) &&
        carve(kAlign, &end, &off_scale_) && checked_add(ref_bytes, sizeof(kernels::CompareTotals), &fixed) &&
        (d.beta == 0 || checked_add(fixed, c_bytes, &fixed));
    if (!sized) return Status(StatusCode::kNotSupported, "tuning this problem would need more bytes than memory can address");
    per_copy_ = end;
    const std::size_t l2 = static_cast<std::size_t>(device_properties(res_->ordinal()).l2CacheSize);
    // Eight times the L2, so every call reads its inputs from memory as in real use. Twice the L2
    // (TunableOp's rule) is not enough on an H100: with 100 MB of rotation the 50 MB L2 still served
    // part of the weights, and the tuner timed skinny kernels 5-20% faster than a run rotating
    // 400 MB measured them (docs/skinny-gemm.md), so it picked kernels that lost to Default.
    const std::size_t target = opt.rotating_buffer_size_mib < 0
                                   ? 8 * l2
                                   : static_cast<std::size_t>(opt.rotating_buffer_size_mib) << 20;
    // Up to 8192 copies (64 of a small GEMM's operands fit in the L2); below ~50 KB a copy the
    // rotation stays under the target, though still above the L2 down to ~6 KB. The copies and the
    // reference fit half the free memory, checked before anything is allocated.
    TUNABLE_RETURN_IF_ERROR(device_tuning_copies(res_->ordinal(), per_copy_, fixed, target, 8192, &copies_));
    // Memory taken by another thread or process since: fewer copies (timing gets optimistic, not wrong).
    for (;;) {
      Status got = mem_.allocate(per_copy_ * copies_);
      if (got.is_ok()) break;
      if (copies_ == 1) return got;
      copies_ /= 2;
    }
    const std::uint64_t seed = fresh_seed();
    const float scales[2] = {0.5f, 1.5f};  // a candidate that ignores a scale fails the check
    // Rowwise: one shared set of m + n scales in [0.5, 2), different per row and column, so that a
    // candidate applying them transposed, to the wrong operand, or not at all fails the check.
    const bool rowwise = has_rowwise_scales(d);
    const std::size_t m4 = (static_cast<std::size_t>(d.m) + 3) / 4 * 4;  // scale_b 16-byte aligned
    if (rowwise) {
      std::vector<float> v(m4 + static_cast<std::size_t>(d.n));
      std::uint64_t x = seed ^ 0x9e3779b97f4a7c15ull;
      for (float& f : v) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        f = 0.5f + 1.5f * static_cast<float>(x >> 40) / static_cast<float>(1u << 24);
      }
      TUNABLE_RETURN_IF_ERROR(vec_scales_.allocate(v.size() * sizeof(float)));
      TUNABLE_CUDA_CHECK(cudaMemcpyAsync(vec_scales_.get(), v.data(), v.size() * sizeof(float),
                                         cudaMemcpyHostToDevice, s));
      TUNABLE_CUDA_CHECK(cudaStreamSynchronize(s));  // v leaves scope
    }
    args_.resize(copies_);
    // The first kFilled copies get their own random data; the rest (small problems rotate up to
    // 8192 copies) repeat them, copied in doublings: thousands of fills would cost more than the tuning.
    constexpr std::size_t kFilled = 64;
    for (std::size_t i = 0; i < copies_; ++i) {
      char* base = mem_.as<char>() + i * per_copy_;
      GemmArgs& a = args_[i];
      a.desc = d;
      a.ops.a = base;
      a.ops.b = base + off_b_;
      a.ops.c = base + off_c_;
      a.ops.bias = d.epilogue != Epilogue::kNone ? base + off_bias_ : nullptr;
      const bool scaled = d.op == GemmOp::kScaledGemm;
      a.ops.scale_a = scaled ? reinterpret_cast<const float*>(base + off_scale_) : nullptr;
      a.ops.scale_b = scaled ? reinterpret_cast<const float*>(base + off_scale_ + 16) : nullptr;
      if (rowwise) {
        a.ops.scale_a = vec_scales_.as<float>();
        a.ops.scale_b = is_weight_only(d) ? nullptr : vec_scales_.as<float>() + m4;  // the reference then skips it
      }
      if (i >= kFilled) continue;
      const std::uint64_t sd = seed + 0x1000 * i;
      TUNABLE_RETURN_IF_ERROR(fill_random(base, d.dtype, na_, sd + 1, 1.0f, s));
      TUNABLE_RETURN_IF_ERROR(fill_random(base + off_b_, b_type(d), nb_, sd + 2, 1.0f, s));
      TUNABLE_RETURN_IF_ERROR(fill_random(base + off_c_, d.out_dtype, nc_, sd + 3, 1.0f, s));
      TUNABLE_RETURN_IF_ERROR(fill_random(base + off_bias_, d.out_dtype, d.m, sd + 4, 1.0f, s));
      TUNABLE_CUDA_CHECK(cudaMemcpyAsync(base + off_scale_, &scales[0], 4, cudaMemcpyHostToDevice, s));
      TUNABLE_CUDA_CHECK(cudaMemcpyAsync(base + off_scale_ + 16, &scales[1], 4, cudaMemcpyHostToDevice, s));
    }
    for (std::size_t have = std::min(copies_, kFilled); have < copies_; have *= 2) {
      const std::size_t n = std::min(have, copies_ - have);
      TUNABLE_CUDA_CHECK(cudaMemcpyAsync(mem_.as<char>() + have * per_copy_, mem_.get(), n * per_copy_,
                                         cudaMemcpyDeviceToDevice, s));
    }
    if (d.beta != 0) {
      TUNABLE_RETURN_IF_ERROR(c_init_.allocate(nc_ * out));
      TUNABLE_CUDA_CHECK(cudaMemcpyAsync(c_init_.get(), args_[0].ops.c, nc_ * out,
                                         cudaMemcpyDeviceToDevice, s));
    }
    // Reference of copy 0 from its initial C.
    TUNABLE_RETURN_IF_ERROR(ref_.allocate(ref_bytes));
    kernels::ReferenceGemmArgs g{};
    g.a = args_[0].ops.a;
    g.b = args_[0].ops.b;
    g.c = args_[0].ops.c;
    g.bias = args_[0].ops.bias;
    g.scale_a = args_[0].ops.scale_a;
    g.scale_b = args_[0].ops.scale_b;
    g.rowwise = rowwise;
    g.rms = d.scale_mode == ScaleMode::kRowwiseRms;
    g.rms_eps = d.rms_eps;
    g.out = ref_.get();
    g.m = d.m, g.n = d.n, g.k = d.k, g.lda = d.lda, g.ldb = d.ldb, g.ldc = d.ldc;
    g.stride_a = sa, g.stride_b = sb, g.stride_c = sc, g.batch = d.batch;
    g.trans_a = d.transa == Transpose::kT;
    g.trans_b = d.transb == Transpose::kT;
    g.alpha = d.alpha;
    g.beta = d.beta;
    g.epilogue = static_cast<int>(d.epilogue);
    TUNABLE_RETURN_IF_ERROR(dispatch_types(d, [&](auto ta, auto tb, auto tc, auto r) -> Status {
      using TA = decltype(ta);
      using TB = decltype(tb);
      using TC = decltype(tc);
      using R = decltype(r);
      TUNABLE_CUDA_CHECK((kernels::launch_reference_gemm<TA, TB, TC, R>(g, s)));
      return Status::ok();
    }));
    TUNABLE_RETURN_IF_ERROR(totals_.allocate(sizeof(kernels::CompareTotals)));
    TUNABLE_CUDA_CHECK(cudaStreamSynchronize(s));
    return Status::ok();
  }

  std::size_t copies() const override { return copies_; }
  std::size_t bytes_per_copy() const override { return per_copy_; }
  const GemmArgs& args(std::size_t i) const override { return args_[i]; }
  Stream stream() const override { return reinterpret_cast<Stream>(res_->tuning_stream()); }
  Timer& timer() override { return timer_; }
  Tolerance default_tolerance() const override { return gemm_tolerance(desc_); }
  Status synchronize() override {
    TUNABLE_CUDA_CHECK(cudaStreamSynchronize(res_->tuning_stream()));
    return Status::ok();
  }

  Status prepare_check() override {
    cudaStream_t s = res_->tuning_stream();
    if (desc_.beta == 0) return fill_nan(args_[0].ops.c, desc_.out_dtype, nc_, s);
    TUNABLE_CUDA_CHECK(cudaMemcpyAsync(args_[0].ops.c, c_init_.get(), c_init_.size(),
                                       cudaMemcpyDeviceToDevice, s));
    return Status::ok();
  }

  Status check(const Tolerance& tol, NumericsReport* rep) override {
    const GemmDesc& d = desc_;
    cudaStream_t s = res_->tuning_stream();
    auto* tot = totals_.as<kernels::CompareTotals>();
    const std::int64_t total = d.m * d.n * d.batch;
    const int blocks = static_cast<int>(std::min<std::int64_t>((total + 255) / 256, 4096));
    kernels::CompareTotals h{};
    TUNABLE_RETURN_IF_ERROR(dispatch_types(d, [&](auto, auto, auto tc, auto r) -> Status {
      using TC = decltype(tc);
      using R = decltype(r);
      const R* ref = ref_.as<R>();
      TUNABLE_CUDA_CHECK(cudaMemsetAsync(tot, 0, sizeof h, s));
      kernels::kernel_sumsq_ref<TC, R><<<blocks, 256, 0, s>>>(ref, total, tot);
      TUNABLE_CUDA_CHECK_LAUNCH();
      TUNABLE_CUDA_CHECK(cudaMemcpyAsync(&h, tot, sizeof h, cudaMemcpyDeviceToHost, s));
      TUNABLE_CUDA_CHECK(cudaStreamSynchronize(s));
      rms_ = std::sqrt(h.sumsq / static_cast<double>(total));
      kernels::kernel_compare_matrix<TC, R><<<blocks, 256, 0, s>>>(
          args_[0].ops.c, d.m, d.n, d.ldc, d.op == GemmOp::kGemmStridedBatched ? d.stride_c : 0,
          d.batch, ref, tol.atol * std::max(rms_, 1e-30), tol.rtol, tot);
      TUNABLE_CUDA_CHECK_LAUNCH();
      return Status::ok();
    }));
    TUNABLE_CUDA_CHECK(cudaMemcpyAsync(&h, tot, sizeof h, cudaMemcpyDeviceToHost, s));
    TUNABLE_CUDA_CHECK(cudaStreamSynchronize(s));
    *rep = numerics_report(h, rms_);
    return Status::ok();
  }

  Status workspace(std::size_t bytes, void** ptr) override {
    if (bytes > res_->workspace_limit())
      return Status(StatusCode::kNotSupported,
                    fmt::format("{} bytes exceed the workspace limit of {}", bytes, res_->workspace_limit()));
    if (ws_.size() < bytes) TUNABLE_RETURN_IF_ERROR(ws_.allocate(bytes));
    *ptr = bytes ? ws_.get() : nullptr;
    return Status::ok();
  }

 private:
  RelaxedCaptureMode relaxed_;  // first member: in force before any allocation, until the last free
  CudaGemmResources* res_;
  EventTimer timer_;
  GemmDesc desc_;
  std::size_t na_ = 0, nb_ = 0, nc_ = 0, off_b_ = 0, off_c_ = 0, off_bias_ = 0, off_scale_ = 0;
  std::size_t per_copy_ = 0, copies_ = 1;
  DeviceBuffer mem_, c_init_, ref_, totals_, ws_, vec_scales_;
  bool ref_is_double_ = false;
  double rms_ = 0;
  std::vector<GemmArgs> args_;
};

}  // namespace

Status make_cuda_gemm_workload(CudaGemmResources* res, const GemmArgs& args, const Options& opt,
                               std::unique_ptr<Workload<GemmArgs>>* out) {
  auto w = std::make_unique<CudaGemmWorkload>(res);
  TUNABLE_RETURN_IF_ERROR(w->init(args, opt));
  *out = std::move(w);
  return Status::ok();
}

}  // namespace tunable
