// tokenizer.json with a BPE model, as the `tokenizers` library runs it: added tokens split off
// the raw text first (leftmost, longest), each remaining segment normalized and pre-tokenized on
// its own, every piece merged by BPE (lowest merge rank first, leftmost among equals; unknown
// characters to byte tokens or the unknown token before merging), then the post-processor's
// template. Decoding runs the decoder chain on the tokens' strings and makes the bytes UTF-8.
//
// Regular expressions (pre-tokenizer splits: Llama 3's and GPT-2's patterns use \p{L}, \p{N},
// (?i:...) and look-ahead) and Unicode normalization (Qwen2's NFC) come from ICU.
#include <fmt/format.h>
#include <sys/stat.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/utf8.h>
#include <unicode/regex.h>
#include <unicode/unistr.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <functional>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <queue>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>

#include "core/error.hpp"
#include "core/files.hpp"
#include "core/json_depth.hpp"
#include "tokenizer/hf_tokenizer.hpp"
#include "tokenizer/string_matcher.hpp"
#include "tokenizer/utf8.hpp"

namespace tunable::tok {
namespace {

using json = nlohmann::json;

/// Token ids above this are refused: the id -> token table is as long as the largest id, and the
/// largest vocabularies hold about 2^18 tokens.
constexpr std::int64_t kMaxTokenId = (1 << 22) - 1;

Status bad(const std::string& what, const std::string& msg) {
  return Status(StatusCode::kParseError, fmt::format("{}: {}", what, msg));
}
Status unsupported(const std::string& what, const std::string& msg) {
  return Status(StatusCode::kNotSupported, fmt::format("{}: {}", what, msg));
}

// A JSON value's text for a message, cut short.
std::string shown(const json& v) {
  std::string s = v.dump();
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

/// A value of tokenizer.json and its path from the root ("pre_tokenizer.pretokenizers[1]"), read
/// through typed accessors whose errors name the file and the field: a member of the wrong type is
/// an error, never an exception or a silent default. Absent and null members leave the caller's
/// default.
struct Node {
  const json& j;
  std::string path;
  const std::string& what;

  std::string at(const std::string& key) const { return path.empty() ? key : path + "." + key; }
  Status error(const std::string& key, const std::string& msg) const { return bad(what, at(key) + " " + msg); }
  const json* member(const char* key) const {
    if (!j.is_object()) return nullptr;
    const auto it = j.find(key);
    return it == j.end() || it->is_null() ? nullptr : &*it;
  }
  Node child(const json& v, const std::string& sub) const { return Node{v, at(sub), what}; }
  Status string(const char* key, std::string* out) const {
    const json* v = member(key);
    if (v == nullptr) return Status::ok();
    if (!v->is_string()) return error(key, fmt::format("is {}, not a string", shown(*v)));
    *out = v->get<std::string>();
    return Status::ok();
  }
  Status boolean(const char* key, bool* out) const {
    const json* v = member(key);
    if (v == nullptr) return Status::ok();
    if (!v->is_boolean()) return error(key, fmt::format("is {}, not true or false", shown(*v)));
    *out = v->get<bool>();
    return Status::ok();
  }
  Status integer(const char* key, std::int64_t lo, std::int64_t hi, std::int64_t* out) const {
    const json* v = member(key);
    if (v == nullptr) return Status::ok();
    if (!v->is_number_integer() || (v->is_number_unsigned() && v->get<std::uint64_t>() > static_cast<std::uint64_t>(hi)) ||
        v->get<std::int64_t>() < lo || v->get<std::int64_t>() > hi)
      return error(key, fmt::format("is {}, not an integer in [{}, {}]", shown(*v), lo, hi));
    *out = v->get<std::int64_t>();
    return Status::ok();
  }
  /// A list member (null when absent); anything else is an error.
  Status array(const char* key, const json** out) const {
    *out = member(key);
    if (*out != nullptr && !(*out)->is_array()) return error(key, fmt::format("is {}, not a list", shown(**out)));
    return Status::ok();
  }
  /// An object member (null when absent); anything else is an error.
  Status object(const char* key, const json** out) const {
    *out = member(key);
    if (*out != nullptr && !(*out)->is_object()) return error(key, fmt::format("is {}, not an object", shown(**out)));
    return Status::ok();
  }
};

/// A component's "pattern": {"String": s} or {"Regex": r}.
Status pattern_of(const Node& n, std::string* text, bool* regex) {
  const json* p = nullptr;
  TUNABLE_RETURN_IF_ERROR(n.object("pattern", &p));
  if (p == nullptr) return n.error("pattern", "is missing (String or Regex)");
  const Node pn = n.child(*p, "pattern");
  if (p->contains("Regex")) {
    *regex = true;
    TUNABLE_RETURN_IF_ERROR(pn.string("Regex", text));
    return Status::ok();
  }
  *regex = false;
  if (!p->contains("String")) return n.error("pattern", "has neither String nor Regex");
  return pn.string("String", text);
}

/// A member that the `tokenizers` library holds as one character (Rust's char).
Status one_char(const Node& n, const char* key, std::string* out) {
  std::string v = *out;
  TUNABLE_RETURN_IF_ERROR(n.string(key, &v));
  if (utf8_chars(utf8_lossy(v)).size() != 1 || utf8_lossy(v) != v)
    return n.error(key, fmt::format("is '{}', not one character", v));
  *out = v;
  return Status::ok();
}

// GPT-2's byte <-> printable-character table of the ByteLevel pre-tokenizer and decoder.
struct ByteTable {
  std::string to_char[256];
  std::unordered_map<std::string, unsigned char> to_byte;
  ByteTable() {
    int n = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
      const int cp = printable ? b : 256 + n++;
      std::string s;
      icu::UnicodeString(static_cast<UChar32>(cp)).toUTF8String(s);
      to_char[b] = s;
      to_byte[s] = static_cast<unsigned char>(b);
    }
  }
};
const ByteTable& byte_table() {
  static const ByteTable t;
  return t;
}

const char* kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

/// A compiled pattern and the matches it finds in UTF-8 text, as byte ranges.
class Pattern {
 public:
  static Status compile(const std::string& pattern, bool literal, const std::string& what, std::unique_ptr<Pattern>* out) {
    UErrorCode e = U_ZERO_ERROR;
    UParseError pe;
    auto p = std::unique_ptr<Pattern>(new Pattern);
    p->re_.reset(icu::RegexPattern::compile(icu::UnicodeString::fromUTF8(pattern),
                                            literal ? static_cast<uint32_t>(UREGEX_LITERAL) : 0u, pe, e));
    if (U_FAILURE(e))
      return unsupported(what, fmt::format("the pattern '{}' does not compile ({}, offset {})", pattern,
                                           u_errorName(e), pe.offset));
    *out = std::move(p);
    return Status::ok();
  }
  /// Byte ranges [begin, end) of every non-empty match in `s`.
  std::vector<std::pair<std::size_t, std::size_t>> find_all(const std::string& s) const {
    std::vector<std::pair<std::size_t, std::size_t>> out;
    const icu::UnicodeString u = icu::UnicodeString::fromUTF8(s);
    // UTF-16 index -> byte offset.
    std::vector<std::size_t> byte_at(u.length() + 1, 0);
    std::size_t bytes = 0;
    for (int32_t i = 0; i < u.length();) {
      const UChar32 c = u.char32At(i);
      const int32_t w = U16_LENGTH(c);
      for (int32_t k = 0; k < w; ++k) byte_at[i + k] = bytes;
      bytes += c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
      i += w;
    }
    byte_at[u.length()] = bytes;
    UErrorCode e = U_ZERO_ERROR;
    std::unique_ptr<icu::RegexMatcher> m(re_->matcher(u, e));
    if (U_FAILURE(e)) return out;
    while (m->find(e) && U_SUCCESS(e)) {
      const int32_t b = m->start(e), en = m->end(e);
      if (en > b) out.emplace_back(byte_at[b], byte_at[en]);
    }
    return out;
  }

 private:
  Pattern() = default;
  std::unique_ptr<icu::RegexPattern> re_;
};

/// What a split does with the pieces its pattern matches (the library's SplitDelimiterBehavior).
enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

/// Splits `s` at the pattern's matches as the library does: the text is cut into matched and
/// unmatched runs (swapped with `invert`), then the matched runs are dropped, kept on their own,
/// joined to the run before or after, or merged with neighbouring matched runs.
std::vector<std::string> split_by(const Pattern& p, const std::string& s, SplitBehavior behavior, bool invert) {
  struct Run {
    std::size_t b, e;
    bool match;
  };
  std::vector<Run> runs;
  std::size_t at = 0;
  for (const auto& [b, e] : p.find_all(s)) {
    if (b > at) runs.push_back({at, b, invert});
    runs.push_back({b, e, !invert});
    at = e;
  }
  if (at < s.size()) runs.push_back({at, s.size(), invert});
  std::vector<std::pair<std::size_t, std::size_t>> out;
  bool previous_match = false;
  switch (behavior) {
    case SplitBehavior::kRemoved:
      for (const Run& r : runs)
        if (!r.match) out.emplace_back(r.b, r.e);
      break;
    case SplitBehavior::kIsolated:
      for (const Run& r : runs) out.emplace_back(r.b, r.e);
      break;
    case SplitBehavior::kMergedWithPrevious:
      for (const Run& r : runs) {
        if (r.match && !previous_match && !out.empty()) out.back().second = r.e;
        else out.emplace_back(r.b, r.e);
        previous_match = r.match;
      }
      break;
    case SplitBehavior::kMergedWithNext:
      for (auto it = runs.rbegin(); it != runs.rend(); ++it) {
        if (it->match && !previous_match && !out.empty()) out.back().first = it->b;
        else out.emplace_back(it->b, it->e);
        previous_match = it->match;
      }
      std::reverse(out.begin(), out.end());
      break;
    case SplitBehavior::kContiguous:
      for (const Run& r : runs) {
        if (r.match == previous_match && !out.empty()) out.back().second = r.e;
        else out.emplace_back(r.b, r.e);
        previous_match = r.match;
      }
      break;
  }
  std::vector<std::string> pieces;
  for (const auto& [b, e] : out)
    if (e > b) pieces.push_back(s.substr(b, e - b));
  return pieces;
}

void replace_all(std::string* s, const std::string& from, const std::string& to) {
  if (from.empty()) return;
  std::string out;
  std::size_t at = 0;
  for (std::size_t p; (p = s->find(from, at)) != std::string::npos; at = p + from.size()) {
    out.append(*s, at, p - at);
    out += to;
  }
  out.append(*s, at, std::string::npos);
  *s = std::move(out);
}

// ---- normalizers ------------------------------------------------------------------------------------

struct Normalizer {
  virtual ~Normalizer() = default;
  virtual void apply(std::string* s) const = 0;
};

struct SequenceNorm : Normalizer {
  std::vector<std::unique_ptr<Normalizer>> parts;
  void apply(std::string* s) const override {
    for (const auto& p : parts) p->apply(s);
  }
};
struct PrependNorm : Normalizer {
  std::string text;
  void apply(std::string* s) const override {
    if (!s->empty()) *s = text + *s;  // the tokenizers library leaves an empty string empty
  }
};
struct ReplaceNorm : Normalizer {
  std::string from, to;
  std::unique_ptr<Pattern> regex;  // when the pattern is a Regex
  void apply(std::string* s) const override {
    if (!regex) return replace_all(s, from, to);
    std::string out;
    std::size_t at = 0;
    for (const auto& [b, e] : regex->find_all(*s)) {
      out.append(*s, at, b - at);
      out += to;
      at = e;
    }
    out.append(*s, at, std::string::npos);
    *s = std::move(out);
  }
};
struct UnicodeNorm : Normalizer {
  const icu::Normalizer2* n = nullptr;
  void apply(std::string* s) const override {
    UErrorCode e = U_ZERO_ERROR;
    const icu::UnicodeString r = n->normalize(icu::UnicodeString::fromUTF8(*s), e);
    if (U_SUCCESS(e)) {
      s->clear();
      r.toUTF8String(*s);
    }
  }
};

Status parse_normalizer(const Node& n, std::unique_ptr<Normalizer>* out) {
  if (n.j.is_null()) return Status::ok();
  if (!n.j.is_object()) return bad(n.what, fmt::format("{} is {}, not an object", n.path, shown(n.j)));
  std::string type;
  TUNABLE_RETURN_IF_ERROR(n.string("type", &type));
  if (type == "Sequence") {
    auto s = std::make_unique<SequenceNorm>();
    const json* list = nullptr;
    TUNABLE_RETURN_IF_ERROR(n.array("normalizers", &list));
    if (list == nullptr) return n.error("normalizers", "is missing (a Sequence normalizer needs the list)");
    for (std::size_t i = 0; i < list->size(); ++i) {
      std::unique_ptr<Normalizer> x;
      TUNABLE_RETURN_IF_ERROR(parse_normalizer(n.child((*list)[i], fmt::format("normalizers[{}]", i)), &x));
      if (x) s->parts.push_back(std::move(x));
    }
    *out = std::move(s);
  } else if (type == "Prepend") {
    auto p = std::make_unique<PrependNorm>();
    TUNABLE_RETURN_IF_ERROR(n.string("prepend", &p->text));
    *out = std::move(p);
  } else if (type == "Replace") {
    auto r = std::make_unique<ReplaceNorm>();
    TUNABLE_RETURN_IF_ERROR(n.string("content", &r->to));
    std::string pat;
    bool regex = false;
    TUNABLE_RETURN_IF_ERROR(pattern_of(n, &pat, &regex));
    if (regex) TUNABLE_RETURN_IF_ERROR(Pattern::compile(pat, false, n.what, &r->regex));
    else r->from = pat;
    *out = std::move(r);
  } else if (type == "NFC" || type == "NFD" || type == "NFKC" || type == "NFKD") {
    UErrorCode e = U_ZERO_ERROR;
    auto u = std::make_unique<UnicodeNorm>();
    u->n = type == "NFC" ? icu::Normalizer2::getNFCInstance(e)
         : type == "NFD" ? icu::Normalizer2::getNFDInstance(e)
         : type == "NFKC" ? icu::Normalizer2::getNFKCInstance(e)
                          : icu::Normalizer2::getNFKDInstance(e);
    if (U_FAILURE(e)) return unsupported(n.what, fmt::format("{} normalization is unavailable ({})", type, u_errorName(e)));
    *out = std::move(u);
  } else {
    return unsupported(n.what, fmt::format("normalizer type '{}' is not supported (Sequence, Prepend, Replace, NFC, "
                                         "NFD, NFKC, NFKD)", type));
  }
  return Status::ok();
}

// ---- pre-tokenizers ---------------------------------------------------------------------------------

struct PreTokenizer {
  virtual ~PreTokenizer() = default;
  /// Splits each piece further; `first` marks the pieces that start the whole input.
  virtual void apply(std::vector<std::string>* pieces, std::vector<bool>* first) const = 0;
};

void split_each(std::vector<std::string>* pieces, std::vector<bool>* first,
                const std::function<std::vector<std::string>(const std::string&)>& f) {
  std::vector<std::string> out;
  std::vector<bool> fo;
  for (std::size_t i = 0; i < pieces->size(); ++i) {
    bool is_first = (*first)[i];
    for (std::string& p : f((*pieces)[i])) {
      out.push_back(std::move(p));
      fo.push_back(is_first);
      is_first = false;
    }
  }
  *pieces = std::move(out);
  *first = std::move(fo);
}

struct SequencePre : PreTokenizer {
  std::vector<std::unique_ptr<PreTokenizer>> parts;
  void apply(std::vector<std::string>* p, std::vector<bool>* f) const override {
    for (const auto& x : parts) x->apply(p, f);
  }
};
struct SplitPre : PreTokenizer {
  std::unique_ptr<Pattern> pattern;
  SplitBehavior behavior = SplitBehavior::kIsolated;
  bool invert = false;
  void apply(std::vector<std::string>* p, std::vector<bool>* f) const override {
    split_each(p, f, [&](const std::string& s) { return split_by(*pattern, s, behavior, invert); });
  }
};
struct ByteLevelPre : PreTokenizer {
  bool add_prefix_space = false;
  std::unique_ptr<Pattern> gpt2;  // use_regex
  void apply(std::vector<std::string>* p, std::vector<bool>* f) const override {
    split_each(p, f, [&](const std::string& s0) {
      std::string s = s0;
      if (add_prefix_space && !s.empty() && s[0] != ' ') s = " " + s;
      std::vector<std::string> parts =
          gpt2 ? split_by(*gpt2, s, SplitBehavior::kIsolated, false) : std::vector<std::string>{s};
      const ByteTable& t = byte_table();
      for (std::string& x : parts) {
        std::string m;
        for (unsigned char c : x) m += t.to_char[c];
        x = std::move(m);
      }
      return parts;
    });
  }
};
struct MetaspacePre : PreTokenizer {
  std::string replacement = "\xE2\x96\x81";
  std::string prepend_scheme = "always";
  bool split = true;
  void apply(std::vector<std::string>* p, std::vector<bool>* f) const override {
    std::vector<std::string> out;
    std::vector<bool> fo;
    for (std::size_t i = 0; i < p->size(); ++i) {
      std::string s = (*p)[i];
      replace_all(&s, " ", replacement);
      const bool prepend = prepend_scheme == "always" || (prepend_scheme == "first" && (*f)[i]);
      if (prepend && s.compare(0, replacement.size(), replacement) != 0) s = replacement + s;
      if (!split) {
        out.push_back(s);
        fo.push_back((*f)[i]);
        continue;
      }
      // Each word begins with the replacement character (merged with the next piece).
      std::size_t at = 0;
      bool is_first = (*f)[i];
      while (at < s.size()) {
        std::size_t next = s.find(replacement, at + (s.compare(at, replacement.size(), replacement) == 0 ? replacement.size() : 0));
        if (next == std::string::npos) next = s.size();
        out.push_back(s.substr(at, next - at));
        fo.push_back(is_first);
        is_first = false;
        at = next;
      }
    }
    *p = std::move(out);
    *f = std::move(fo);
  }
};
/// Bytes of the code point starting at byte `i` of `s` when it is numeric as Rust's
/// char::is_numeric has it (general categories Nd, Nl, No: ½ ² ① Ⅻ ０ ٣ ५ 𝟘, not only 0-9), else 0.
std::size_t numeric_at(const std::string& s, std::size_t i) {
  const auto c0 = static_cast<unsigned char>(s[i]);
  if (c0 < 0x80) return c0 >= '0' && c0 <= '9' ? 1 : 0;
  int32_t j = static_cast<int32_t>(i);
  UChar32 c = 0;
  U8_NEXT(reinterpret_cast<const uint8_t*>(s.data()), j, static_cast<int32_t>(s.size()), c);
  return c >= 0 && (U_GET_GC_MASK(c) & U_GC_N_MASK) ? static_cast<std::size_t>(j) - i : 0;
}

struct DigitsPre : PreTokenizer {
  bool individual = false;
  void apply(std::vector<std::string>* p, std::vector<bool>* f) const override {
    split_each(p, f, [&](const std::string& s) {
      std::vector<std::string> out;
      std::size_t at = 0;
      for (std::size_t i = 0; i < s.size();) {
        if (std::size_t w = numeric_at(s, i)) {
          std::size_t j = i + w;
          if (!individual)
            while (j < s.size() && (w = numeric_at(s, j))) j += w;
          if (i > at) out.push_back(s.substr(at, i - at));
          out.push_back(s.substr(i, j - i));
          at = i = j;
        } else {
          ++i;
        }
      }
      if (at < s.size()) out.push_back(s.substr(at));
      return out;
    });
  }
};

Status parse_pre_tokenizer(const Node& n, bool* byte_level, std::unique_ptr<PreTokenizer>* out) {
  if (n.j.is_null()) return Status::ok();
  if (!n.j.is_object()) return bad(n.what, fmt::format("{} is {}, not an object", n.path, shown(n.j)));
  const std::string& what = n.what;
  std::string type;
  TUNABLE_RETURN_IF_ERROR(n.string("type", &type));
  if (type == "Sequence") {
    auto s = std::make_unique<SequencePre>();
    const json* list = nullptr;
    TUNABLE_RETURN_IF_ERROR(n.array("pretokenizers", &list));
    if (list == nullptr) return n.error("pretokenizers", "is missing (a Sequence pre_tokenizer needs the list)");
    for (std::size_t i = 0; i < list->size(); ++i) {
      std::unique_ptr<PreTokenizer> p;
      TUNABLE_RETURN_IF_ERROR(parse_pre_tokenizer(n.child((*list)[i], fmt::format("pretokenizers[{}]", i)), byte_level, &p));
      if (p) s->parts.push_back(std::move(p));
    }
    *out = std::move(s);
  } else if (type == "Split") {
    auto s = std::make_unique<SplitPre>();
    std::string behavior;
    TUNABLE_RETURN_IF_ERROR(n.string("behavior", &behavior));
    static const std::pair<const char*, SplitBehavior> kBehaviors[] = {
        {"Removed", SplitBehavior::kRemoved},
        {"Isolated", SplitBehavior::kIsolated},
        {"MergedWithPrevious", SplitBehavior::kMergedWithPrevious},
        {"MergedWithNext", SplitBehavior::kMergedWithNext},
        {"Contiguous", SplitBehavior::kContiguous}};
    bool known = false;
    for (const auto& [name, b] : kBehaviors)
      if (behavior == name) s->behavior = b, known = true;
    if (!known)
      return bad(what, fmt::format("Split behavior '{}' is not one of Removed, Isolated, MergedWithPrevious, "
                                   "MergedWithNext, Contiguous", behavior));
    TUNABLE_RETURN_IF_ERROR(n.boolean("invert", &s->invert));
    std::string pat;
    bool regex = false;
    TUNABLE_RETURN_IF_ERROR(pattern_of(n, &pat, &regex));
    TUNABLE_RETURN_IF_ERROR(Pattern::compile(pat, !regex, what, &s->pattern));
    *out = std::move(s);
  } else if (type == "ByteLevel") {
    auto b = std::make_unique<ByteLevelPre>();
    bool use_regex = true;
    TUNABLE_RETURN_IF_ERROR(n.boolean("add_prefix_space", &b->add_prefix_space));
    TUNABLE_RETURN_IF_ERROR(n.boolean("use_regex", &use_regex));
    if (use_regex) TUNABLE_RETURN_IF_ERROR(Pattern::compile(kGpt2Pattern, false, what, &b->gpt2));
    *byte_level = true;
    *out = std::move(b);
  } else if (type == "Metaspace") {
    auto m = std::make_unique<MetaspacePre>();
    // An empty replacement made the word split loop forever, growing its output.
    TUNABLE_RETURN_IF_ERROR(one_char(n, "replacement", &m->replacement));
    bool add_prefix_space = true;
    TUNABLE_RETURN_IF_ERROR(n.boolean("add_prefix_space", &add_prefix_space));
    if (n.member("prepend_scheme")) TUNABLE_RETURN_IF_ERROR(n.string("prepend_scheme", &m->prepend_scheme));
    else if (n.member("add_prefix_space")) m->prepend_scheme = add_prefix_space ? "always" : "never";
    if (m->prepend_scheme != "always" && m->prepend_scheme != "first" && m->prepend_scheme != "never")
      return bad(what, fmt::format("Metaspace prepend_scheme '{}'", m->prepend_scheme));
    TUNABLE_RETURN_IF_ERROR(n.boolean("split", &m->split));
    *out = std::move(m);
  } else if (type == "Digits") {
    auto d = std::make_unique<DigitsPre>();
    TUNABLE_RETURN_IF_ERROR(n.boolean("individual_digits", &d->individual));
    *out = std::move(d);
  } else {
    return unsupported(what, fmt::format("pre_tokenizer type '{}' is not supported (Sequence, Split, ByteLevel, "
                                         "Metaspace, Digits)", type));
  }
  return Status::ok();
}

// ---- decoders ---------------------------------------------------------------------------------------

struct Decoder {
  virtual ~Decoder() = default;
  virtual void apply(std::vector<std::string>* tokens) const = 0;
};
struct SequenceDec : Decoder {
  std::vector<std::unique_ptr<Decoder>> parts;
  void apply(std::vector<std::string>* t) const override {
    for (const auto& p : parts) p->apply(t);
  }
};
struct ReplaceDec : Decoder {
  std::string from, to;
  void apply(std::vector<std::string>* t) const override {
    for (std::string& s : *t) replace_all(&s, from, to);
  }
};
/// Runs of <0xXX> tokens become their bytes when those form UTF-8, else one U+FFFD per byte.
struct ByteFallbackDec : Decoder {
  static int byte_of(const std::string& s) {
    if (s.size() != 6 || s.compare(0, 3, "<0x") != 0 || s[5] != '>') return -1;
    int v = 0;
    for (int i = 3; i < 5; ++i) {
      const char c = s[i];
      const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
      if (d < 0) return -1;
      v = v * 16 + d;
    }
    return v;
  }
  void apply(std::vector<std::string>* t) const override {
    std::vector<std::string> out;
    std::string run;
    std::size_t run_tokens = 0;
    auto flush = [&] {
      if (run_tokens == 0) return;
      if (utf8_lossy(run) == run) {
        out.push_back(run);
      } else {
        for (std::size_t i = 0; i < run_tokens; ++i) out.push_back("\xEF\xBF\xBD");
      }
      run.clear();
      run_tokens = 0;
    };
    for (std::string& s : *t) {
      const int b = byte_of(s);
      if (b >= 0) {
        run.push_back(static_cast<char>(b));
        ++run_tokens;
      } else {
        flush();
        out.push_back(std::move(s));
      }
    }
    flush();
    *t = std::move(out);
  }
};
struct FuseDec : Decoder {
  void apply(std::vector<std::string>* t) const override {
    std::string all;
    for (const std::string& s : *t) all += s;
    *t = {all};
  }
};
struct StripDec : Decoder {
  std::string content;
  std::size_t start = 0, stop = 0;
  void apply(std::vector<std::string>* t) const override {
    for (std::string& s : *t) {
      std::vector<std::string> ch = utf8_chars(s);
      std::size_t b = 0, e = ch.size();
      while (b < start && b < e && ch[b] == content) ++b;
      std::size_t stripped = 0;
      while (stripped < stop && e > b && ch[e - 1] == content) --e, ++stripped;
      std::string r;
      for (std::size_t i = b; i < e; ++i) r += ch[i];
      s = std::move(r);
    }
  }
};
struct ByteLevelDec : Decoder {
  void apply(std::vector<std::string>* t) const override {
    // A token whose characters are all in the byte alphabet becomes those bytes; any other (an
    // added token's text) stays as it is.
    const ByteTable& bt = byte_table();
    std::string bytes;
    for (const std::string& s : *t) {
      std::string mapped;
      bool all = true;
      for (const std::string& c : utf8_chars(s)) {
        const auto it = bt.to_byte.find(c);
        if (it == bt.to_byte.end()) {
          all = false;
          break;
        }
        mapped.push_back(static_cast<char>(it->second));
      }
      bytes += all ? mapped : s;
    }
    *t = {bytes};
  }
};
struct MetaspaceDec : Decoder {
  std::string replacement = "\xE2\x96\x81";
  bool strip_first = true;
  // As the library does it: the first token loses every replacement character (not only a
  // leading one), the others turn them into spaces.
  void apply(std::vector<std::string>* t) const override {
    for (std::size_t i = 0; i < t->size(); ++i) replace_all(&(*t)[i], replacement, i == 0 && strip_first ? "" : " ");
  }
};

Status parse_decoder(const Node& n, std::unique_ptr<Decoder>* out) {
  if (n.j.is_null()) return Status::ok();
  if (!n.j.is_object()) return bad(n.what, fmt::format("{} is {}, not an object", n.path, shown(n.j)));
  const std::string& what = n.what;
  std::string type;
  TUNABLE_RETURN_IF_ERROR(n.string("type", &type));
  if (type == "Sequence") {
    auto s = std::make_unique<SequenceDec>();
    const json* list = nullptr;
    TUNABLE_RETURN_IF_ERROR(n.array("decoders", &list));
    if (list == nullptr) return n.error("decoders", "is missing (a Sequence decoder needs the list)");
    for (std::size_t i = 0; i < list->size(); ++i) {
      std::unique_ptr<Decoder> d;
      TUNABLE_RETURN_IF_ERROR(parse_decoder(n.child((*list)[i], fmt::format("decoders[{}]", i)), &d));
      if (d) s->parts.push_back(std::move(d));
    }
    *out = std::move(s);
  } else if (type == "Replace") {
    auto r = std::make_unique<ReplaceDec>();
    bool regex = false;
    TUNABLE_RETURN_IF_ERROR(pattern_of(n, &r->from, &regex));
    if (regex) return unsupported(what, "Replace decoder with a Regex pattern is not supported");
    TUNABLE_RETURN_IF_ERROR(n.string("content", &r->to));
    *out = std::move(r);
  } else if (type == "ByteFallback") {
    *out = std::make_unique<ByteFallbackDec>();
  } else if (type == "Fuse") {
    *out = std::make_unique<FuseDec>();
  } else if (type == "Strip") {
    auto s = std::make_unique<StripDec>();
    TUNABLE_RETURN_IF_ERROR(one_char(n, "content", &s->content));
    std::int64_t start = 0, stop = 0;
    TUNABLE_RETURN_IF_ERROR(n.integer("start", 0, 1 << 20, &start));
    TUNABLE_RETURN_IF_ERROR(n.integer("stop", 0, 1 << 20, &stop));
    s->start = static_cast<std::size_t>(start);
    s->stop = static_cast<std::size_t>(stop);
    *out = std::move(s);
  } else if (type == "ByteLevel") {
    *out = std::make_unique<ByteLevelDec>();
  } else if (type == "Metaspace") {
    auto m = std::make_unique<MetaspaceDec>();
    TUNABLE_RETURN_IF_ERROR(one_char(n, "replacement", &m->replacement));
    std::string scheme;
    bool add_prefix_space = true;
    TUNABLE_RETURN_IF_ERROR(n.string("prepend_scheme", &scheme));
    TUNABLE_RETURN_IF_ERROR(n.boolean("add_prefix_space", &add_prefix_space));
    m->strip_first = scheme.empty() ? add_prefix_space : scheme != "never";
    *out = std::move(m);
  } else {
    return unsupported(what, fmt::format("decoder type '{}' is not supported (Sequence, Replace, ByteFallback, Fuse, "
                                         "Strip, ByteLevel, Metaspace)", type));
  }
  return Status::ok();
}

// ---- the tokenizer ----------------------------------------------------------------------------------

struct AddedToken {
  std::int32_t id = 0;
  std::string content;
  bool special = false, lstrip = false, rstrip = false;
  bool normalized = false;  ///< matched in the normalized text (else in the raw text)
};

/// A piece of the input on its way to ids: text, or an added token's id.
struct Piece {
  std::string text;
  std::int32_t id = -1;
  bool first = false;  ///< starts the input (Metaspace's prepend_scheme "first")
};

/// The added tokens of one kind (matched in the raw text or in the normalized text), found as the
/// library finds them: visiting every token at every cut was quadratic in a chat full of special
/// tokens.
class AddedMatcher {
 public:
  /// Tokens of `tokens` whose `normalized` equals `normalized`; of equal contents the first wins.
  void build(const std::vector<AddedToken>& tokens, bool normalized) {
    tokens_.clear();
    std::vector<std::string_view> contents;
    for (const AddedToken& t : tokens) {
      if (t.normalized != normalized) continue;
      tokens_.push_back(&t);
      contents.push_back(t.content);
    }
    matcher_.build(contents);
  }
  /// The leftmost-longest match starting at or after `from`: its first byte and token, or false.
  bool find(const std::string& text, std::size_t from, std::size_t* begin, const AddedToken** token) const {
    std::int32_t i = -1;
    if (!matcher_.find(text, from, begin, &i)) return false;
    *token = tokens_[static_cast<std::size_t>(i)];
    return true;
  }

 private:
  LeftmostLongestMatcher matcher_;
  std::vector<const AddedToken*> tokens_;  // into the tokenizer's added_, which outlives this
};

class HfTokenizer final : public Tokenizer {
 public:
  Status load(const std::string& text, const std::string& what);
  Status encode(std::string_view text, bool add_special_tokens, std::vector<std::int32_t>* ids) const override;
  Status decode(const std::vector<std::int32_t>& ids, bool skip_special_tokens, std::string* text) const override;
  std::int32_t vocab_size() const override { return static_cast<std::int32_t>(id_to_token_.size()); }

 private:
  void bpe(const std::string& word, std::vector<std::int32_t>* out) const;
  /// Splits `text` at the added tokens of the given kind (leftmost match, longest at a position).
  void split_added(const std::string& text, bool normalized, std::vector<Piece>* out) const;
  std::unordered_map<std::string, std::int32_t> vocab_;
  std::vector<std::string> id_to_token_;
  std::vector<bool> special_;
  /// (left id, right id) -> (rank, merged id)
  std::unordered_map<std::uint64_t, std::pair<std::int32_t, std::int32_t>> merges_;
  std::vector<AddedToken> added_;  // longest first
  AddedMatcher raw_added_, normalized_added_;  // over added_, found in the raw / normalized text
  std::unique_ptr<Normalizer> normalizer_;
  std::unique_ptr<PreTokenizer> pre_;
  std::unique_ptr<Decoder> decoder_;
  bool byte_level_ = false, byte_fallback_ = false, ignore_merges_ = false, fuse_unk_ = false;
  std::int32_t unk_ = -1;
  std::vector<std::int32_t> prefix_, suffix_;  // the post-processor's template around $A
  std::int32_t byte_ids_[256];
  mutable std::mutex cache_mu_;
  mutable std::unordered_map<std::string, std::vector<std::int32_t>> cache_;
};

/// The post-processor's template around $A. `id_of` gives a token's id (-1: none), `is_token`
/// whether an id is one of the vocabulary's: an id the model has no token for must not reach it.
Status parse_post_processor(const Node& n, const std::function<std::int32_t(const std::string&)>& id_of,
                            const std::function<bool(std::int64_t)>& is_token, std::vector<std::int32_t>* prefix,
                            std::vector<std::int32_t>* suffix) {
  if (n.j.is_null()) return Status::ok();
  if (!n.j.is_object()) return bad(n.what, fmt::format("{} is {}, not an object", n.path, shown(n.j)));
  const std::string& what = n.what;
  std::string type;
  TUNABLE_RETURN_IF_ERROR(n.string("type", &type));
  if (type == "Sequence") {
    const json* list = nullptr;
    TUNABLE_RETURN_IF_ERROR(n.array("processors", &list));
    for (std::size_t i = 0; list && i < list->size(); ++i)
      TUNABLE_RETURN_IF_ERROR(parse_post_processor(n.child((*list)[i], fmt::format("processors[{}]", i)), id_of,
                                                   is_token, prefix, suffix));
    return Status::ok();
  }
  if (type == "ByteLevel") return Status::ok();  // offsets only
  if (type != "TemplateProcessing")
    return unsupported(what, fmt::format("post_processor type '{}' is not supported (TemplateProcessing, ByteLevel, "
                                         "Sequence)", type));
  const json *specials = nullptr, *single = nullptr;
  TUNABLE_RETURN_IF_ERROR(n.object("special_tokens", &specials));
  TUNABLE_RETURN_IF_ERROR(n.array("single", &single));
  bool seen_a = false;
  for (std::size_t i = 0; single && i < single->size(); ++i) {
    const Node item = n.child((*single)[i], fmt::format("single[{}]", i));
    const json *seq = nullptr, *special = nullptr;
    TUNABLE_RETURN_IF_ERROR(item.object("Sequence", &seq));
    TUNABLE_RETURN_IF_ERROR(item.object("SpecialToken", &special));
    if (seq) {
      std::string id;
      TUNABLE_RETURN_IF_ERROR(item.child(*seq, "Sequence").string("id", &id));
      if (id != "A") return unsupported(what, "a single template over a sequence other than $A");
      seen_a = true;
    } else if (special) {
      std::string name;
      TUNABLE_RETURN_IF_ERROR(item.child(*special, "SpecialToken").string("id", &name));
      std::vector<std::int32_t> ids;
      const json* entry = specials ? n.child(*specials, "special_tokens").member(name.c_str()) : nullptr;
      const json* given = nullptr;
      const Node en = entry ? n.child(*specials, "special_tokens").child(*entry, name) : n;
      if (entry) TUNABLE_RETURN_IF_ERROR(en.array("ids", &given));
      if (given) {
        for (std::size_t k = 0; k < given->size(); ++k) {
          const json& v = (*given)[k];
          if (!v.is_number_integer() || !is_token(v.get<std::int64_t>()) ||
              (v.is_number_unsigned() && v.get<std::uint64_t>() > INT32_MAX))
            return en.error(fmt::format("ids[{}]", k), fmt::format("is {}, not a token id of the vocabulary", shown(v)));
          ids.push_back(v.get<std::int32_t>());
        }
      } else {
        const std::int32_t id = id_of(name);
        if (id < 0) return bad(what, fmt::format("the template's special token '{}' has no id", name));
        ids.push_back(id);
      }
      (seen_a ? suffix : prefix)->insert((seen_a ? suffix : prefix)->end(), ids.begin(), ids.end());
    } else {
      return bad(what, fmt::format("{} is neither a Sequence nor a SpecialToken", item.path));
    }
  }
  return Status::ok();
}

Status HfTokenizer::load(const std::string& text, const std::string& what) {
  TUNABLE_RETURN_IF_ERROR(check_json_depth(text.data(), text.data() + text.size(), what));
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    return bad(what, fmt::format("not valid JSON: {}", e.what()));
  }
  if (!j.is_object() || !j.contains("model") || !j["model"].is_object()) return bad(what, "no model object");
  const Node root{j, "", what};
  const json& m = j["model"];
  const Node mn = root.child(m, "model");
  std::string mtype, prefix, suffix;
  TUNABLE_RETURN_IF_ERROR(mn.string("type", &mtype));
  if (mtype != "BPE" && !(mtype.empty() && m.contains("merges")))
    return unsupported(what, fmt::format("model type '{}' is not supported (BPE)", mtype));
  TUNABLE_RETURN_IF_ERROR(mn.string("continuing_subword_prefix", &prefix));
  TUNABLE_RETURN_IF_ERROR(mn.string("end_of_word_suffix", &suffix));
  if (!prefix.empty()) return unsupported(what, "BPE continuing_subword_prefix is not supported");
  if (!suffix.empty()) return unsupported(what, "BPE end_of_word_suffix is not supported");
  if (const json* d = mn.member("dropout")) {
    if (!d->is_number()) return mn.error("dropout", fmt::format("is {}, not a number", shown(*d)));
    if (d->get<double>() > 0) return unsupported(what, "BPE dropout is not supported (it makes tokenization random)");
  }
  TUNABLE_RETURN_IF_ERROR(mn.boolean("byte_fallback", &byte_fallback_));
  TUNABLE_RETURN_IF_ERROR(mn.boolean("ignore_merges", &ignore_merges_));
  TUNABLE_RETURN_IF_ERROR(mn.boolean("fuse_unk", &fuse_unk_));

  const auto vit = m.find("vocab");
  if (vit == m.end() || !vit->is_object() || vit->empty()) return bad(what, "model.vocab is missing or empty");
  std::int32_t max_id = -1;
  for (auto it = vit->begin(); it != vit->end(); ++it) {
    if (!it.value().is_number_integer() || it.value().get<std::int64_t>() < 0 || it.value().get<std::int64_t>() > kMaxTokenId ||
        (it.value().is_number_unsigned() && it.value().get<std::uint64_t>() > kMaxTokenId))
      return bad(what, fmt::format("vocab['{}'] is {}, not a token id (0 to {})", it.key(), shown(it.value()), kMaxTokenId));
    const auto id = static_cast<std::int32_t>(it.value().get<std::int64_t>());
    vocab_[it.key()] = id;
    max_id = std::max(max_id, id);
  }
  std::vector<AddedToken> added;
  const json* added_list = nullptr;
  TUNABLE_RETURN_IF_ERROR(root.array("added_tokens", &added_list));
  for (std::size_t i = 0; added_list && i < added_list->size(); ++i) {
    const json& a = (*added_list)[i];
    const Node an = root.child(a, fmt::format("added_tokens[{}]", i));
    AddedToken t;
    std::int64_t id = -1;
    if (!a.is_object()) return bad(what, fmt::format("{} is {}, not an object", an.path, shown(a)));
    TUNABLE_RETURN_IF_ERROR(an.integer("id", 0, kMaxTokenId, &id));
    TUNABLE_RETURN_IF_ERROR(an.string("content", &t.content));
    if (id < 0 || t.content.empty()) return bad(what, fmt::format("added token {} lacks an id or content", shown(a)));
    t.id = static_cast<std::int32_t>(id);
    bool single_word = false;
    TUNABLE_RETURN_IF_ERROR(an.boolean("special", &t.special));
    TUNABLE_RETURN_IF_ERROR(an.boolean("lstrip", &t.lstrip));
    TUNABLE_RETURN_IF_ERROR(an.boolean("rstrip", &t.rstrip));
    t.normalized = !t.special;  // the library's default
    TUNABLE_RETURN_IF_ERROR(an.boolean("normalized", &t.normalized));
    TUNABLE_RETURN_IF_ERROR(an.boolean("single_word", &single_word));
    if (single_word) return unsupported(what, fmt::format("added token '{}' is single_word", t.content));
    max_id = std::max(max_id, t.id);
    added.push_back(t);
  }
  id_to_token_.assign(max_id + 1, std::string());
  special_.assign(max_id + 1, false);
  std::vector<bool> used(max_id + 1, false);
  for (const auto& [tok, id] : vocab_) {
    if (used[id]) return bad(what, fmt::format("token id {} is given to two vocabulary entries", id));
    used[id] = true;
    id_to_token_[id] = tok;
  }
  for (const AddedToken& t : added) {
    if (used[t.id] && id_to_token_[t.id] != t.content)
      return bad(what, fmt::format("added token '{}' has id {}, which '{}' holds", t.content, t.id, id_to_token_[t.id]));
    used[t.id] = true;
    id_to_token_[t.id] = t.content;
    special_[t.id] = t.special;
  }
  std::sort(added.begin(), added.end(), [](const AddedToken& a, const AddedToken& b) { return a.content.size() > b.content.size(); });
  added_ = std::move(added);

  const auto mit = m.find("merges");
  if (mit == m.end() || !mit->is_array()) return bad(what, "model.merges is missing");
  std::int32_t rank = 0;
  for (const json& x : *mit) {
    std::string a, b;
    if (x.is_string()) {
      const std::string s = x.get<std::string>();
      const std::size_t sp = s.find(' ', 1);
      if (sp == std::string::npos) return bad(what, fmt::format("merge '{}' is not two tokens", s));
      a = s.substr(0, sp);
      b = s.substr(sp + 1);
    } else if (x.is_array() && x.size() == 2 && x[0].is_string() && x[1].is_string()) {
      a = x[0].get<std::string>();
      b = x[1].get<std::string>();
    } else {
      return bad(what, fmt::format("merge {} is not a pair of tokens", shown(x)));
    }
    const auto ia = vocab_.find(a), ib = vocab_.find(b), im = vocab_.find(a + b);
    if (ia == vocab_.end() || ib == vocab_.end() || im == vocab_.end())
      return bad(what, fmt::format("merge '{} {}' uses a token outside the vocabulary", a, b));
    const std::uint64_t key = (static_cast<std::uint64_t>(ia->second) << 32) | static_cast<std::uint32_t>(ib->second);
    merges_.emplace(key, std::make_pair(rank++, im->second));  // the first (best-ranked) merge wins
  }
  std::string unk;
  TUNABLE_RETURN_IF_ERROR(mn.string("unk_token", &unk));
  if (mn.member("unk_token")) {
    const auto u = vocab_.find(unk);
    if (u == vocab_.end()) return bad(what, fmt::format("unk_token '{}' is not in the vocabulary", unk));
    unk_ = u->second;
  }
  for (int b = 0; b < 256; ++b) {
    const auto it = vocab_.find(fmt::format("<0x{:02X}>", b));
    byte_ids_[b] = it == vocab_.end() ? -1 : it->second;
  }

  static const json kNull;
  auto component = [&](const char* key) { return root.child(root.member(key) ? *root.member(key) : kNull, key); };
  TUNABLE_RETURN_IF_ERROR(parse_normalizer(component("normalizer"), &normalizer_));
  // A normalized added token is matched, and decoded, as the normalizer turns its content
  // ("World" under Llama 2's normalizer is "\u2581World"), as the library does.
  if (normalizer_) {
    for (AddedToken& t : added_) {
      if (!t.normalized) continue;
      normalizer_->apply(&t.content);
      if (t.content.empty()) return bad(what, fmt::format("added token {} normalizes to nothing", t.id));
      id_to_token_[t.id] = t.content;
    }
    std::sort(added_.begin(), added_.end(), [](const AddedToken& a, const AddedToken& b) { return a.content.size() > b.content.size(); });
  }
  raw_added_.build(added_, false);
  normalized_added_.build(added_, true);
  TUNABLE_RETURN_IF_ERROR(parse_pre_tokenizer(component("pre_tokenizer"), &byte_level_, &pre_));
  TUNABLE_RETURN_IF_ERROR(parse_decoder(component("decoder"), &decoder_));
  auto id_of = [&](const std::string& s) -> std::int32_t {
    for (const AddedToken& t : added_)
      if (t.content == s) return t.id;
    const auto it = vocab_.find(s);
    return it == vocab_.end() ? -1 : it->second;
  };
  auto is_token = [&](std::int64_t id) {
    return id >= 0 && id < static_cast<std::int64_t>(id_to_token_.size()) && !id_to_token_[id].empty();
  };
  TUNABLE_RETURN_IF_ERROR(parse_post_processor(component("post_processor"), id_of, is_token, &prefix_, &suffix_));
  return Status::ok();
}

void HfTokenizer::bpe(const std::string& word, std::vector<std::int32_t>* out) const {
  if (ignore_merges_) {
    const auto it = vocab_.find(word);
    if (it != vocab_.end()) {
      out->push_back(it->second);
      return;
    }
  }
  {
    std::lock_guard<std::mutex> lock(cache_mu_);
    const auto it = cache_.find(word);
    if (it != cache_.end()) {
      out->insert(out->end(), it->second.begin(), it->second.end());
      return;
    }
  }
  // Characters to symbols; a character outside the vocabulary becomes its byte tokens (when the
  // model falls back to bytes and has all of them) or the unknown token (consecutive ones fused
  // when fuse_unk).
  std::vector<std::int32_t> sym;
  bool last_unk = false;
  for (const std::string& c : utf8_chars(word)) {
    const auto it = vocab_.find(c);
    if (it != vocab_.end()) {
      sym.push_back(it->second);
      last_unk = false;
      continue;
    }
    if (byte_fallback_) {
      bool all = true;
      for (unsigned char b : c) all = all && byte_ids_[b] >= 0;
      if (all) {
        for (unsigned char b : c) sym.push_back(byte_ids_[b]);
        last_unk = false;
        continue;
      }
    }
    if (unk_ >= 0 && !(fuse_unk_ && last_unk)) sym.push_back(unk_);
    last_unk = unk_ >= 0;
  }
  // Merge the best-ranked adjacent pair (leftmost among equals) until none is left: a heap of
  // candidate merges over a linked list of symbols, O(n log n) (a Llama 2 style tokenizer has no
  // pre-tokenizer split, so a whole prompt can be one word).
  struct Candidate {
    std::int32_t rank, pos, merged;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  const int n = static_cast<int>(sym.size());
  std::vector<int> next(n), prev(n);
  for (int i = 0; i < n; ++i) {
    next[i] = i + 1 < n ? i + 1 : -1;
    prev[i] = i - 1;
  }
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> heap;
  auto consider = [&](int i) {
    if (i < 0 || next[i] < 0) return;
    const std::uint64_t key = (static_cast<std::uint64_t>(sym[i]) << 32) | static_cast<std::uint32_t>(sym[next[i]]);
    const auto it = merges_.find(key);
    if (it != merges_.end()) heap.push({it->second.first, i, it->second.second});
  };
  for (int i = 0; i + 1 < n; ++i) consider(i);
  std::vector<bool> gone(n, false);
  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    if (gone[c.pos] || next[c.pos] < 0) continue;
    // Stale when either symbol changed since the candidate was pushed.
    const std::uint64_t key = (static_cast<std::uint64_t>(sym[c.pos]) << 32) | static_cast<std::uint32_t>(sym[next[c.pos]]);
    const auto it = merges_.find(key);
    if (it == merges_.end() || it->second.first != c.rank || it->second.second != c.merged) continue;
    const int right = next[c.pos];
    sym[c.pos] = c.merged;
    gone[right] = true;
    next[c.pos] = next[right];
    if (next[right] >= 0) prev[next[right]] = c.pos;
    consider(prev[c.pos]);
    consider(c.pos);
  }
  std::vector<std::int32_t> merged;
  for (int i = 0; i < n; ++i)
    if (!gone[i]) merged.push_back(sym[i]);
  out->insert(out->end(), merged.begin(), merged.end());
  if (word.size() <= 256) {  // whole long segments would only fill the cache
    std::lock_guard<std::mutex> lock(cache_mu_);
    if (cache_.size() < 100000) cache_.emplace(word, std::move(merged));
  }
}

/// Bytes of the Unicode white space (the library's char::is_whitespace) ending at `end` / starting
/// at `begin` of `s`.
std::size_t space_before(const std::string& s, std::size_t from, std::size_t end) {
  std::size_t e = end;
  while (e > from) {
    std::size_t b = e - 1;
    while (b > from && (static_cast<unsigned char>(s[b]) & 0xC0) == 0x80) --b;
    UChar32 c = 0;
    int32_t i = static_cast<int32_t>(b);
    U8_NEXT(reinterpret_cast<const uint8_t*>(s.data()), i, static_cast<int32_t>(e), c);
    if (c < 0 || !u_isUWhiteSpace(c)) break;
    e = b;
  }
  return end - e;
}
std::size_t space_after(const std::string& s, std::size_t begin) {
  int32_t i = static_cast<int32_t>(begin);
  const auto n = static_cast<int32_t>(s.size());
  while (i < n) {
    int32_t j = i;
    UChar32 c = 0;
    U8_NEXT(reinterpret_cast<const uint8_t*>(s.data()), j, n, c);
    if (c < 0 || !u_isUWhiteSpace(c)) break;
    i = j;
  }
  return static_cast<std::size_t>(i) - begin;
}

void HfTokenizer::split_added(const std::string& text, bool normalized, std::vector<Piece>* out) const {
  const AddedMatcher& matcher = normalized ? normalized_added_ : raw_added_;
  std::size_t at = 0, best = 0;
  const AddedToken* hit = nullptr;
  while (at < text.size() && matcher.find(text, at, &best, &hit)) {
    std::size_t seg_end = best, next = best + hit->content.size();
    if (hit->lstrip) seg_end -= space_before(text, at, seg_end);
    if (hit->rstrip) next += space_after(text, next);
    if (seg_end > at) out->push_back({text.substr(at, seg_end - at), -1, at == 0});
    out->push_back({std::string(), hit->id, false});
    at = next;
  }
  if (at < text.size()) out->push_back({text.substr(at), -1, at == 0});
}

Status HfTokenizer::encode(std::string_view text_in, bool add_special_tokens, std::vector<std::int32_t>* ids) const {
  if (ids == nullptr) return Status(StatusCode::kInvalidArgument, "encode: null output");
  ids->clear();
  TUNABLE_RETURN_IF_ERROR(check_text_size(text_in));
  const std::string text = utf8_lossy(text_in);
  if (add_special_tokens) ids->insert(ids->end(), prefix_.begin(), prefix_.end());
  // As the library splits: added tokens that are not normalized are found in the raw text; each
  // segment between them is normalized, and the normalized added tokens are found in that; what
  // remains is pre-tokenized and merged. `first` marks the piece that starts the input.
  std::vector<Piece> raw;
  split_added(text, false, &raw);
  for (Piece& r : raw) {
    if (r.id >= 0) {
      ids->push_back(r.id);
      continue;
    }
    std::string seg = std::move(r.text);
    if (normalizer_) normalizer_->apply(&seg);
    std::vector<Piece> parts;
    split_added(seg, true, &parts);
    for (const Piece& q : parts) {
      if (q.id >= 0) {
        ids->push_back(q.id);
        continue;
      }
      std::vector<std::string> pieces{q.text};
      std::vector<bool> first{r.first && q.first};
      if (pre_) pre_->apply(&pieces, &first);
      for (const std::string& p : pieces)
        if (!p.empty()) bpe(p, ids);
    }
  }
  if (add_special_tokens) ids->insert(ids->end(), suffix_.begin(), suffix_.end());
  return Status::ok();
}

Status HfTokenizer::decode(const std::vector<std::int32_t>& ids, bool skip_special_tokens, std::string* text) const {
  if (text == nullptr) return Status(StatusCode::kInvalidArgument, "decode: null output");
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const std::int32_t id = ids[i];
    if (id < 0 || id >= vocab_size() || id_to_token_[id].empty())
      return Status(StatusCode::kInvalidArgument, fmt::format("decode: id {} (position {}) is not in the vocabulary", id, i));
    if (skip_special_tokens && special_[id]) continue;
    tokens.push_back(id_to_token_[id]);
  }
  std::string all;
  if (decoder_) {
    decoder_->apply(&tokens);
    for (const std::string& t : tokens) all += t;
  } else {
    for (std::size_t i = 0; i < tokens.size(); ++i) all += (i ? " " : "") + tokens[i];  // the library's join
  }
  *text = utf8_lossy(all);
  return Status::ok();
}

}  // namespace

Status load_hf_tokenizer(const std::string& path, std::unique_ptr<Tokenizer>* out) {
  std::string text;
  TUNABLE_RETURN_IF_ERROR(read_regular_file(path, 512u << 20, "a tokenizer.json", &text));
  return parse_hf_tokenizer(text, path, out);
}

Status parse_hf_tokenizer(const std::string& text, const std::string& what, std::unique_ptr<Tokenizer>* out) {
  auto t = std::make_unique<HfTokenizer>();
  TUNABLE_RETURN_IF_ERROR(t->load(text, what));
  *out = std::move(t);
  return Status::ok();
}

}  // namespace tunable::tok
