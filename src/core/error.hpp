// Status propagation inside the library.
#pragma once

#include <exception>
#include <new>
#include <string>

#include "tunable/status.hpp"

/// Returns a non-ok Status from the enclosing function.
#define TUNABLE_RETURN_IF_ERROR(expr)             \
  do {                                            \
    ::tunable::Status tunable_st_ = (expr);       \
    if (!tunable_st_.is_ok()) return tunable_st_; \
  } while (0)

namespace tunable {

/// Runs `fn` (returning Status) at a public entry point: whatever it throws (tunable::Error, an
/// allocation failure, a std::system_error from a lock) comes back as a Status, so a caller that
/// takes Statuses never sees an exception.
template <class Fn>
Status guarded(const char* entry, Fn&& fn) noexcept {
  try {
    return fn();
  } catch (const Error& e) {
    return e.status();
  } catch (const std::bad_alloc&) {
    return Status(StatusCode::kInternal, std::string(entry) + ": out of host memory");
  } catch (const std::exception& e) {
    return Status(StatusCode::kInternal, std::string(entry) + ": " + e.what());
  } catch (...) {
    return Status(StatusCode::kInternal, std::string(entry) + ": unknown exception");
  }
}

}  // namespace tunable
