#include "tunable/tokenizer.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cstdio>

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

}  // namespace tunable

extern "C" int tunable_tokenizer_load_dir(const char* dir, tunable::Tokenizer** out, char* err, std::size_t err_len) {
  std::unique_ptr<tunable::Tokenizer> t;
  tunable::Status st = (dir && out) ? tunable::Tokenizer::load_dir(dir, &t)
                                    : tunable::Status(tunable::StatusCode::kInvalidArgument, "null argument");
  if (st.is_ok()) {
    *out = t.release();
    return 0;
  }
  if (err && err_len > 0) std::snprintf(err, err_len, "%s", st.message().c_str());
  return static_cast<int>(st.code());
}
