// Status propagation inside the library.
#pragma once

#include "tunable/status.hpp"

/// Returns a non-ok Status from the enclosing function.
#define TUNABLE_RETURN_IF_ERROR(expr)             \
  do {                                            \
    ::tunable::Status tunable_st_ = (expr);       \
    if (!tunable_st_.is_ok()) return tunable_st_; \
  } while (0)
