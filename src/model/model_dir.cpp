#include "model/model_dir.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <fstream>
#include <set>
#include <sstream>

#include "core/error.hpp"

namespace tunable::model {
namespace {

bool exists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0;
}

/// A small JSON file: regular (a FIFO named config.json must not block the loader) and at most
/// 64 MiB.
Status read_text(const std::string& path, std::string* out) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Status(StatusCode::kIoError, fmt::format("cannot read '{}'", path));
  if (!S_ISREG(st.st_mode)) return Status(StatusCode::kIoError, fmt::format("'{}' is not a regular file", path));
  if (st.st_size > (64 << 20))
    return Status(StatusCode::kParseError, fmt::format("'{}' is {} bytes; a config file is at most 64 MiB", path,
                                                       static_cast<long long>(st.st_size)));
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status(StatusCode::kIoError, fmt::format("cannot read '{}'", path));
  std::ostringstream ss;
  ss << f.rdbuf();
  if (f.bad()) return Status(StatusCode::kIoError, fmt::format("reading '{}' failed", path));
  *out = ss.str();
  return Status::ok();
}

}  // namespace

Status open_model_dir(const std::string& dir, ModelDir* out) {
  if (out == nullptr) return Status(StatusCode::kInvalidArgument, "open_model_dir: null output");
  ModelDir m;
  m.path = dir;
  const std::string cfg_path = dir + "/config.json";
  if (!exists(cfg_path)) return Status(StatusCode::kIoError, fmt::format("{}: no config.json", dir));
  std::string text;
  TUNABLE_RETURN_IF_ERROR(read_text(cfg_path, &text));
  TUNABLE_RETURN_IF_ERROR(parse_model_config(text, cfg_path, &m.config));
  TUNABLE_RETURN_IF_ERROR(parse_special_tokens(text, cfg_path, &m.tokens));
  const std::string gen_path = dir + "/generation_config.json";
  if (exists(gen_path)) {
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
  if (exists(index)) {
    std::map<std::string, std::string> wm;
    TUNABLE_RETURN_IF_ERROR(read_text(index, &text));
    TUNABLE_RETURN_IF_ERROR(parse_safetensors_index(text, index, &wm));
    for (const auto& [name, file] : wm) shard_tensors[file].insert(name);
  } else if (exists(single)) {
    shard_tensors["model.safetensors"];
  } else {
    return Status(StatusCode::kIoError,
                  fmt::format("{}: no model.safetensors or model.safetensors.index.json", dir));
  }
  std::map<std::string, std::vector<std::int64_t>> shapes;
  std::set<StDtype> dtypes;
  for (const auto& [file, names] : shard_tensors) {
    const std::string path = dir + "/" + file;
    if (!exists(path)) return Status(StatusCode::kIoError, fmt::format("{}: shard '{}' does not exist", index, file));
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
  TUNABLE_RETURN_IF_ERROR(check_tensors(m.config, shapes, dir));
  if (dtypes.size() > 1)
    return Status(StatusCode::kNotSupported, fmt::format("{}: the weights mix dtypes; one of BF16, F16, F32 expected", dir));
  *out = std::move(m);
  return Status::ok();
}

}  // namespace tunable::model
