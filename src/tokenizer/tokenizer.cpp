#include "tunable/tokenizer.hpp"

#include <fmt/format.h>

#include <cstdio>

#include "core/error.hpp"
#include "core/files.hpp"
#include "tokenizer/hf_tokenizer.hpp"
#include "tokenizer/utf8.hpp"

namespace tunable {

namespace tok {

Status check_text_size(std::string_view text) {
  if (text.size() > Tokenizer::kMaxTextBytes)
    return Status(StatusCode::kInvalidArgument, fmt::format("encode: the text is {} bytes; the limit is {} ({} MiB)",
                                                            text.size(), Tokenizer::kMaxTextBytes,
                                                            Tokenizer::kMaxTextBytes >> 20));
  return Status::ok();
}

}  // namespace tok

Status Tokenizer::load_dir(const std::string& dir, std::unique_ptr<Tokenizer>* out) {
  if (out == nullptr) return Status(StatusCode::kInvalidArgument, "Tokenizer::load_dir: null output");
  // A file that exists but cannot be looked at (no permission, a symbolic-link loop) is reported as
  // such, not passed over as missing.
  for (const char* name : {"tokenizer.json", "tokenizer.model"}) {
    const std::string path = dir + "/" + name;
    std::string why;
    const PathState s = probe_path(path, &why);
    if (s == PathState::kError) return path_error(path, why);
    if (s == PathState::kMissing) continue;
    return std::string(name) == "tokenizer.json" ? tok::load_hf_tokenizer(path, out) : tok::load_sp_tokenizer(path, out);
  }
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
