// Solutions and providers of the fused ops: thin wrappers over configurations and launches.
#include "ops/ops_solutions.hpp"

#include "ops/ops_workload.hpp"

namespace tunable {
namespace {

/// Device conditions beyond config_fits (which is host-only): the cluster kernels need sm_90.
Status runs_here(const NormConfig& c) {
  if (c.cluster > 1 && !cluster_candidates_supported())
    return Status(StatusCode::kNotSupported,
                  "thread-block cluster candidates need an sm_90 device and sm_90 device code");
  return Status::ok();
}
Status runs_here(const ActConfig&) { return Status::ok(); }

template <class Args, class Config>
class ConfigSolution final : public Solution<Args> {
 public:
  explicit ConfigSolution(const Config& c) : c_(c), name_(config_name(c)) {}
  const std::string& name() const override { return name_; }
  Status can_implement(const Args& a) const override {
    Status st = config_fits(a, c_);
    return st.is_ok() ? runs_here(c_) : st;
  }
  Status run(const Args& a, void*, std::size_t, Stream stream) const override {
    return launch_fused_op(a, c_, stream);
  }

 private:
  Config c_;
  std::string name_;
};

/// Picks its configuration per call, so any valid problem (misaligned, odd sizes) runs.
template <class Args>
class DefaultSolution final : public Solution<Args> {
 public:
  const std::string& name() const override { return name_; }
  Status can_implement(const Args&) const override { return Status::ok(); }
  Status run(const Args& a, void*, std::size_t, Stream stream) const override {
    return launch_fused_op(a, default_here(a), stream);
  }

 private:
  std::string name_ = "Default";
};

template <class Args, class Config>
class ConfigProvider final : public Provider<Args> {
 public:
  using Parse = std::optional<Config> (*)(std::string_view);
  ConfigProvider(std::string name, Parse parse) : name_(std::move(name)), parse_(parse) {}
  std::string name() const override { return name_; }
  Status enumerate(const Args& a, std::vector<SolutionPtr<Args>>* out) const override {
    for (const Config& c : candidate_configs(a)) {
      if (!runs_here(c).is_ok()) continue;  // e.g. cluster candidates below sm_90
      out->push_back(std::make_shared<ConfigSolution<Args, Config>>(c));
    }
    return Status::ok();
  }
  SolutionPtr<Args> from_name(const std::string& name, const Args&) const override {
    const std::optional<Config> c = parse_(name);
    if (!c) return nullptr;
    return std::make_shared<ConfigSolution<Args, Config>>(*c);
  }

 private:
  std::string name_;
  Parse parse_;
};

template <class Args, class Provider>
std::vector<SolutionPtr<Args>> collect(const Args& a, SolutionPtr<Args> def, const Provider& p) {
  std::vector<SolutionPtr<Args>> out{std::move(def)};
  (void)p->enumerate(a, &out);
  return out;
}

}  // namespace

SolutionPtr<NormArgs> norm_default_solution() {
  static const SolutionPtr<NormArgs> s = std::make_shared<DefaultSolution<NormArgs>>();
  return s;
}

SolutionPtr<ActArgs> act_default_solution() {
  static const SolutionPtr<ActArgs> s = std::make_shared<DefaultSolution<ActArgs>>();
  return s;
}

std::shared_ptr<const Provider<NormArgs>> norm_provider() {
  static const auto p =
      std::make_shared<ConfigProvider<NormArgs, NormConfig>>("rms_norm_kernels", &parse_norm_config);
  return p;
}

std::shared_ptr<const Provider<ActArgs>> act_provider() {
  static const auto p =
      std::make_shared<ConfigProvider<ActArgs, ActConfig>>("act_and_mul_kernels", &parse_act_config);
  return p;
}

SolutionPtr<NormArgs> make_solution(const NormConfig& c) {
  return std::make_shared<ConfigSolution<NormArgs, NormConfig>>(c);
}

SolutionPtr<ActArgs> make_solution(const ActConfig& c) {
  return std::make_shared<ConfigSolution<ActArgs, ActConfig>>(c);
}

std::vector<SolutionPtr<NormArgs>> all_candidates(const NormArgs& a) {
  return collect(a, norm_default_solution(), norm_provider());
}

std::vector<SolutionPtr<ActArgs>> all_candidates(const ActArgs& a) {
  return collect(a, act_default_solution(), act_provider());
}

}  // namespace tunable
