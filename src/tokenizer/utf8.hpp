// UTF-8 helpers of the tokenizers: lossy validation (Python's decode(errors="replace") rule) and
// code-point splitting.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tunable::tok {

/// Whether `s` is well-formed UTF-8 (no surrogates, overlong forms or code points past U+10FFFF).
bool utf8_valid(std::string_view s);

/// `s` with every maximal ill-formed subsequence replaced by U+FFFD (Unicode's recommended practice,
/// which Python's "replace" handler and Rust's from_utf8_lossy follow).
std::string utf8_lossy(std::string_view s);

/// The code points of valid UTF-8 `s`, each as its byte string.
std::vector<std::string> utf8_chars(std::string_view s);

}  // namespace tunable::tok
