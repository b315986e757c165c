// Many byte strings found in a text in one pass: an Aho-Corasick automaton searched leftmost-longest
// (the leftmost occurrence, the longest one starting there), as the `aho-corasick` crate's
// LeftmostLongest that Hugging Face `tokenizers` uses for added tokens.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace tunable::tok {

class LeftmostLongestMatcher {
 public:
  /// Pattern i is reported as i; of equal patterns the first wins; empty patterns are never found.
  void build(const std::vector<std::string_view>& patterns);
  bool empty() const { return lengths_.empty(); }
  /// The leftmost-longest match starting at or after `from`: its first byte and pattern, or false.
  /// Reads each byte once, plus at most the longest pattern's length past the match, whatever the
  /// number of patterns.
  bool find(std::string_view text, std::size_t from, std::size_t* begin, std::int32_t* pattern) const;

 private:
  struct Node {
    std::vector<std::pair<unsigned char, std::int32_t>> edges;  // sorted by byte
    std::int32_t fail = 0, depth = 0;
    std::int32_t pattern = -1;  ///< the pattern spelled by the path to this node
    std::int32_t longest = -1;  ///< the longest pattern that is a suffix of that path
  };
  std::int32_t child(std::int32_t n, unsigned char b) const;
  std::int32_t step(std::int32_t n, unsigned char b) const;
  std::vector<Node> nodes_;
  std::vector<std::size_t> lengths_;  ///< per pattern index (0 for one never stored)
  std::array<std::int32_t, 256> root_{};
};

}  // namespace tunable::tok
