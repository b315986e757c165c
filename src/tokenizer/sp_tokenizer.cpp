// tokenizer.model through the SentencePiece library: encoding, decoding and the BOS that
// Hugging Face's SentencePiece-based tokenizers add. The model's normalization tables are checked
// here first: SentencePiece (Debian's 0.1.97) follows them without bounds checks.
#include <fmt/format.h>
#include <sentencepiece_processor.h>

#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/files.hpp"
#include "tokenizer/hf_tokenizer.hpp"
#include "tokenizer/utf8.hpp"

namespace tunable::tok {
namespace {

Status not_a_model(const std::string& what, const std::string& why) {
  return Status(StatusCode::kParseError, fmt::format("{}: not a SentencePiece model ({})", what, why));
}

/// The fields of a protobuf message (wire format): calls `f(number, payload)` for every
/// length-delimited field; other fields are skipped. False when the bytes are not a message.
template <class F>
bool for_each_bytes_field(std::string_view msg, F&& f) {
  std::size_t at = 0;
  auto varint = [&](std::uint64_t* v) {
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (at >= msg.size()) return false;
      const auto b = static_cast<unsigned char>(msg[at++]);
      *v |= static_cast<std::uint64_t>(b & 0x7F) << shift;
      if ((b & 0x80) == 0) return true;
    }
    return false;
  };
  while (at < msg.size()) {
    std::uint64_t key = 0, v = 0;
    if (!varint(&key)) return false;
    switch (key & 7) {
      case 0: if (!varint(&v)) return false; break;
      case 1: if (msg.size() - at < 8) return false; at += 8; break;
      case 5: if (msg.size() - at < 4) return false; at += 4; break;
      case 2:
        if (!varint(&v) || v > msg.size() - at) return false;
        f(key >> 3, msg.substr(at, v));
        at += v;
        break;
      default: return false;  // groups (3, 4) are not in SentencePiece's messages; 6 and 7 do not exist
    }
  }
  return true;
}

/// Largest precompiled_charsmap accepted; SentencePiece's own NFKC tables are about 240 KB.
constexpr std::size_t kMaxCharsmapBytes = 4u << 20;

/// A precompiled_charsmap as SentencePiece's normalizer reads it: a little-endian uint32 trie size,
/// a Darts-clone double array of that many bytes (32-bit units), then the replacement strings, each
/// NUL-terminated. Normalizing follows the trie from the root, one transition per input byte, reading
/// unit (base ^ byte) for any byte, and a leaf's value is an offset into the strings. Every state
/// reachable from the root is visited: each reads only inside the array, and each leaf names a
/// terminated string inside the blob.
Status check_charsmap(std::string_view blob, const std::string& what, const char* field) {
  auto broken = [&](const std::string& why) {
    return Status(StatusCode::kParseError, fmt::format("{}: {}.precompiled_charsmap is corrupt: {}", what, field, why));
  };
  if (blob.empty()) return Status::ok();  // no table: no normalization by table
  if (blob.size() > kMaxCharsmapBytes)
    return broken(fmt::format("{} bytes; the limit is {} MiB", blob.size(), kMaxCharsmapBytes >> 20));
  if (blob.size() < 4) return broken(fmt::format("{} bytes, too short for its trie size", blob.size()));
  std::uint32_t trie_bytes = 0;
  for (int i = 3; i >= 0; --i) trie_bytes = (trie_bytes << 8) | static_cast<unsigned char>(blob[i]);
  if (trie_bytes > blob.size() - 4)
    return broken(fmt::format("its trie of {} bytes runs past the {} bytes of the table", trie_bytes, blob.size()));
  const std::size_t units = trie_bytes / 4;
  std::vector<std::uint32_t> unit(units);
  if (units) std::memcpy(unit.data(), blob.data() + 4, units * 4);  // little-endian hosts only, as SentencePiece
  const std::string_view strings = blob.substr(4 + std::size_t{trie_bytes});
  auto offset = [](std::uint32_t u) { return (u >> 10) << ((u & (1u << 9)) >> 6); };
  auto label = [](std::uint32_t u) { return u & ((1u << 31) | 0xFF); };
  auto has_leaf = [](std::uint32_t u) { return ((u >> 8) & 1) != 0; };
  if (units == 0) return broken("its trie is empty");
  // Any input byte may be looked up from a state: the whole 256-unit block of its base must be in
  // the array. Each base is queued once, so the work is at most 256 reads per unit.
  std::vector<bool> seen(units, false);
  std::vector<std::uint32_t> todo;
  auto reach = [&](std::uint32_t base) {
    if ((static_cast<std::size_t>(base) | 0xFF) >= units) return false;
    if (!seen[base]) seen[base] = true, todo.push_back(base);
    return true;
  };
  if (!reach(offset(unit[0]))) return broken(fmt::format("its root reads past its {} units", units));
  while (!todo.empty()) {
    const std::uint32_t base = todo.back();
    todo.pop_back();
    for (std::uint32_t c = 0; c < 256; ++c) {
      const std::uint32_t u = unit[base ^ c];
      if (label(u) != c) continue;
      const std::uint32_t next = (base ^ c) ^ offset(u);
      if (!reach(next)) return broken(fmt::format("a trie state at unit {} reads past its {} units", next, units));
      if (has_leaf(u)) {
        const std::uint32_t value = unit[next] & ((1u << 31) - 1);
        if (value >= strings.size() || strings.find('\0', value) == std::string_view::npos)
          return broken(fmt::format("a rule's replacement at byte {} is outside its {} bytes of strings, or "
                                    "unterminated", value, strings.size()));
      }
    }
  }
  return Status::ok();
}

/// The normalization tables of a serialized ModelProto (normalizer_spec = 3, denormalizer_spec = 5;
/// precompiled_charsmap = 2 in both). A field given twice merges as protobuf merges: the last wins.
Status check_model_proto(std::string_view bytes, const std::string& what) {
  std::string_view charsmap[2];
  bool specs_ok = true;
  const bool ok = for_each_bytes_field(bytes, [&](std::uint64_t field, std::string_view spec) {
    if (field != 3 && field != 5) return;
    specs_ok = specs_ok && for_each_bytes_field(spec, [&](std::uint64_t f, std::string_view v) {
      if (f == 2) charsmap[field == 5] = v;
    });
  });
  if (!ok || !specs_ok) return not_a_model(what, "the bytes are not a protocol buffer");
  TUNABLE_RETURN_IF_ERROR(check_charsmap(charsmap[0], what, "normalizer_spec"));
  return check_charsmap(charsmap[1], what, "denormalizer_spec");
}

class SpTokenizer final : public Tokenizer {
 public:
  Status load(const std::string& bytes, const std::string& what) {
    TUNABLE_RETURN_IF_ERROR(check_model_proto(bytes, what));
    const auto st = sp_.LoadFromSerializedProto(bytes);
    if (!st.ok()) return not_a_model(what, st.ToString());
    return Status::ok();
  }
  Status encode(std::string_view text, bool add_special_tokens, std::vector<std::int32_t>* ids) const override {
    if (ids == nullptr) return Status(StatusCode::kInvalidArgument, "encode: null output");
    TUNABLE_RETURN_IF_ERROR(check_text_size(text));
    std::vector<int> v;
    // Invalid UTF-8 is repaired first (SentencePiece would take it byte by byte); valid text, nearly
    // all of it, goes to SentencePiece as it is, without a copy.
    const auto st = utf8_valid(text) ? sp_.Encode(text, &v) : sp_.Encode(utf8_lossy(text), &v);
    if (!st.ok()) return Status(StatusCode::kInternal, fmt::format("SentencePiece encode: {}", st.ToString()));
    ids->clear();
    if (add_special_tokens && sp_.bos_id() >= 0) ids->push_back(sp_.bos_id());
    ids->insert(ids->end(), v.begin(), v.end());
    return Status::ok();
  }
  Status decode(const std::vector<std::int32_t>& ids, bool skip_special_tokens, std::string* text) const override {
    if (text == nullptr) return Status(StatusCode::kInvalidArgument, "decode: null output");
    std::vector<int> v;
    for (std::size_t i = 0; i < ids.size(); ++i) {
      if (ids[i] < 0 || ids[i] >= sp_.GetPieceSize())
        return Status(StatusCode::kInvalidArgument, fmt::format("decode: id {} (position {}) is not in the vocabulary", ids[i], i));
      if (skip_special_tokens && (sp_.IsControl(ids[i]))) continue;
      v.push_back(ids[i]);
    }
    std::string out;
    const auto st = sp_.Decode(v, &out);
    if (!st.ok()) return Status(StatusCode::kInternal, fmt::format("SentencePiece decode: {}", st.ToString()));
    *text = utf8_lossy(out);
    return Status::ok();
  }
  std::int32_t vocab_size() const override { return sp_.GetPieceSize(); }

 private:
  sentencepiece::SentencePieceProcessor sp_;
};

}  // namespace

Status load_sp_tokenizer(const std::string& path, std::unique_ptr<Tokenizer>* out) {
  std::string bytes;
  TUNABLE_RETURN_IF_ERROR(read_regular_file(path, 256u << 20, "a tokenizer.model", &bytes));
  return parse_sp_tokenizer(bytes, path, out);
}

Status parse_sp_tokenizer(const std::string& bytes, const std::string& what, std::unique_ptr<Tokenizer>* out) {
  auto t = std::make_unique<SpTokenizer>();
  TUNABLE_RETURN_IF_ERROR(t->load(bytes, what));
  *out = std::move(t);
  return Status::ok();
}

}  // namespace tunable::tok
