// The only place that reads TUNABLE_* environment variables.
#include "tunable/options.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

#include "core/numbers.hpp"

namespace tunable {
namespace {

[[noreturn]] void bad_value(const char* var, const std::string& value, const char* expected) {
  throw Error(StatusCode::kParseError,
              fmt::format("invalid value '{}' for {}: expected {}", value, var, expected));
}

bool parse_bool(const char* var, const std::string& v) {
  if (v == "1" || v == "true" || v == "TRUE" || v == "on" || v == "yes") return true;
  if (v == "0" || v == "false" || v == "FALSE" || v == "off" || v == "no") return false;
  bad_value(var, v, "0 or 1");
}

long long parse_int(const char* var, const std::string& v, long long lo, long long hi) {
  if (!plain_decimal(v, false)) bad_value(var, v, fmt::format("an integer in [{}, {}]", lo, hi).c_str());
  errno = 0;
  char* end = nullptr;
  long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || end != v.c_str() + v.size() || errno == ERANGE || x < lo || x > hi) {
    bad_value(var, v, fmt::format("an integer in [{}, {}]", lo, hi).c_str());
  }
  return x;
}

double parse_double(const char* var, const std::string& v, double lo, double hi) {
  if (!plain_decimal(v, true)) bad_value(var, v, fmt::format("a number in [{}, {}]", lo, hi).c_str());
  errno = 0;
  char* end = nullptr;
  double x = std::strtod(v.c_str(), &end);
  if (v.empty() || end != v.c_str() + v.size() || errno == ERANGE || !std::isfinite(x) || x < lo ||
      x > hi) {
    bad_value(var, v, fmt::format("a number in [{}, {}]", lo, hi).c_str());
  }
  return x;
}

// TUNABLE_NUMERICAL_CHECK: 0, 1 or ATOL_RTOL.
void parse_numerical_check(const std::string& v, Options* o) {
  const char* var = "TUNABLE_NUMERICAL_CHECK";
  auto us = v.find('_');
  if (us == std::string::npos) {
    o->numerical_check = parse_bool(var, v);
    return;
  }
  const char* expected = "0, 1 or ATOL_RTOL with two non-negative numbers (e.g. 1e-3_1e-3)";
  const std::string a = v.substr(0, us), r = v.substr(us + 1);
  auto tolerance = [&](const std::string& x) {
    errno = 0;
    char* end = nullptr;
    const double t = std::strtod(x.c_str(), &end);
    // ERANGE: "1e-400" would silently become 0, an exact-match check nobody asked for.
    if (!plain_decimal(x, true) || end != x.c_str() + x.size() || errno == ERANGE || !std::isfinite(t) ||
        !(t >= 0))
      bad_value(var, v, expected);
    return t;
  };
  const double atol = tolerance(a), rtol = tolerance(r);
  o->numerical_check = true;
  o->atol = atol;
  o->rtol = rtol;
}

}  // namespace

Options Options::from_environment() {
  Options o;
  auto get = [](const char* name, std::string* out) {
    const char* v = std::getenv(name);
    if (v == nullptr) return false;
    *out = v;
    return true;
  };
  std::string v;
  if (get("TUNABLE_ENABLED", &v)) o.enabled = parse_bool("TUNABLE_ENABLED", v);
  if (get("TUNABLE_TUNING", &v)) o.tuning = parse_bool("TUNABLE_TUNING", v);
  if (get("TUNABLE_FILENAME", &v)) o.filename = v;
  if (get("TUNABLE_VERBOSE", &v)) o.verbose = static_cast<int>(parse_int("TUNABLE_VERBOSE", v, 0, 3));
  if (get("TUNABLE_VERBOSE_FILENAME", &v)) {
    if (v.empty()) bad_value("TUNABLE_VERBOSE_FILENAME", v, "err, out or a file path");
    o.verbose_filename = v;
  }
  if (get("TUNABLE_NUMERICAL_CHECK", &v)) parse_numerical_check(v, &o);
  if (get("TUNABLE_MAX_TUNING_DURATION_MS", &v))
    o.max_tuning_duration_ms = parse_double("TUNABLE_MAX_TUNING_DURATION_MS", v, 0, 1e7);
  if (get("TUNABLE_MAX_TUNING_ITERATIONS", &v))
    o.max_tuning_iterations =
        static_cast<int>(parse_int("TUNABLE_MAX_TUNING_ITERATIONS", v, 0, 1000000000));
  if (get("TUNABLE_MAX_WARMUP_DURATION_MS", &v))
    o.max_warmup_duration_ms = parse_double("TUNABLE_MAX_WARMUP_DURATION_MS", v, 0, 1e7);
  if (get("TUNABLE_MAX_WARMUP_ITERATIONS", &v))
    o.max_warmup_iterations =
        static_cast<int>(parse_int("TUNABLE_MAX_WARMUP_ITERATIONS", v, 0, 1000000000));
  if (get("TUNABLE_GRAPH_TIEBREAK", &v)) o.graph_tiebreak = parse_bool("TUNABLE_GRAPH_TIEBREAK", v);
  if (get("TUNABLE_ROTATING_BUFFER_SIZE", &v))
    o.rotating_buffer_size_mib =
        static_cast<int>(parse_int("TUNABLE_ROTATING_BUFFER_SIZE", v, -1, 1 << 20));
  if (get("TUNABLE_RECORD_UNTUNED", &v)) o.record_untuned = parse_bool("TUNABLE_RECORD_UNTUNED", v);
  if (get("TUNABLE_UNTUNED_FILENAME", &v)) o.untuned_filename = v;
  if (get("TUNABLE_LOCK_TIMEOUT_MS", &v))
    o.lock_timeout_ms = static_cast<int>(parse_int("TUNABLE_LOCK_TIMEOUT_MS", v, 0, 3600000));
  if (get("TUNABLE_CUBLASLT_WORKSPACE_MIB", &v))
    o.workspace_mib = static_cast<int>(parse_int("TUNABLE_CUBLASLT_WORKSPACE_MIB", v, 0, 1 << 16));
  if (get("TUNABLE_CUBLASLT_EXHAUSTIVE", &v))
    o.exhaustive_candidates = static_cast<int>(parse_int("TUNABLE_CUBLASLT_EXHAUSTIVE", v, 0, 100000));
  throw_if_error(o.validate());
  return o;
}

Status Options::validate() const {
  auto bad = [](const std::string& what) { return Status(StatusCode::kInvalidArgument, what); };
  if (verbose < 0 || verbose > 3) return bad(fmt::format("verbose must be 0-3 (got {})", verbose));
  // Finite and bounded as the environment's values are: the tuner converts them to integer counts.
  if (!(max_tuning_duration_ms >= 0 && max_tuning_duration_ms <= 1e7))
    return bad(fmt::format("max_tuning_duration_ms must be in [0, 1e7] (got {})", max_tuning_duration_ms));
  if (!(max_warmup_duration_ms >= 0 && max_warmup_duration_ms <= 1e7))
    return bad(fmt::format("max_warmup_duration_ms must be in [0, 1e7] (got {})", max_warmup_duration_ms));
  // Negative: the per-dtype default; an infinite tolerance would pass every candidate.
  if (!std::isfinite(atol) || !std::isfinite(rtol))
    return bad(fmt::format("atol and rtol must be finite (got {}, {})", atol, rtol));
  if (max_tuning_iterations < 0)
    return bad(fmt::format("max_tuning_iterations must be >= 0 (got {})", max_tuning_iterations));
  if (max_warmup_iterations < 0)
    return bad(fmt::format("max_warmup_iterations must be >= 0 (got {})", max_warmup_iterations));
  if (rotating_buffer_size_mib < -1)
    return bad(fmt::format("rotating_buffer_size_mib must be >= -1 (got {})",
                           rotating_buffer_size_mib));
  if (lock_timeout_ms < 0 || lock_timeout_ms > 3600000)
    return bad(fmt::format("lock_timeout_ms must be in [0, 3600000] (got {})", lock_timeout_ms));
  if (workspace_mib < 0) return bad(fmt::format("workspace_mib must be >= 0 (got {})", workspace_mib));
  if (exhaustive_candidates < 0)
    return bad(fmt::format("exhaustive_candidates must be >= 0 (got {})", exhaustive_candidates));
  if (verbose_filename.empty()) return bad("verbose_filename must not be empty");
  if (record_untuned && untuned_filename.empty())
    return bad("record_untuned is set but untuned_filename is empty");
  return Status::ok();
}

}  // namespace tunable
