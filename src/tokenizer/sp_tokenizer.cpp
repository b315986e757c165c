// tokenizer.model through the SentencePiece library: encoding, decoding and the BOS that
// Hugging Face's SentencePiece-based tokenizers add.
#include <fmt/format.h>
#include <sentencepiece_processor.h>
#include <sys/stat.h>

#include "core/error.hpp"
#include "tokenizer/hf_tokenizer.hpp"
#include "tokenizer/utf8.hpp"

namespace tunable::tok {
namespace {

class SpTokenizer final : public Tokenizer {
 public:
  Status load(const std::string& path) {
    const auto st = sp_.Load(path);
    if (!st.ok())
      return Status(StatusCode::kParseError, fmt::format("{}: not a SentencePiece model ({})", path, st.ToString()));
    return Status::ok();
  }
  Status encode(std::string_view text, bool add_special_tokens, std::vector<std::int32_t>* ids) const override {
    if (ids == nullptr) return Status(StatusCode::kInvalidArgument, "encode: null output");
    std::vector<int> v;
    const auto st = sp_.Encode(utf8_lossy(text), &v);
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
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Status(StatusCode::kIoError, fmt::format("cannot read '{}'", path));
  if (!S_ISREG(st.st_mode)) return Status(StatusCode::kIoError, fmt::format("'{}' is not a regular file", path));
  auto t = std::make_unique<SpTokenizer>();
  TUNABLE_RETURN_IF_ERROR(t->load(path));
  *out = std::move(t);
  return Status::ok();
}

}  // namespace tunable::tok
