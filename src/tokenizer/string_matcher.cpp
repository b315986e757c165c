#include "tokenizer/string_matcher.hpp"

#include <algorithm>

namespace tunable::tok {

void LeftmostLongestMatcher::build(const std::vector<std::string_view>& patterns) {
  nodes_.assign(1, Node{});
  lengths_.assign(patterns.size(), 0);
  bool any = false;
  for (std::size_t i = 0; i < patterns.size(); ++i) {
    if (patterns[i].empty()) continue;
    std::int32_t at = 0;
    for (unsigned char b : patterns[i]) {
      std::int32_t next = child(at, b);
      if (next < 0) {
        next = static_cast<std::int32_t>(nodes_.size());
        auto& edges = nodes_[at].edges;
        edges.insert(std::lower_bound(edges.begin(), edges.end(), std::make_pair(b, 0)), {b, next});
        nodes_.push_back(Node{});
        nodes_.back().depth = nodes_[at].depth + 1;
      }
      at = next;
    }
    if (nodes_[at].pattern < 0) {
      nodes_[at].pattern = static_cast<std::int32_t>(i);
      lengths_[i] = patterns[i].size();
      any = true;
    }
  }
  if (!any) lengths_.clear();
  root_.fill(0);
  for (const auto& [b, n] : nodes_[0].edges) root_[b] = n;
  // Breadth first, so that a node's failure link (its longest proper suffix that is a trie path)
  // and that node's longest pattern ending here are known before the node's children need them.
  std::vector<std::int32_t> queue;
  for (const auto& e : nodes_[0].edges) queue.push_back(e.second);
  for (std::size_t q = 0; q < queue.size(); ++q) {
    const std::int32_t n = queue[q];
    Node& node = nodes_[n];
    node.longest = node.pattern >= 0 ? node.pattern : nodes_[node.fail].longest;
    for (const auto& [b, c] : node.edges) {
      nodes_[c].fail = n == 0 ? 0 : step(node.fail, b);
      queue.push_back(c);
    }
  }
}

bool LeftmostLongestMatcher::find(std::string_view text, std::size_t from, std::size_t* begin,
                                  std::int32_t* pattern) const {
  if (lengths_.empty()) return false;
  std::size_t best = std::string_view::npos;
  std::int32_t state = 0;
  for (std::size_t i = from; i < text.size(); ++i) {
    state = step(state, static_cast<unsigned char>(text[i]));
    const Node& n = nodes_[state];
    if (n.longest >= 0) {
      // The longest pattern ending here starts leftmost among those ending here; at the same start
      // as the best so far it is longer, since it ends later.
      const std::size_t start = i + 1 - lengths_[n.longest];
      if (start <= best) {
        best = start;
        *pattern = n.longest;
      }
    }
    // Any match not yet complete starts inside the `depth` bytes the automaton is following.
    if (best != std::string_view::npos && i + 1 - n.depth > best) break;
  }
  *begin = best;
  return best != std::string_view::npos;
}

std::int32_t LeftmostLongestMatcher::child(std::int32_t n, unsigned char b) const {
  const auto& e = nodes_[n].edges;
  const auto it = std::lower_bound(e.begin(), e.end(), std::make_pair(b, 0));
  return it != e.end() && it->first == b ? it->second : -1;
}

std::int32_t LeftmostLongestMatcher::step(std::int32_t n, unsigned char b) const {
  for (; n != 0; n = nodes_[n].fail)
    if (const std::int32_t c = child(n, b); c >= 0) return c;
  return root_[b];
}

}  // namespace tunable::tok
