// Numbers as a person (or this library's own writer) spells them in decimal. strtoll / strtod alone
// also take leading blanks, a '+', hex ("0x10") and, for doubles, "inf" or "nan".
#pragma once

#include <cctype>
#include <string>

namespace tunable {

/// Digits with an optional leading '-'; with `fraction`, also a point and an exponent.
inline bool plain_decimal(const std::string& v, bool fraction) {
  if (v.empty()) return false;
  const std::size_t first = v[0] == '-' ? 1 : 0;
  if (first >= v.size() || !(std::isdigit(static_cast<unsigned char>(v[first])) || (fraction && v[first] == '.')))
    return false;
  for (std::size_t i = first; i < v.size(); ++i) {
    const char c = v[i];
    const bool ok = std::isdigit(static_cast<unsigned char>(c)) ||
                    (fraction && (c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-'));
    if (!ok) return false;
  }
  return true;
}

}  // namespace tunable
