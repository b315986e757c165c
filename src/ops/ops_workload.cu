// Tuning workloads of the fused ops: rotated copies of fresh random inputs (their total exceeds
// L2 unless Options say otherwise), an fp64 reference of copy 0 computed on the device, outputs
// poisoned with NaN before the checked run, and the check itself.
//
// FusedAddRmsNorm updates its residual in place. prepare_check() restores copy 0's residual from a
// pristine copy, so the checked run sees the inputs the reference was computed from. Timing runs
// keep accumulating into the residuals of their copies; that cannot overflow: the workload's out
// is separate from x, so x stays in [-1, 1], and once |r| reaches 2^(p+1) (p = significand bits:
// 512 for bf16, 4096 for fp16, 2^25 for fp32) adding |x| <= 1 rounds back to r, so r stays finite
// however many calls are timed.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/platform.hpp"
#include "cuda/cuda_util.hpp"
#include "kernels/common/device_utils.cuh"
#include "ops/ops_workload.hpp"
#include "tune/cuda_timing.hpp"

namespace tunable {
namespace {

using kernels::kFp8E4M3Max;
using kernels::kFp8MinScale;

/// Static scales of the workloads: some outputs saturate, most do not.
constexpr float kNormStaticScale = 1.0f / 160.0f;
constexpr float kActStaticScale = 1.0f / 64.0f;
/// Act inputs span [-3, 3] so both tails of the activation are exercised.
constexpr float kActInputRange = 3.0f;
constexpr int kRefThreads = 256;

// The reference converts and reduces with its own code (CUDA's conversion intrinsics, a plain
// shared-memory tree), not the kernels' helpers: a bug there must not be reproduced here.
__device__ __forceinline__ double to_dbl(float v) { return v; }
__device__ __forceinline__ double to_dbl(__half v) { return __half2float(v); }
__device__ __forceinline__ double to_dbl(__nv_bfloat16 v) { return __bfloat162float(v); }

/// Sum (max = false) or max over the block's kRefThreads threads; every thread gets the result.
__device__ double ref_block_reduce(double v, bool max, double* scratch) {
  scratch[threadIdx.x] = v;
  __syncthreads();
  for (int s = kRefThreads / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) scratch[threadIdx.x] = max ? fmax(scratch[threadIdx.x], scratch[threadIdx.x + s])
                                                   : scratch[threadIdx.x] + scratch[threadIdx.x + s];
    __syncthreads();
  }
  const double r = scratch[0];
  __syncthreads();  // scratch is reused by the next reduction
  return r;
}

/// Correctly rounded double -> T (the reference of the residual update).
template <class T>
__device__ __forceinline__ double round_to(double v);
template <>
__device__ __forceinline__ double round_to<float>(double v) { return static_cast<float>(v); }
template <>
__device__ __forceinline__ double round_to<__half>(double v) { return __half2float(__double2half(v)); }
template <>
__device__ __forceinline__ double round_to<__nv_bfloat16>(double v) {
  return __bfloat162float(__double2bfloat16(v));
}

/// One block per row. ref_out holds y, or y / scale with an FP8 output (what gets quantized).
template <class T>
__global__ void kernel_rms_norm_reference(const T* x, const T* residual, const T* w, int hidden,
                                          double eps, bool gemma, int fp8, const float* scale,
                                          double* ref_out, double* ref_res, double* ref_scales) {
  __shared__ double scratch[kRefThreads];
  const std::int64_t base = static_cast<std::int64_t>(blockIdx.x) * hidden;
  double ss = 0;
  for (int c = threadIdx.x; c < hidden; c += blockDim.x) {
    double v = to_dbl(x[base + c]);
    if (residual) {
      v = round_to<T>(v + to_dbl(residual[base + c]));
      ref_res[base + c] = v;
    }
    ref_out[base + c] = v;
    ss += v * v;
  }
  ss = ref_block_reduce(ss, false, scratch);
  const double inv = 1.0 / sqrt(ss / hidden + eps);
  double amax = 0;
  for (int c = threadIdx.x; c < hidden; c += blockDim.x) {
    const double wd = to_dbl(w[c]);
    const double y = ref_out[base + c] * inv * (gemma ? 1.0 + wd : wd);
    ref_out[base + c] = y;
    amax = fmax(amax, fabs(y));
  }
  double s = 1;
  if (fp8 == static_cast<int>(Fp8Scaling::kStatic)) s = *scale;
  if (fp8 == static_cast<int>(Fp8Scaling::kDynamicPerToken)) {
    amax = ref_block_reduce(amax, true, scratch);
    s = fmax(amax / kFp8E4M3Max, static_cast<double>(kFp8MinScale));
    if (threadIdx.x == 0) ref_scales[blockIdx.x] = s;
  }
  if (fp8 != 0) {
    for (int c = threadIdx.x; c < hidden; c += blockDim.x) ref_out[base + c] /= s;
  }
}

template <class T>
__global__ void kernel_act_and_mul_reference(const T* x, std::int64_t rows, int d, bool gelu,
                                             const float* scale, double* ref_out) {
  const std::int64_t n = rows * d;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t r = i / d, c = i % d;
    const double g = to_dbl(x[r * 2 * d + c]), u = to_dbl(x[r * 2 * d + d + c]);
    const double a = gelu ? 0.5 * g * (1.0 + tanh(0.7978845608028654 * (g + 0.044715 * g * g * g)))
                          : g / (1.0 + exp(-g));
    ref_out[i] = a * u / (scale ? static_cast<double>(*scale) : 1.0);
  }
}

struct Fp8CheckOut {
  unsigned long long bad, nonfinite, max_ulps;
  unsigned long long max_abs_bits;  // non-negative doubles compare as integers
};

__device__ __forceinline__ int fp8_order(unsigned char code) {
  return (code & 0x80) ? -static_cast<int>(code & 0x7f) : static_cast<int>(code & 0x7f);
}

/// got: e4m3 values as doubles; ref: the unquantized reference. Bad when the codes differ by more
/// than one step (+0 and -0 are the same step) or got is not finite.
__global__ void kernel_fp8_ulp_check(const double* got, const double* ref, std::size_t n,
                                     Fp8CheckOut* out) {
  unsigned long long bad = 0, nonfin = 0, max_ulps = 0;
  double max_abs = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const double g = got[i];
    if (!isfinite(g)) {
      ++bad;
      ++nonfin;
      max_ulps = ~0ull;
      continue;
    }
    const unsigned char cg = __nv_cvt_float_to_fp8(static_cast<float>(g), __NV_SATFINITE, __NV_E4M3);
    const unsigned char cr = __nv_cvt_float_to_fp8(static_cast<float>(ref[i]), __NV_SATFINITE, __NV_E4M3);
    const unsigned long long ulps = static_cast<unsigned long long>(abs(fp8_order(cg) - fp8_order(cr)));
    __half_raw hr = __nv_cvt_fp8_to_halfraw(cr, __NV_E4M3);
    max_abs = fmax(max_abs, fabs(g - static_cast<double>(__half2float(__half(hr)))));
    max_ulps = max(max_ulps, ulps);
    if (ulps > 1) ++bad;
  }
  if (bad) atomicAdd(&out->bad, bad);
  if (nonfin) atomicAdd(&out->nonfinite, nonfin);
  atomicMax(&out->max_ulps, max_ulps);
  atomicMax(&out->max_abs_bits, static_cast<unsigned long long>(__double_as_longlong(max_abs)));
}

int blocks_for(std::size_t n, int threads) {
  return static_cast<int>(std::min<std::size_t>((n + threads - 1) / threads, 4096));
}

Status fp8_check(const double* got, const double* ref, std::size_t n, cudaStream_t stream,
                 NumericsReport* rep) {
  DeviceBuffer buf;
  TUNABLE_RETURN_IF_ERROR(buf.allocate(sizeof(Fp8CheckOut)));
  TUNABLE_CUDA_CHECK(cudaMemsetAsync(buf.get(), 0, sizeof(Fp8CheckOut), stream));
  TUNABLE_CUDA_CHECK(kernels::launch_kernel_ex(kernel_fp8_ulp_check, dim3(blocks_for(n, 256)), dim3(256), 0, stream,
                                               false, dim3(1, 1, 1), got, ref, n, buf.as<Fp8CheckOut>()));
  Fp8CheckOut h{};
  TUNABLE_CUDA_CHECK(cudaMemcpyAsync(&h, buf.get(), sizeof h, cudaMemcpyDeviceToHost, stream));
  TUNABLE_CUDA_CHECK(cudaStreamSynchronize(stream));
  NumericsReport r;
  r.bad_elements = h.bad;
  r.nonfinite = h.nonfinite;
  std::memcpy(&r.max_abs_err, &h.max_abs_bits, sizeof(double));
  // "worst / bound" with a bound of one e4m3 step.
  r.max_rel_err = h.nonfinite ? INFINITY : static_cast<double>(h.max_ulps);
  r.passed = h.bad == 0;
  *rep = r;
  return Status::ok();
}

void merge(NumericsReport* into, const NumericsReport& r) {
  into->passed = into->passed && r.passed;
  into->max_abs_err = std::max(into->max_abs_err, r.max_abs_err);
  into->max_rel_err = std::max(into->max_rel_err, r.max_rel_err);
  into->bad_elements += r.bad_elements;
  into->nonfinite += r.nonfinite;
}

/// The stream every fused-op workload of a context times on.
struct FusedOpsStream {
  FusedOpsStream() : status(stream.create()) {}
  CudaStream stream;  // declared first: created before `status` is initialized
  Status status;
};

Status context_stream(ContextImpl& ctx, cudaStream_t* out) {
  TUNABLE_RETURN_IF_ERROR(require_current_device(ctx.device().ordinal));
  FusedOpsStream& s =
      ctx.resource<FusedOpsStream>([] { return std::make_unique<FusedOpsStream>(); });
  TUNABLE_RETURN_IF_ERROR(s.status);
  *out = s.stream.get();
  return Status::ok();
}

/// Slices of one allocation, each 256-byte aligned. Sizes derive from the caller's rows and
/// widths, so the arithmetic is checked: an overflow makes size() SIZE_MAX, which
/// device_tuning_copies() refuses by name before anything is allocated.
class Carver {
 public:
  std::size_t take(std::size_t bytes) { return take(1, bytes); }
  std::size_t take(std::size_t count, std::size_t elem_bytes) {
    const std::size_t at = size_;
    std::size_t b = 0, padded = 0;
    if (size_ == SIZE_MAX || __builtin_mul_overflow(count, elem_bytes, &b) || __builtin_add_overflow(b, 255, &padded) ||
        __builtin_add_overflow(size_, padded / 256 * 256, &size_))
      size_ = SIZE_MAX;
    return at;
  }
  std::size_t size() const { return size_; }

 private:
  std::size_t size_ = 0;
};

/// Copies whose total exceeds the Options' target (twice the L2 by default, as Options documents:
/// one L2 left decode rows hot), within the device's tuning budget (device_tuning_copies).
Status rotation(const Options& opt, int ordinal, std::size_t per_copy, std::size_t aux, std::size_t* copies) {
  const std::size_t target = opt.rotating_buffer_size_mib < 0
                                 ? 2 * static_cast<std::size_t>(device_properties(ordinal).l2CacheSize)
                                 : static_cast<std::size_t>(opt.rotating_buffer_size_mib) << 20;
  // Up to 8192 copies: a one-row norm's copy is 24-32 KB, and 1024 of them fit in the L2.
  return device_tuning_copies(ordinal, per_copy, aux, target, 8192, copies);
}

std::uint64_t seed_for(std::uint64_t base, std::size_t copy, int buffer) {
  return base ^ (0x9E3779B97F4A7C15ull * (copy * 8 + static_cast<std::size_t>(buffer) + 1));
}

template <class Args>
class DeviceWorkload : public Workload<Args> {
 public:
  explicit DeviceWorkload(cudaStream_t s) : stream_(s), timer_(s) {}
  std::size_t copies() const override { return args_.size(); }
  std::size_t bytes_per_copy() const override { return bytes_per_copy_; }
  const Args& args(std::size_t copy) const override { return args_[copy]; }
  Status workspace(std::size_t bytes, void** ptr) override {
    if (bytes == 0) {
      *ptr = nullptr;
      return Status::ok();
    }
    if (ws_.size() < bytes) TUNABLE_RETURN_IF_ERROR(ws_.allocate(bytes));
    *ptr = ws_.get();
    return Status::ok();
  }
  Timer& timer() override { return timer_; }
  Stream stream() const override { return stream_; }
  Status synchronize() override {
    TUNABLE_CUDA_CHECK(cudaStreamSynchronize(stream_));
    return Status::ok();
  }

 protected:
  char* at(const DeviceBuffer& b, std::size_t offset) const { return b.as<char>() + offset; }

  RelaxedCaptureMode relaxed_;  // first member: in force before any allocation, until the last free
  cudaStream_t stream_;
  EventTimer timer_;
  DeviceBuffer ws_, data_, aux_;
  std::vector<Args> args_;
  std::size_t bytes_per_copy_ = 0;
};

// ---- RMSNorm --------------------------------------------------------------------------------------------

class NormWorkload final : public DeviceWorkload<NormArgs> {
 public:
  using DeviceWorkload::DeviceWorkload;

  Status init(int ordinal, const NormArgs& user, const Options& opt) {
    p_ = user.prob;
    p_.rows = rows_bucket(p_.rows);
    const std::size_t es = size_of(p_.dtype), oes = out_size(p_.dtype, p_.fp8);
    std::size_t n = 0;
    if (__builtin_mul_overflow(static_cast<std::size_t>(p_.rows), static_cast<std::size_t>(p_.hidden), &n))
      return Status(StatusCode::kNotSupported, "tuning this problem would need more bytes than memory can address");
    n_ = n;
    const bool dyn = p_.fp8 == Fp8Scaling::kDynamicPerToken;

    // One copy: x, residual, weight, out, token scales ([rows, hidden] dense).
    Carver copy;
    const std::size_t o_x = copy.take(n, es), o_res = copy.take(p_.fused ? n : 0, es),
                      o_w = copy.take(static_cast<std::size_t>(p_.hidden), es), o_out = copy.take(n, oes),
                      o_tok = copy.take(dyn ? static_cast<std::size_t>(p_.rows) : 0, sizeof(float));
    bytes_per_copy_ = copy.size();
    // Shared: the static scale, copy 0's pristine residual, the references, a conversion buffer.
    Carver aux;
    o_scale_ = aux.take(sizeof(float));
    o_pristine_ = aux.take(p_.fused ? n : 0, es);
    o_ref_out_ = aux.take(n, sizeof(double));
    o_ref_res_ = aux.take(p_.fused ? n : 0, sizeof(double));
    o_ref_tok_ = aux.take(dyn ? static_cast<std::size_t>(p_.rows) : 0, sizeof(double));
    o_got_ = aux.take(n, sizeof(double));
    std::size_t copies = 1;
    TUNABLE_RETURN_IF_ERROR(rotation(opt, ordinal, bytes_per_copy_, aux.size(), &copies));
    TUNABLE_RETURN_IF_ERROR(data_.allocate(bytes_per_copy_ * copies));
    TUNABLE_RETURN_IF_ERROR(aux_.allocate(aux.size()));

    const float scale = kNormStaticScale;
    TUNABLE_CUDA_CHECK(cudaMemcpyAsync(at(aux_, o_scale_), &scale, sizeof scale,
                                       cudaMemcpyHostToDevice, stream_));
    const std::uint64_t seed = fresh_seed();
    args_.resize(copies);
    for (std::size_t i = 0; i < copies; ++i) {
      char* base = at(data_, i * bytes_per_copy_);
      NormArgs& a = args_[i];
      a.prob = p_;
      a.x_stride = a.residual_stride = a.out_stride = p_.hidden;
      a.eps = user.eps;
      a.x = base + o_x;
      a.residual = p_.fused ? base + o_res : nullptr;
      a.weight = base + o_w;
      a.out = base + o_out;
      a.scale = p_.fp8 == Fp8Scaling::kStatic ? reinterpret_cast<const float*>(at(aux_, o_scale_)) : nullptr;
      a.token_scales = dyn ? reinterpret_cast<float*>(base + o_tok) : nullptr;
      TUNABLE_RETURN_IF_ERROR(fill_random(base + o_x, p_.dtype, n, seed_for(seed, i, 0), 1.0f, stream_));
      if (p_.fused)
        TUNABLE_RETURN_IF_ERROR(fill_random(base + o_res, p_.dtype, n, seed_for(seed, i, 1), 1.0f, stream_));
      TUNABLE_RETURN_IF_ERROR(
          fill_random(base + o_w, p_.dtype, p_.hidden, seed_for(seed, i, 2), 1.0f, stream_));
    }
    if (dyn && p_.rows >= 2) {
      // One all-zero row (a padded token): its dynamic scale is the floor kFp8MinScale, a path
      // random rows never reach. The other rows stay random.
      const std::size_t last = (static_cast<std::size_t>(p_.rows) - 1) * p_.hidden * es;
      TUNABLE_CUDA_CHECK(cudaMemsetAsync(static_cast<char*>(const_cast<void*>(args_[0].x)) + last, 0, p_.hidden * es, stream_));
      if (p_.fused)
        TUNABLE_CUDA_CHECK(cudaMemsetAsync(static_cast<char*>(args_[0].residual) + last, 0, p_.hidden * es, stream_));
    }
    if (p_.fused)
      TUNABLE_CUDA_CHECK(cudaMemcpyAsync(at(aux_, o_pristine_), args_[0].residual, n * es,
                                         cudaMemcpyDeviceToDevice, stream_));
    TUNABLE_RETURN_IF_ERROR(reference());
    return synchronize();
  }

  Status prepare_check() override {
    const NormArgs& a = args_[0];
    const DataType out_t = p_.fp8 == Fp8Scaling::kNone ? p_.dtype : DataType::kF8E4M3;
    TUNABLE_RETURN_IF_ERROR(fill_nan(a.out, out_t, n_, stream_));
    if (a.token_scales)
      TUNABLE_RETURN_IF_ERROR(fill_nan(a.token_scales, DataType::kF32, p_.rows, stream_));
    if (p_.fused)
      TUNABLE_CUDA_CHECK(cudaMemcpyAsync(a.residual, at(aux_, o_pristine_), n_ * size_of(p_.dtype),
                                         cudaMemcpyDeviceToDevice, stream_));
    return Status::ok();
  }

  Status check(const Tolerance& tol, NumericsReport* report) override {
    const NormArgs& a = args_[0];
    double* got = reinterpret_cast<double*>(at(aux_, o_got_));
    const auto ref = [&](std::size_t o) { return reinterpret_cast<const double*>(at(aux_, o)); };
    NumericsReport total, r;
    total.passed = true;
    // [rows, hidden] row-major is a (hidden x rows) column-major matrix for to_double.
    const DataType out_t = p_.fp8 == Fp8Scaling::kNone ? p_.dtype : DataType::kF8E4M3;
    TUNABLE_RETURN_IF_ERROR(to_double(a.out, out_t, p_.hidden, p_.rows, a.out_stride, got, stream_));
    if (p_.fp8 == Fp8Scaling::kNone)
      TUNABLE_RETURN_IF_ERROR(compare_on_device(got, ref(o_ref_out_), n_, tol, &r, stream_));
    else
      TUNABLE_RETURN_IF_ERROR(fp8_check(got, ref(o_ref_out_), n_, stream_, &r));
    total.ref_rms = r.ref_rms;
    merge(&total, r);
    if (p_.fused) {  // the residual must be exactly dtype(x + r)
      TUNABLE_RETURN_IF_ERROR(
          to_double(a.residual, p_.dtype, p_.hidden, p_.rows, a.residual_stride, got, stream_));
      TUNABLE_RETURN_IF_ERROR(compare_on_device(got, ref(o_ref_res_), n_, Tolerance{0, 0}, &r, stream_));
      merge(&total, r);
    }
    if (a.token_scales) {
      TUNABLE_RETURN_IF_ERROR(to_double(a.token_scales, DataType::kF32, p_.rows, 1, p_.rows, got, stream_));
      TUNABLE_RETURN_IF_ERROR(compare_on_device(got, ref(o_ref_tok_), p_.rows,
                                                Tolerance{0, std::max(1e-5, tol.rtol)}, &r, stream_));
      merge(&total, r);
    }
    *report = total;
    return Status::ok();
  }

  Tolerance default_tolerance() const override { return fused_tolerance(p_.dtype); }

 private:
  Status reference() {
    const NormArgs& a = args_[0];
    double* out = reinterpret_cast<double*>(at(aux_, o_ref_out_));
    double* res = p_.fused ? reinterpret_cast<double*>(at(aux_, o_ref_res_)) : nullptr;
    double* tok = a.token_scales ? reinterpret_cast<double*>(at(aux_, o_ref_tok_)) : nullptr;
    const void* pristine = p_.fused ? at(aux_, o_pristine_) : nullptr;
    const cudaError_t e = kernels::dispatch_float_type(kernel_float_type(p_.dtype), [&](auto tag) {
      using T = decltype(tag);
      // Its own launch status (a <<<>>> launch and cudaGetLastError would also report an older error).
      return kernels::launch_kernel_ex(kernel_rms_norm_reference<T>, dim3(static_cast<unsigned>(p_.rows)),
                                       dim3(kRefThreads), 0, stream_, false, dim3(1, 1, 1),
                                       static_cast<const T*>(a.x), static_cast<const T*>(pristine),
                                       static_cast<const T*>(a.weight), static_cast<int>(p_.hidden),
                                       static_cast<double>(a.eps), p_.weight == NormWeight::kGemma,
                                       static_cast<int>(p_.fp8), reinterpret_cast<const float*>(at(aux_, o_scale_)),
                                       out, res, tok);
    });
    TUNABLE_CUDA_CHECK(e);
    return Status::ok();
  }

  NormProblem p_;
  std::size_t n_ = 0;
  std::size_t o_scale_ = 0, o_pristine_ = 0, o_ref_out_ = 0, o_ref_res_ = 0, o_ref_tok_ = 0, o_got_ = 0;
};

// ---- act-and-mul ------------------------------------------------------------------------------------------

class ActWorkload final : public DeviceWorkload<ActArgs> {
 public:
  using DeviceWorkload::DeviceWorkload;

  Status init(int ordinal, const ActArgs& user, const Options& opt) {
    p_ = user.prob;
    p_.rows = rows_bucket(p_.rows);
    const std::size_t es = size_of(p_.dtype), oes = out_size(p_.dtype, p_.fp8);
    if (__builtin_mul_overflow(static_cast<std::size_t>(p_.rows), static_cast<std::size_t>(p_.d), &n_) || n_ > SIZE_MAX / 2)
      return Status(StatusCode::kNotSupported, "tuning this problem would need more bytes than memory can address");
    Carver copy;
    const std::size_t o_x = copy.take(2 * n_, es), o_out = copy.take(n_, oes);
    bytes_per_copy_ = copy.size();
    Carver aux;
    o_scale_ = aux.take(sizeof(float));
    o_ref_ = aux.take(n_, sizeof(double));
    o_got_ = aux.take(n_, sizeof(double));
    std::size_t copies = 1;
    TUNABLE_RETURN_IF_ERROR(rotation(opt, ordinal, bytes_per_copy_, aux.size(), &copies));
    TUNABLE_RETURN_IF_ERROR(data_.allocate(bytes_per_copy_ * copies));
    TUNABLE_RETURN_IF_ERROR(aux_.allocate(aux.size()));

    const float scale = kActStaticScale;
    TUNABLE_CUDA_CHECK(cudaMemcpyAsync(at(aux_, o_scale_), &scale, sizeof scale,
                                       cudaMemcpyHostToDevice, stream_));
    const std::uint64_t seed = fresh_seed();
    args_.resize(copies);
    for (std::size_t i = 0; i < copies; ++i) {
      char* base = at(data_, i * bytes_per_copy_);
      ActArgs& a = args_[i];
      a.prob = p_;
      a.x_stride = 2 * p_.d;
      a.out_stride = p_.d;
      a.x = base + o_x;
      a.out = base + o_out;
      a.scale = p_.fp8 == Fp8Scaling::kStatic ? reinterpret_cast<const float*>(at(aux_, o_scale_)) : nullptr;
      TUNABLE_RETURN_IF_ERROR(
          fill_random(base + o_x, p_.dtype, 2 * n_, seed_for(seed, i, 0), kActInputRange, stream_));
    }
    const cudaError_t e = kernels::dispatch_float_type(kernel_float_type(p_.dtype), [&](auto tag) {
      using T = decltype(tag);
      return kernels::launch_kernel_ex(kernel_act_and_mul_reference<T>, dim3(blocks_for(n_, 256)), dim3(256), 0,
                                       stream_, false, dim3(1, 1, 1), static_cast<const T*>(args_[0].x), p_.rows,
                                       static_cast<int>(p_.d), p_.act == Activation::kGeluTanh, args_[0].scale,
                                       reinterpret_cast<double*>(at(aux_, o_ref_)));
    });
    TUNABLE_CUDA_CHECK(e);
    return synchronize();
  }

  Status prepare_check() override {
    const DataType out_t = p_.fp8 == Fp8Scaling::kNone ? p_.dtype : DataType::kF8E4M3;
    return fill_nan(args_[0].out, out_t, n_, stream_);
  }

  Status check(const Tolerance& tol, NumericsReport* report) override {
    double* got = reinterpret_cast<double*>(at(aux_, o_got_));
    const double* ref = reinterpret_cast<const double*>(at(aux_, o_ref_));
    const DataType out_t = p_.fp8 == Fp8Scaling::kNone ? p_.dtype : DataType::kF8E4M3;
    TUNABLE_RETURN_IF_ERROR(to_double(args_[0].out, out_t, p_.d, p_.rows, args_[0].out_stride, got, stream_));
    if (p_.fp8 == Fp8Scaling::kNone) return compare_on_device(got, ref, n_, tol, report, stream_);
    return fp8_check(got, ref, n_, stream_, report);
  }

  Tolerance default_tolerance() const override { return fused_tolerance(p_.dtype); }

 private:
  ActProblem p_;
  std::size_t n_ = 0;
  std::size_t o_scale_ = 0, o_ref_ = 0, o_got_ = 0;
};

}  // namespace

Tolerance fused_tolerance(DataType dtype) {
  switch (dtype) {
    case DataType::kBF16: return {2e-3, 1e-2};  // output rounding: 2^-9 relative
    case DataType::kF16: return {2e-4, 2e-3};   // 2^-12
    default: return {1e-5, 1e-5};               // fp32 math, one rounding
  }
}

Status make_norm_workload(ContextImpl& ctx, const NormArgs& a, const Options& opt,
                          std::unique_ptr<Workload<NormArgs>>* out) {
  TUNABLE_RETURN_IF_ERROR(validate(a, /*with_pointers=*/false));
  cudaStream_t s = nullptr;
  TUNABLE_RETURN_IF_ERROR(context_stream(ctx, &s));
  auto w = std::make_unique<NormWorkload>(s);
  TUNABLE_RETURN_IF_ERROR(w->init(ctx.device().ordinal, a, opt));
  *out = std::move(w);
  return Status::ok();
}

Status make_act_workload(ContextImpl& ctx, const ActArgs& a, const Options& opt,
                         std::unique_ptr<Workload<ActArgs>>* out) {
  TUNABLE_RETURN_IF_ERROR(validate(a, /*with_pointers=*/false));
  cudaStream_t s = nullptr;
  TUNABLE_RETURN_IF_ERROR(context_stream(ctx, &s));
  auto w = std::make_unique<ActWorkload>(s);
  TUNABLE_RETURN_IF_ERROR(w->init(ctx.device().ordinal, a, opt));
  *out = std::move(w);
  return Status::ok();
}

kernels::FloatType kernel_float_type(DataType dtype) {
  switch (dtype) {
    case DataType::kF16: return kernels::FloatType::kF16;
    case DataType::kBF16: return kernels::FloatType::kBF16;
    case DataType::kF32: return kernels::FloatType::kF32;
    default: break;
  }
  // validate() admits only the three above; anything else makes the launchers return
  // cudaErrorInvalidValue rather than run a kernel of the wrong element type.
  return static_cast<kernels::FloatType>(-1);
}

}  // namespace tunable
