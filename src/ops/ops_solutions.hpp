// The candidates of the fused-op TunableOps: one Solution per launch configuration (its name
// generated from the configuration and parsed back by the provider) and the Default, which picks a
// configuration from the sizes and alignment of each call and so handles every valid problem.
#pragma once

#include <memory>
#include <vector>

#include "ops/ops_args.hpp"
#include "tune/solution.hpp"

namespace tunable {

SolutionPtr<NormArgs> norm_default_solution();
SolutionPtr<ActArgs> act_default_solution();
std::shared_ptr<const Provider<NormArgs>> norm_provider();
std::shared_ptr<const Provider<ActArgs>> act_provider();

/// The solution of one configuration (as a provider rebuilds it from its name).
SolutionPtr<NormArgs> make_solution(const NormConfig& c);
SolutionPtr<ActArgs> make_solution(const ActConfig& c);

/// Default first, then every provider candidate for a's problem (what tuning tries).
std::vector<SolutionPtr<NormArgs>> all_candidates(const NormArgs& a);
std::vector<SolutionPtr<ActArgs>> all_candidates(const ActArgs& a);

}  // namespace tunable
