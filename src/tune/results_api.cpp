// The public reading of results and untuned files (tunable/results.hpp) over the parsers the
// context's loader uses, so a tool shows exactly what a program would load.
#include "tunable/results.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.hpp"
#include "tune/context_impl.hpp"
#include "tune/results_file.hpp"

namespace tunable {
namespace {

Status read_existing(const std::string& path, std::string* text) {
  bool exists = false;
  TUNABLE_RETURN_IF_ERROR(read_file(path, text, &exists));
  if (!exists) return Status(StatusCode::kIoError, fmt::format("'{}' does not exist", path));
  return Status::ok();
}

std::vector<FileDiagnostic> to_public(const std::vector<ParseDiagnostic>& d) {
  std::vector<FileDiagnostic> out;
  out.reserve(d.size());
  for (const auto& x : d) out.push_back({x.line, x.message});
  return out;
}

}  // namespace

Status read_results_file(const std::string& path, ResultsFileContents* out) {
  return guarded("read_results_file", [&] {
    if (out == nullptr) return Status(StatusCode::kInvalidArgument, "read_results_file: null output");
    std::string text;
    TUNABLE_RETURN_IF_ERROR(read_existing(path, &text));
    ParsedResults p = parse_results(text);
    out->validators = std::move(p.validators);
    out->records = std::move(p.records);
    out->diagnostics = to_public(p.diagnostics);
    return Status::ok();
  });
}

Status read_untuned_file(const std::string& path, std::vector<std::pair<std::string, std::string>>* problems,
                         std::vector<FileDiagnostic>* diagnostics) {
  return guarded("read_untuned_file", [&] {
    if (problems == nullptr || diagnostics == nullptr)
      return Status(StatusCode::kInvalidArgument, "read_untuned_file: null output");
    std::string text;
    TUNABLE_RETURN_IF_ERROR(read_existing(path, &text));
    std::vector<ParseDiagnostic> d;
    *problems = parse_untuned(text, &d);
    *diagnostics = to_public(d);
    return Status::ok();
  });
}

Status import_results(Context& ctx, const ResultsFileContents& from, std::size_t* added) {
  if (added) *added = 0;
  return guarded("import_results", [&] {
    for (const auto& [key, value] : ctx.validators()) {
      const auto it = std::find_if(from.validators.begin(), from.validators.end(),
                                   [&, k = key](const auto& v) { return v.first == k; });
      if (it == from.validators.end())
        return Status(StatusCode::kInvalidArgument, fmt::format("the results to import have no validator {}", key));
      if (it->second != value)
        return Status(StatusCode::kInvalidArgument,
                      fmt::format("the results to import were made with {} {}, this context has {}", key,
                                  it->second, value));
    }
    ContextImpl& c = ctx.impl();
    TUNABLE_RETURN_IF_ERROR(c.ensure_loaded());
    for (const ResultRecord& r : from.records) {
      if (c.find(r.op_signature, r.params_signature)) continue;
      TUNABLE_RETURN_IF_ERROR(c.add_result(r));
      if (added) ++*added;
    }
    return Status::ok();
  });
}

}  // namespace tunable
