// Reading files a user or the network hands us (model directories, tokenizers): the type and size
// are checked on the open descriptor before a byte is read, so a FIFO never blocks the reader, a
// device is never read forever and a huge file is refused from its size.
#pragma once

#include <cstddef>
#include <string>

#include "tunable/status.hpp"

namespace tunable {

/// What stat(2) says about a path, errors kept apart from absence: a permission problem or a
/// symbolic-link loop is not "missing".
enum class PathState { kMissing, kPresent, kError };

/// The state of `path`; for kError, `why` (if given) receives the system's reason.
PathState probe_path(const std::string& path, std::string* why = nullptr);

/// An I/O Status for a path whose probe said kError: names the path and the reason.
Status path_error(const std::string& path, const std::string& why);

/// Reads all of `path` into `out`: a regular file of at most `max_bytes` (`limit_what` names the
/// limit in the message, e.g. "a config file"). Opened non-blocking, checked with fstat on the
/// descriptor that is then read, so the file cannot be swapped for a FIFO in between.
Status read_regular_file(const std::string& path, std::size_t max_bytes, const char* limit_what, std::string* out);

/// Opens `path` read-only for a caller that maps or reads it itself: the same checks as
/// read_regular_file except the size. Returns the descriptor in `fd` and its size in `size`.
Status open_regular_file(const std::string& path, int* fd, std::size_t* size);

}  // namespace tunable
