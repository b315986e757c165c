// The nesting bound on the JSON files we read (config.json, safetensors headers, tokenizer.json).
// The JSON library parses any depth, but copying, printing or destroying a value recurses once per
// level, and so does our own reading of nested tokenizer components: 100,000 levels (a 200 KB
// file) overflow the stack. The text is scanned before it is parsed, in one linear pass.
#pragma once

#include <fmt/format.h>

#include <cstddef>
#include <string>

#include "tunable/status.hpp"

namespace tunable {

/// Arrays and objects nested deeper than this are refused; the deepest real file we know of
/// (a tokenizer.json's Sequence of Sequences) nests 7 levels.
constexpr int kMaxJsonDepth = 64;

/// kParseError naming `what` and the byte offset when [begin, end) nests deeper than kMaxJsonDepth.
/// Brackets inside strings do not count; text that is not JSON is left to the parser to refuse (the
/// scan is exact for any text the parser accepts).
inline Status check_json_depth(const char* begin, const char* end, const std::string& what) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (const char* p = begin; p != end; ++p) {
    const char c = *p;
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth)
        return Status(StatusCode::kParseError,
                      fmt::format("{}: JSON nested deeper than {} levels (at byte {}); the limit is {}", what,
                                  kMaxJsonDepth, p - begin, kMaxJsonDepth));
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return Status::ok();
}

}  // namespace tunable
