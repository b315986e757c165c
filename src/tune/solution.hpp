// The narrow interface every candidate sits behind, and the providers that enumerate them.
//
// Args is the op's argument bundle (problem description + operand pointers). A Solution's name is
// generated from its configuration and parsed back by its Provider, so a persisted result
// rebuilds exactly the same kernel or algorithm.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "tunable/status.hpp"
#include "tunable/types.hpp"

namespace tunable {

template <class Args>
class Solution {
 public:
  virtual ~Solution() = default;
  virtual const std::string& name() const = 0;
  /// ok, or kNotSupported / kMisaligned saying why this candidate cannot run `args`.
  virtual Status can_implement(const Args& args) const = 0;
  virtual std::size_t workspace_bytes(const Args& /*args*/) const { return 0; }
  /// Runs on `stream` (CPU solutions run synchronously and ignore it).
  virtual Status run(const Args& args, void* workspace, std::size_t workspace_bytes,
                     Stream stream) const = 0;
};

template <class Args>
using SolutionPtr = std::shared_ptr<const Solution<Args>>;

template <class Args>
class Provider {
 public:
  virtual ~Provider() = default;
  virtual std::string name() const = 0;
  /// Appends this provider's candidates for `args`; the tuner skips those that cannot implement.
  virtual Status enumerate(const Args& args, std::vector<SolutionPtr<Args>>* out) const = 0;
  /// Rebuilds a persisted solution; nullptr when `name` is not this provider's.
  virtual SolutionPtr<Args> from_name(const std::string& name, const Args& args) const = 0;
};

}  // namespace tunable
