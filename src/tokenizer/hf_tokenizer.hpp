// tokenizer.json (the `tokenizers` library's format), BPE models.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "tunable/tokenizer.hpp"

namespace tunable::tok {

/// Reads and validates `path`: the file must be regular and at most 512 MiB, the JSON a BPE model
/// whose merges use vocabulary tokens, every component one this implementation runs (otherwise
/// kNotSupported naming it).
Status load_hf_tokenizer(const std::string& path, std::unique_ptr<Tokenizer>* out);
/// The same from the file's text; `what` names it in messages.
Status parse_hf_tokenizer(const std::string& text, const std::string& what, std::unique_ptr<Tokenizer>* out);

/// Reads `path` (a SentencePiece model, a regular file of at most 256 MiB).
Status load_sp_tokenizer(const std::string& path, std::unique_ptr<Tokenizer>* out);
/// The same from the file's bytes: the model proto is checked (its normalization tables above
/// all, which SentencePiece itself trusts) before SentencePiece reads it.
Status parse_sp_tokenizer(const std::string& bytes, const std::string& what, std::unique_ptr<Tokenizer>* out);

/// kInvalidArgument when `text` is longer than Tokenizer::kMaxTextBytes.
Status check_text_size(std::string_view text);

}  // namespace tunable::tok
