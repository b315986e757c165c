#include "tokenizer/utf8.hpp"

#include <unicode/unistr.h>
#include <unicode/utf8.h>

namespace tunable::tok {

// ICU's UTF-8 reading substitutes U+FFFD for each maximal ill-formed subsequence (its U8_NEXT
// follows Unicode's recommended practice since ICU 60), which is Python's and Rust's rule.
std::string utf8_lossy(std::string_view s) {
  std::string out;
  icu::UnicodeString::fromUTF8(icu::StringPiece(s.data(), static_cast<int32_t>(s.size()))).toUTF8String(out);
  return out;
}

std::vector<std::string> utf8_chars(std::string_view s) {
  std::vector<std::string> out;
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  const auto n = static_cast<int32_t>(s.size());
  for (int32_t i = 0; i < n;) {
    const int32_t start = i;
    UChar32 c = 0;
    U8_NEXT(p, i, n, c);  // advances over a code point (or an ill-formed run: callers pass valid text)
    out.emplace_back(s.substr(static_cast<std::size_t>(start), static_cast<std::size_t>(i - start)));
  }
  return out;
}

}  // namespace tunable::tok
