#include "model/model_dir.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <set>

#include "core/error.hpp"
#include "core/files.hpp"

namespace tunable::model {
namespace {

// Whether `p` exists; an error other than absence (no permission, a symbolic-link loop) is
// reported as itself, never as "missing".
Status exists(const std::string& p, bool* yes) {
  std::string why;
  const PathState s = probe_path(p, &why);
  if (s == PathState::kError) return path_error(p, why);
  *yes = s == PathState::kPresent;
  return Status::ok();
}

/// A small JSON file: regular (a FIFO named config.json must not block the loader) and at most
/// 64 MiB.
Status read_text(const std::string& path, std::string* out) {
  return read_regular_file(path, 64u << 20, "a config file", out);
}

}  // namespace

Status open_model_dir(const std::string& dir, ModelDir* out) {
  if (out == nullptr) return Status(StatusCode::kInvalidArgument, "open_model_dir: null output");
  ModelDir m;
  m.path = dir;
  const std::string cfg_path = dir + "/config.json";
  bool found = false;
  TUNABLE_RETURN_IF_ERROR(exists(dir, &found));
  if (!found) return Status(StatusCode::kIoError, fmt::format("{}: no such directory", dir));
  TUNABLE_RETURN_IF_ERROR(exists(cfg_path, &found));
  if (!found) return Status(StatusCode::kIoError, fmt::format("{}: no config.json", dir));
  std::string text;
  TUNABLE_RETURN_IF_ERROR(read_text(cfg_path, &text));
  TUNABLE_RETURN_IF_ERROR(parse_model_config(text, cfg_path, &m.config));
  TUNABLE_RETURN_IF_ERROR(parse_special_tokens(text, cfg_path, &m.tokens));
  const std::string gen_path = dir + "/generation_config.json";
  TUNABLE_RETURN_IF_ERROR(exists(gen_path, &found));
  if (found) {
    std::string gen_text;
    SpecialTokens gen;
    TUNABLE_RETURN_IF_ERROR(read_text(gen_path, &gen_text));
    TUNABLE_RETURN_IF_ERROR(parse_special_tokens(gen_text, gen_path, &gen));
    if (!gen.eos.empty()) m.tokens.eos = gen.eos;
    if (gen.bos >= 0) m.tokens.bos = gen.bos;
  }

  // The shards and which tensors each must hold.
  std::map<std::string, std::set<std::string>> shard_tensors;  // file -> names the index gives it
  const std::string single = dir + "/model.safetensors", index = dir + "/model.safetensors.index.json";
  bool have_index = false, have_single = false;
  TUNABLE_RETURN_IF_ERROR(exists(index, &have_index));
  TUNABLE_RETURN_IF_ERROR(exists(single, &have_single));
  if (have_index) {
    std::map<std::string, std::string> wm;
    TUNABLE_RETURN_IF_ERROR(read_text(index, &text));
    TUNABLE_RETURN_IF_ERROR(parse_safetensors_index(text, index, &wm));
    for (const auto& [name, file] : wm) shard_tensors[file].insert(name);
  } else if (have_single) {
    shard_tensors["model.safetensors"];
  } else {
    return Status(StatusCode::kIoError,
                  fmt::format("{}: no model.safetensors or model.safetensors.index.json", dir));
  }
  std::map<std::string, std::vector<std::int64_t>> shapes;
  std::set<StDtype> dtypes;
  for (const auto& [file, names] : shard_tensors) {
    const std::string path = dir + "/" + file;
    TUNABLE_RETURN_IF_ERROR(exists(path, &found));
    if (!found) return Status(StatusCode::kIoError, fmt::format("{}: shard '{}' does not exist", index, file));
    std::unique_ptr<SafetensorsFile> f;
    TUNABLE_RETURN_IF_ERROR(SafetensorsFile::open(path, &f));
    for (const std::string& n : names)
      if (f->find(n) == nullptr)
        return Status(StatusCode::kParseError,
                      fmt::format("{}: the index puts tensor '{}' in this shard, which lacks it", path, n));
    for (const StTensor& t : f->header().tensors) {
      if (!names.empty() && !names.count(t.name))
        return Status(StatusCode::kParseError,
                      fmt::format("{}: tensor '{}' is in this shard but the index does not put it here", path, t.name));
      if (!m.tensors.emplace(t.name, std::make_pair(f.get(), &t)).second)
        return Status(StatusCode::kParseError, fmt::format("{}: tensor '{}' is also in another shard", path, t.name));
      shapes[t.name] = t.shape;
      if (t.dtype != StDtype::kBF16 && t.dtype != StDtype::kF16 && t.dtype != StDtype::kF32)
        return Status(StatusCode::kNotSupported,
                      fmt::format("{}: tensor '{}' is {}; weights must be BF16, F16 or F32", path, t.name,
                                  st_name(t.dtype)));
      dtypes.insert(t.dtype);
    }
    m.files.push_back(std::move(f));
  }
  TUNABLE_RETURN_IF_ERROR(check_config_against_tensors(m.config, shapes, cfg_path));
  TUNABLE_RETURN_IF_ERROR(check_tensors(m.config, shapes, dir));
  if (dtypes.size() > 1)
    return Status(StatusCode::kNotSupported, fmt::format("{}: the weights mix dtypes; one of BF16, F16, F32 expected", dir));
  *out = std::move(m);
  return Status::ok();
}

}  // namespace tunable::model
