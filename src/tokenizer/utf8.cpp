#include "tokenizer/utf8.hpp"

#include <unicode/unistr.h>
#include <unicode/utf8.h>

#include <cstdint>
#include <cstring>

namespace tunable::tok {

// ICU's UTF-8 reading substitutes U+FFFD for each maximal ill-formed subsequence (its U8_NEXT
// follows Unicode's recommended practice since ICU 60), which is Python's and Rust's rule.
bool utf8_valid(std::string_view s) {
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  const auto n = static_cast<int32_t>(s.size());
  for (int32_t i = 0; i < n;) {
    // Prompts are mostly ASCII: eight bytes at a time while no high bit is set.
    if (n - i >= 8) {
      std::uint64_t w;
      std::memcpy(&w, p + i, 8);
      if ((w & 0x8080808080808080ull) == 0) {
        i += 8;
        continue;
      }
    }
    UChar32 c = 0;
    U8_NEXT(p, i, n, c);
    if (c < 0) return false;
  }
  return true;
}

// Most text is valid: checking first spares the round trip through UTF-16.
std::string utf8_lossy(std::string_view s) {
  if (utf8_valid(s)) return std::string(s);
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
