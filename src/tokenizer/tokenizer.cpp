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

Status TokenStreamer::push(std::int32_t id, std::string* text) {
  text->clear();
  if (id < 0 || id >= tok_.vocab_size()) return Status::ok();
  ids_.push_back(id);
  std::string all;
  TUNABLE_RETURN_IF_ERROR(tok_.decode(ids_, skip_special_, &all));
  // Hold back a trailing replacement character: the bytes of a character split over tokens decode
  // to U+FFFD until its last byte arrives.
  static const std::string kReplacement = "\xEF\xBF\xBD";
  std::size_t end = all.size();
  while (end >= emitted_ + kReplacement.size() && all.compare(end - kReplacement.size(), kReplacement.size(), kReplacement) == 0)
    end -= kReplacement.size();
  if (end > emitted_) {
    *text = all.substr(emitted_, end - emitted_);
    emitted_ = end;
  }
  return Status::ok();
}

Status TokenStreamer::finish(std::string* text) {
  std::string all;
  TUNABLE_RETURN_IF_ERROR(tok_.decode(ids_, skip_special_, &all));
  text->clear();
  if (all.size() > emitted_) *text = all.substr(emitted_);
  emitted_ = all.size();
  return Status::ok();
}

}  // namespace tunable
