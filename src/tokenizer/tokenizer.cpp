#include "tunable/tokenizer.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include "core/error.hpp"
#include "tokenizer/hf_tokenizer.hpp"
#include "tokenizer/utf8.hpp"

namespace tunable {

Status Tokenizer::load_dir(const std::string& dir, std::unique_ptr<Tokenizer>* out) {
  if (out == nullptr) return Status(StatusCode::kInvalidArgument, "Tokenizer::load_dir: null output");
  struct stat st {};
  if (::stat((dir + "/tokenizer.json").c_str(), &st) == 0) return tok::load_hf_tokenizer(dir + "/tokenizer.json", out);
  if (::stat((dir + "/tokenizer.model").c_str(), &st) == 0) return tok::load_sp_tokenizer(dir + "/tokenizer.model", out);
  return Status(StatusCode::kIoError, fmt::format("{}: no tokenizer.json or tokenizer.model", dir));
}

Status Tokenizer::load_tokenizer_json(const std::string& path, std::unique_ptr<Tokenizer>* out) {
  if (out == nullptr) return Status(StatusCode::kInvalidArgument, "Tokenizer::load_tokenizer_json: null output");
  return tok::load_hf_tokenizer(path, out);
}

Status Tokenizer::load_sentencepiece(const std::string& path, std::unique_ptr<Tokenizer>* out) {
  if (out == nullptr) return Status(StatusCode::kInvalidArgument, "Tokenizer::load_sentencepiece: null output");
  return tok::load_sp_tokenizer(path, out);
}

// The text of the ids since prefix_ is decoded twice, up to read_ and up to the newest id; what
// the second adds to the first is new (both start at the same token, so a decoder rule about the
// first token - a stripped leading space - cancels out). Only a window is decoded each time: the
// cost per token stays constant over a long generation.
Status TokenStreamer::push(std::int32_t id, std::string* text) {
  text->clear();
  if (id < 0 || id >= tok_.vocab_size()) return Status::ok();
  ids_.push_back(id);
  const std::vector<std::int32_t> window(ids_.begin() + static_cast<std::ptrdiff_t>(prefix_), ids_.end());
  const std::vector<std::int32_t> before(window.begin(), window.begin() + static_cast<std::ptrdiff_t>(read_ - prefix_));
  std::string old_text, new_text;
  TUNABLE_RETURN_IF_ERROR(tok_.decode(before, skip_special_, &old_text));
  TUNABLE_RETURN_IF_ERROR(tok_.decode(window, skip_special_, &new_text));
  // Hold back while the newest text ends in U+FFFD (a character whose bytes span tokens decodes to
  // it until its last byte arrives) or does not extend the old one.
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

Status TokenStreamer::finish(std::string* text) {
  text->clear();
  const std::vector<std::int32_t> window(ids_.begin() + static_cast<std::ptrdiff_t>(prefix_), ids_.end());
  const std::vector<std::int32_t> before(window.begin(), window.begin() + static_cast<std::ptrdiff_t>(read_ - prefix_));
  std::string old_text, new_text;
  TUNABLE_RETURN_IF_ERROR(tok_.decode(before, skip_special_, &old_text));
  TUNABLE_RETURN_IF_ERROR(tok_.decode(window, skip_special_, &new_text));
  if (new_text.size() > old_text.size() && new_text.compare(0, old_text.size(), old_text) == 0)
    *text = new_text.substr(old_text.size());
  prefix_ = read_ = ids_.size();
  return Status::ok();
}

}  // namespace tunable
