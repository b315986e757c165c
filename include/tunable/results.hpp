// Reading results and untuned files as the library reads them, for tools that show or replay them
// (`tunable show`, `tunable tune-file`). Reading never modifies a file, and a file of another build
// (mismatched validators) is read as it is: checking validators is a context's job.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "tunable/context.hpp"
#include "tunable/status.hpp"

namespace tunable {

/// A line that was skipped, and why.
struct FileDiagnostic {
  std::size_t line = 0;  ///< 1-based
  std::string message;
};

struct ResultsFileContents {
  std::vector<std::pair<std::string, std::string>> validators;  ///< (key, value) in file order
  std::vector<ResultRecord> records;                            ///< in file order
  std::vector<FileDiagnostic> diagnostics;
};

/// Reads and parses the results file at `path`. kIoError (naming the path) when it does not exist,
/// is not a regular file or cannot be read; bad lines are diagnostics, not errors.
Status read_results_file(const std::string& path, ResultsFileContents* out);

/// Reads an untuned file ("op_signature,params_signature" per line) in file order, repeats kept.
Status read_untuned_file(const std::string& path, std::vector<std::pair<std::string, std::string>>* problems,
                         std::vector<FileDiagnostic>* diagnostics);

/// Adds to `ctx`'s store and results file the records of `from` that it lacks (another process's
/// results: `tunable tune-file --devices` merges the files of its GPUs this way). A problem `ctx`
/// already holds keeps its solution. `from` must carry the validators `ctx` writes, every one equal
/// (a result is only valid for the GPU, driver and library it was timed with); otherwise nothing is
/// added and kInvalidArgument names the first that differs. `added` (optional) gets the count.
Status import_results(Context& ctx, const ResultsFileContents& from, std::size_t* added = nullptr);

}  // namespace tunable
