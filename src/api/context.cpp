// Context: the composition root. It sits above every layer it composes: the validators come from
// the CPU providers and the CUDA layer, the store and file from the tuning layer.
#include "tunable/context.hpp"

#include <fmt/format.h>

#include <map>
#include <mutex>

#include "core/error.hpp"
#include "core/platform.hpp"
#include "cuda/cuda_util.hpp"
#include "gemm/cpu/cpu_gemm.hpp"
#include "tunable/version.hpp"
#include "tune/context_impl.hpp"

namespace tunable {
namespace {

std::vector<Validator> validators_for(Device dev) {
  std::vector<Validator> v{{"TUNABLE_VERSION", TUNABLE_VERSION_STRING}};
  if (dev.kind == DeviceKind::kCpu) {
    v.emplace_back("CPU_MODEL", sanitize_field(cpu_model()));
    v.emplace_back("OPENBLAS_VERSION", openblas_version());
  } else {
    throw_if_error(cuda_validators(dev.ordinal, &v));
  }
  // A value holding the file's separators (a GPU name with a comma) must not split its line.
  for (auto& kv : v) kv.second = sanitize_field(kv.second);
  return v;
}

}  // namespace

Context::Context(Device device) : Context(device, Options::from_environment()) {}

Context::Context(Device device, Options options)
    : impl_(std::make_unique<ContextImpl>(device, std::move(options), validators_for(device))) {}

Context::~Context() = default;

Device Context::device() const { return impl_->device(); }
Options Context::options() const { return impl_->options(); }
Status Context::set_options(const Options& options) {
  return guarded("set_options", [&] { return impl_->set_options(options); });
}
std::string Context::results_path() const { return impl_->results_path(); }
std::string Context::untuned_path() const { return impl_->untuned_path(); }
Status Context::load_results() {
  return guarded("load_results", [&] { return impl_->ensure_loaded(); });
}
std::vector<ResultRecord> Context::results() const { return impl_->results(); }
std::vector<std::pair<std::string, std::string>> Context::validators() const {
  return impl_->validators();
}
ContextStats Context::stats() const { return impl_->stats(); }
void Context::set_progress_callback(std::function<void(const TuneProgress&)> callback) {
  impl_->set_progress_callback(std::move(callback));
}

Context& default_context(Device device) {
  static std::mutex mu;
  static std::map<std::pair<int, int>, std::unique_ptr<Context>> contexts;
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = contexts[{static_cast<int>(device.kind), device.ordinal}];
  if (!slot) slot = std::make_unique<Context>(device);
  return *slot;
}

}  // namespace tunable
