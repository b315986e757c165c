// The public face of the tuner's instruments (tunable/measure.hpp), so a benchmark measures exactly
// as the tuner does. fill_random and measure_copy_bandwidth are the library's own functions, defined
// in the CUDA and tuning layers.
#include "tunable/measure.hpp"

#include "core/error.hpp"
#include "cuda/cuda_util.hpp"
#include "tune/cuda_timing.hpp"

namespace tunable {

static_assert(CallTimer::kCallsPerPrime == EventTimer::kCallsPerPrime && CallTimer::kGroup == EventTimer::kGroup,
              "the public timer states the tuner's constants");

Status device_info(int ordinal, DeviceInfo* out) {
  return guarded("device_info", [&] {
    if (out == nullptr) return Status(StatusCode::kInvalidArgument, "device_info: null output");
    std::vector<std::pair<std::string, std::string>> facts;
    TUNABLE_RETURN_IF_ERROR(cuda_validators(ordinal, &facts));  // no device / bad ordinal, named
    const cudaDeviceProp& p = device_properties(ordinal);
    *out = DeviceInfo{};
    out->name = p.name;
    out->sm_count = p.multiProcessorCount;
    out->l2_bytes = static_cast<std::size_t>(p.l2CacheSize);
    out->cc_major = p.major;
    out->cc_minor = p.minor;
    TUNABLE_CUDA_CHECK(cudaDriverGetVersion(&out->driver_version));
    TUNABLE_CUDA_CHECK(cudaRuntimeGetVersion(&out->runtime_version));
    return Status::ok();
  });
}

struct CallTimer::Impl {
  EventTimer timer;
};

CallTimer::CallTimer(Stream stream, int prime_ns_per_call, int group)
    : impl_(std::make_unique<Impl>(Impl{EventTimer(reinterpret_cast<cudaStream_t>(stream), prime_ns_per_call, group)})) {}
CallTimer::~CallTimer() = default;

Status CallTimer::time_calls(int n, const std::function<Status(int)>& fn, std::vector<double>* ms) {
  return guarded("CallTimer::time_calls", [&] { return impl_->timer.time_calls(n, fn, ms); });
}

Status CallTimer::time_graph(int n, const std::function<Status(int)>& fn, int replays, std::vector<double>* ms) {
  return guarded("CallTimer::time_graph", [&] { return impl_->timer.time_graph(n, fn, replays, ms); });
}

}  // namespace tunable
