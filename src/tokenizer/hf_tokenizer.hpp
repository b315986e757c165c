// tokenizer.json (the `tokenizers` library's format), BPE models.
#pragma once

#include <memory>
#include <string>

#include "tunable/tokenizer.hpp"

namespace tunable::tok {

/// Reads and validates `path`: the file must be regular and at most 512 MiB, the JSON a BPE model
/// whose merges use vocabulary tokens, every component one this implementation runs (otherwise
/// kNotSupported naming it).
Status load_hf_tokenizer(const std::string& path, std::unique_ptr<Tokenizer>* out);

/// Reads `path` (a SentencePiece model).
Status load_sp_tokenizer(const std::string& path, std::unique_ptr<Tokenizer>* out);

}  // namespace tunable::tok
