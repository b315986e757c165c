// Tokenizers of Hugging Face model directories, for text in and streamed text out:
//   - tokenizer.json (the `tokenizers` library's format) with a BPE model: byte-level BPE as
//     Llama 3 and Qwen2 ship it, and BPE with byte fallback as Llama 2, Mistral and Gemma ship it;
//   - tokenizer.model (SentencePiece), through the SentencePiece library.
// Token ids equal the `tokenizers` library's (and SentencePiece's) for the components both read;
// a component this implementation does not have is a kNotSupported error naming it, never a
// silently different tokenization.
//
// Text is UTF-8; invalid sequences in the input are replaced by U+FFFD (one per maximal ill-formed
// subsequence, as Python's decode(errors="replace") does) before tokenizing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tunable/status.hpp"

namespace tunable {

class Tokenizer {
 public:
  /// tokenizer.json in `dir` when it exists, else tokenizer.model.
  static Status load_dir(const std::string& dir, std::unique_ptr<Tokenizer>* out);
  static Status load_tokenizer_json(const std::string& path, std::unique_ptr<Tokenizer>* out);
  static Status load_sentencepiece(const std::string& path, std::unique_ptr<Tokenizer>* out);

  virtual ~Tokenizer() = default;
  /// The longest text `encode` takes (16 MiB, some 4 million tokens: far past any context length);
  /// longer text is kInvalidArgument naming both sizes, so a request body cannot make the tokenizer
  /// allocate without bound.
  static constexpr std::size_t kMaxTextBytes = std::size_t{16} << 20;
  /// add_special_tokens: the post-processor's tokens (e.g. a leading BOS), as `encode` adds them.
  virtual Status encode(std::string_view text, bool add_special_tokens, std::vector<std::int32_t>* ids) const = 0;
  /// Ids to text (invalid UTF-8 from byte tokens becomes U+FFFD); an id outside the vocabulary is
  /// kInvalidArgument naming it.
  virtual Status decode(const std::vector<std::int32_t>& ids, bool skip_special_tokens, std::string* text) const = 0;
  /// One more than the largest id.
  virtual std::int32_t vocab_size() const = 0;
};

/// Streams the text of ids as they arrive: each push returns the text that has become final
/// (complete UTF-8), decoding only a window of recent ids so that a token costs the same at any
/// length (the method of transformers' and TGI's streamers). The concatenation equals decoding all
/// ids at once, except where a run of byte tokens turns invalid after a complete character of it
/// was returned (the library then decodes the whole run as U+FFFD). Ids past the tokenizer's
/// vocabulary (a model's vocabulary padded beyond it) give no text, as transformers' decode skips
/// them.
class TokenStreamer {
 public:
  TokenStreamer(const Tokenizer& tokenizer, bool skip_special_tokens)
      : tok_(tokenizer), skip_special_(skip_special_tokens) {}

  // The text of the ids since prefix_ is decoded twice, up to read_ and up to the newest id; what
  // the second adds to the first is new (both start at the same token, so a decoder rule about the
  // first token - a stripped leading space - cancels out). Defined here (it needs only the
  // tokenizer's virtual decode) so that programs loading the tokenizer library at run time can
  // stream too.
  Status push(std::int32_t id, std::string* text) {
    text->clear();
    if (id < 0 || id >= tok_.vocab_size()) return Status::ok();
    ids_.push_back(id);
    std::string old_text, new_text;
    Status st = window(&old_text, &new_text);
    if (!st.is_ok()) return st;
    // Hold back while the newest text ends in U+FFFD (a character whose bytes span tokens decodes
    // to it until its last byte arrives) or does not extend the old one.
    static const std::string kReplacement = "\xEF\xBF\xBD";
    const bool pending = new_text.size() >= kReplacement.size() &&
                         new_text.compare(new_text.size() - kReplacement.size(), kReplacement.size(), kReplacement) == 0;
    if (pending || new_text.size() <= old_text.size() || new_text.compare(0, old_text.size(), old_text) != 0)
      return Status::ok();
    *text = new_text.substr(old_text.size());
    prefix_ = read_;
    read_ = ids_.size();
    return Status::ok();
  }
  /// The rest, at the end of generation (an incomplete character becomes U+FFFD).
  Status finish(std::string* text) {
    text->clear();
    std::string old_text, new_text;
    Status st = window(&old_text, &new_text);
    if (!st.is_ok()) return st;
    if (new_text.size() > old_text.size() && new_text.compare(0, old_text.size(), old_text) == 0)
      *text = new_text.substr(old_text.size());
    prefix_ = read_ = ids_.size();
    return Status::ok();
  }

 private:
  Status window(std::string* old_text, std::string* new_text) const {
    const std::vector<std::int32_t> all(ids_.begin() + static_cast<std::ptrdiff_t>(prefix_), ids_.end());
    const std::vector<std::int32_t> before(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(read_ - prefix_));
    Status st = tok_.decode(before, skip_special_, old_text);
    return st.is_ok() ? tok_.decode(all, skip_special_, new_text) : st;
  }
  const Tokenizer& tok_;
  bool skip_special_;
  std::vector<std::int32_t> ids_;
  std::size_t prefix_ = 0;  ///< first id of the decoded window
  std::size_t read_ = 0;    ///< ids up to here have had their text returned
};

}  // namespace tunable

extern "C" {
/// Tokenizer::load_dir as a C symbol, for programs that load libtunable_tokenizer.so at run time
/// (dlopen) so that they start without ICU and SentencePiece installed: 0 and *out (delete it),
/// or a StatusCode value with the Status's message in err (NUL-terminated, truncated to err_len).
int tunable_tokenizer_load_dir(const char* dir, tunable::Tokenizer** out, char* err, std::size_t err_len);
}
