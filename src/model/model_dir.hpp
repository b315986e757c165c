// A Hugging Face model directory opened for the engine: config.json parsed, the checkpoint
// (model.safetensors, or the shards model.safetensors.index.json names) mapped and checked
// against the configuration before any weight is read.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "model/config.hpp"
#include "model/safetensors.hpp"
#include "tunable/status.hpp"

namespace tunable::model {

struct ModelDir {
  std::string path;
  ModelConfig config;
  /// generation_config.json's ids where it exists and names them, else config.json's.
  SpecialTokens tokens;
  std::vector<std::unique_ptr<SafetensorsFile>> files;
  /// Every tensor by name: the file that holds it and its entry there.
  std::map<std::string, std::pair<const SafetensorsFile*, const StTensor*>> tensors;
};

/// Opens `dir`. Errors name the file and the problem: a missing config.json or checkpoint, a bad
/// safetensors header, an index naming a shard that does not exist or a tensor its shard lacks, a
/// tensor in two shards or in a shard the index does not name, tensors missing, unexpected or of
/// the wrong shape for the configuration, weights in a dtype other than bf16, fp16 or fp32, or of
/// mixed dtypes, a config file that is not a regular file or is larger than 64 MiB.
Status open_model_dir(const std::string& dir, ModelDir* out);

}  // namespace tunable::model
