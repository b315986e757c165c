#include "tokenizer/utf8.hpp"

#include <cstdint>

namespace tunable::tok {
namespace {

/// Length of the well-formed sequence at s[i] (1-4), or 0 when ill-formed; `*bad` then receives
/// the length of the maximal ill-formed subpart to replace (at least 1).
std::size_t sequence_at(std::string_view s, std::size_t i, std::size_t* bad) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned c = b(i);
  if (c < 0x80) return 1;
  std::size_t need = 0;
  unsigned lo = 0x80, hi = 0xBF;  // the second byte's range (Unicode Table 3-7)
  if (c >= 0xC2 && c <= 0xDF) need = 1;
  else if (c == 0xE0) need = 2, lo = 0xA0;
  else if (c >= 0xE1 && c <= 0xEC) need = 2;
  else if (c == 0xED) need = 2, hi = 0x9F;
  else if (c >= 0xEE && c <= 0xEF) need = 2;
  else if (c == 0xF0) need = 3, lo = 0x90;
  else if (c >= 0xF1 && c <= 0xF3) need = 3;
  else if (c == 0xF4) need = 3, hi = 0x8F;
  else {
    *bad = 1;
    return 0;
  }
  std::size_t k = 1;
  for (; k <= need; ++k) {
    if (i + k >= s.size()) break;
    const unsigned x = b(i + k);
    const bool ok = k == 1 ? (x >= lo && x <= hi) : (x >= 0x80 && x <= 0xBF);
    if (!ok) break;
  }
  if (k == need + 1) return need + 1;
  *bad = k;  // the lead byte and the continuation bytes that were valid so far
  return 0;
}

}  // namespace

std::string utf8_lossy(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    std::size_t bad = 0;
    const std::size_t n = sequence_at(s, i, &bad);
    if (n) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      out.append("\xEF\xBF\xBD");
      i += bad;
    }
  }
  return out;
}

std::vector<std::string> utf8_chars(std::string_view s) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < s.size();) {
    std::size_t bad = 0;
    std::size_t n = sequence_at(s, i, &bad);
    if (n == 0) n = bad;  // callers pass valid text; never loop forever on bad input
    out.emplace_back(s.substr(i, n));
    i += n;
  }
  return out;
}

}  // namespace tunable::tok
