#include "model/safetensors.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "core/error.hpp"
#include "core/files.hpp"
#include "core/json_depth.hpp"

namespace tunable::model {
namespace {

using json = nlohmann::json;

struct DtypeName {
  const char* name;
  StDtype dtype;
  std::size_t size;
};
constexpr DtypeName kDtypes[] = {
    {"F64", StDtype::kF64, 8},         {"F32", StDtype::kF32, 4},         {"F16", StDtype::kF16, 2},
    {"BF16", StDtype::kBF16, 2},       {"F8_E4M3", StDtype::kF8E4M3, 1}, {"F8_E5M2", StDtype::kF8E5M2, 1},
    {"I64", StDtype::kI64, 8},         {"I32", StDtype::kI32, 4},         {"I16", StDtype::kI16, 2},
    {"I8", StDtype::kI8, 1},           {"U8", StDtype::kU8, 1},           {"BOOL", StDtype::kBool, 1},
};

Status bad(const std::string& what, const std::string& msg) {
  return Status(StatusCode::kParseError, fmt::format("{}: {}", what, msg));
}

// Counts the top-level keys of a JSON text and finds the first repeated one, stopping past the
// entry limit.
struct TopLevelKeys : nlohmann::json_sax<json> {
  int depth = 0;
  std::uint64_t entries = 0;
  std::set<std::string> seen;
  std::string duplicate, error;
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return ++depth, true; }
  bool end_object() override { return --depth, true; }
  bool start_array(std::size_t) override { return ++depth, true; }
  bool end_array() override { return --depth, true; }
  bool key(string_t& k) override {
    if (depth != 1) return true;
    if (++entries > kMaxHeaderEntries) return false;
    if (!seen.insert(k).second && duplicate.empty()) duplicate = k;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    error = e.what();
    return false;
  }
};

// A JSON value's text for a message, cut short.
std::string shown(const json& v) {
  std::string s = v.dump();
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

}  // namespace

std::size_t st_size(StDtype t) noexcept {
  for (const auto& d : kDtypes)
    if (d.dtype == t) return d.size;
  return 0;
}

const char* st_name(StDtype t) noexcept {
  for (const auto& d : kDtypes)
    if (d.dtype == t) return d.name;
  return "?";
}

std::int64_t StTensor::elements() const {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

Status parse_safetensors(const unsigned char* bytes, std::size_t size, const std::string& what, StHeader* out) {
  if (out == nullptr) return Status(StatusCode::kInvalidArgument, "parse_safetensors: null output");
  *out = StHeader{};
  if (size < 8) return bad(what, fmt::format("{} bytes: too short for the 8-byte header length", size));
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | bytes[i];
  if (n > kMaxHeaderBytes) return bad(what, fmt::format("header length {} is over the {}-byte limit", n, kMaxHeaderBytes));
  if (n > size - 8)
    return bad(what, fmt::format("header length {} runs past the end of the file ({} bytes)", n, size));
  const std::uint64_t data_size = size - 8 - n;

  TUNABLE_RETURN_IF_ERROR(check_json_depth(reinterpret_cast<const char*>(bytes + 8),
                                            reinterpret_cast<const char*>(bytes + 8 + n), what));
  // A first pass over the top-level keys: JSON objects keep one value per key, and a repeated
  // tensor name must be an error, not a silent overwrite. (The JSON library's parser callback,
  // which could see them too, rescans the whole object after every entry: quadratic.)
  TopLevelKeys keys;
  const bool syntax_ok = json::sax_parse(bytes + 8, bytes + 8 + n, &keys);
  if (keys.entries > kMaxHeaderEntries)
    return bad(what, fmt::format("the header has more than {} entries; the limit is {}", kMaxHeaderEntries,
                                 kMaxHeaderEntries));
  if (!syntax_ok) return bad(what, fmt::format("the header is not valid JSON: {}", keys.error));
  if (!keys.duplicate.empty()) return bad(what, fmt::format("tensor '{}' appears twice in the header", keys.duplicate));
  json h;
  try {
    h = json::parse(bytes + 8, bytes + 8 + n);
  } catch (const json::exception& e) {
    return bad(what, fmt::format("the header is not valid JSON: {}", e.what()));
  }
  if (!h.is_object()) return bad(what, "the header is not a JSON object");

  std::vector<StTensor> ts;
  for (auto it = h.begin(); it != h.end(); ++it) {
    const std::string& name = it.key();
    const json& v = it.value();
    if (name == "__metadata__") {
      if (!v.is_object()) return bad(what, "__metadata__ is not an object");
      for (auto m = v.begin(); m != v.end(); ++m) {
        if (!m.value().is_string())
          return bad(what, fmt::format("__metadata__ entry '{}' is not a string ({})", m.key(), shown(m.value())));
        out->metadata[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    const std::string tw = fmt::format("tensor '{}'", name);
    if (!v.is_object()) return bad(what, fmt::format("{}: entry is not an object ({})", tw, shown(v)));
    for (auto f = v.begin(); f != v.end(); ++f)
      if (f.key() != "dtype" && f.key() != "shape" && f.key() != "data_offsets")
        return bad(what, fmt::format("{}: unknown field '{}'", tw, f.key()));
    StTensor t;
    t.name = name;
    const auto dt = v.find("dtype");
    if (dt == v.end() || !dt->is_string()) return bad(what, fmt::format("{}: no dtype string", tw));
    const std::string dts = dt->get<std::string>();
    const auto known = std::find_if(std::begin(kDtypes), std::end(kDtypes),
                                    [&](const DtypeName& d) { return dts == d.name; });
    if (known == std::end(kDtypes)) return bad(what, fmt::format("{}: unknown dtype '{}'", tw, dts));
    t.dtype = known->dtype;
    const auto sh = v.find("shape");
    if (sh == v.end() || !sh->is_array()) return bad(what, fmt::format("{}: no shape array", tw));
    if (sh->size() > 8) return bad(what, fmt::format("{}: shape has {} dimensions", tw, sh->size()));
    // Elements, checked against overflow: every dimension is an integer >= 0.
    std::uint64_t elements = 1;
    bool overflow = false;
    for (const json& d : *sh) {
      if (!d.is_number_unsigned() && !(d.is_number_integer() && d.get<std::int64_t>() >= 0))
        return bad(what, fmt::format("{}: shape entry {} is not a non-negative integer", tw, shown(d)));
      const std::uint64_t x = d.get<std::uint64_t>();
      if (x > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        return bad(what, fmt::format("{}: shape entry {} is too large", tw, x));
      if (x != 0 && elements > std::numeric_limits<std::uint64_t>::max() / x) overflow = true;
      else elements *= x;
      t.shape.push_back(static_cast<std::int64_t>(x));
    }
    const std::uint64_t es = known->size;
    if (overflow || (elements != 0 && elements > std::numeric_limits<std::uint64_t>::max() / es))
      return bad(what, fmt::format("{}: shape {} has more bytes than a file can hold", tw, shown(*sh)));
    const auto off = v.find("data_offsets");
    if (off == v.end() || !off->is_array() || off->size() != 2 || !(*off)[0].is_number_unsigned() ||
        !(*off)[1].is_number_unsigned())
      return bad(what, fmt::format("{}: data_offsets is not [begin, end] of non-negative integers", tw));
    t.begin = (*off)[0].get<std::uint64_t>();
    t.end = (*off)[1].get<std::uint64_t>();
    if (t.begin > t.end) return bad(what, fmt::format("{}: data_offsets [{}, {}] end before they begin", tw, t.begin, t.end));
    if (t.end > data_size)
      return bad(what, fmt::format("{}: data_offsets [{}, {}] run past the data ({} bytes)", tw, t.begin, t.end,
                                   data_size));
    if (t.end - t.begin != elements * es)
      return bad(what, fmt::format("{}: data_offsets [{}, {}] hold {} bytes, shape {} of {} needs {}", tw, t.begin,
                                   t.end, t.end - t.begin, shown(*sh), dts, elements * es));
    ts.push_back(std::move(t));
  }
  std::sort(ts.begin(), ts.end(), [](const StTensor& a, const StTensor& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  for (std::size_t i = 1; i < ts.size(); ++i)
    if (ts[i].begin < ts[i - 1].end)
      return bad(what, fmt::format("tensors '{}' [{}, {}] and '{}' [{}, {}] share bytes", ts[i - 1].name,
                                   ts[i - 1].begin, ts[i - 1].end, ts[i].name, ts[i].begin, ts[i].end));
  out->tensors = std::move(ts);
  out->data_offset = 8 + n;
  return Status::ok();
}

Status SafetensorsFile::open(const std::string& path, std::unique_ptr<SafetensorsFile>* out) {
  if (out == nullptr) return Status(StatusCode::kInvalidArgument, "SafetensorsFile::open: null output");
  int fd = -1;
  std::size_t size = 0;
  TUNABLE_RETURN_IF_ERROR(open_regular_file(path, &fd, &size));
  std::unique_ptr<SafetensorsFile> f(new SafetensorsFile());
  f->path_ = path;
  f->size_ = size;
  if (f->size_ > 0) {
    void* p = ::mmap(nullptr, f->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int e = errno;
      ::close(fd);
      return Status(StatusCode::kIoError, fmt::format("cannot map '{}': {}", path, std::strerror(e)));
    }
    f->base_ = static_cast<const unsigned char*>(p);
  }
  ::close(fd);  // the mapping stays valid
  static const unsigned char kEmpty[1] = {0};
  TUNABLE_RETURN_IF_ERROR(parse_safetensors(f->base_ ? f->base_ : kEmpty, f->size_, path, &f->header_));
  for (std::size_t i = 0; i < f->header_.tensors.size(); ++i) f->index_[f->header_.tensors[i].name] = i;
  *out = std::move(f);
  return Status::ok();
}

SafetensorsFile::~SafetensorsFile() {
  if (base_) ::munmap(const_cast<unsigned char*>(base_), size_);
}

const StTensor* SafetensorsFile::find(const std::string& name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &header_.tensors[it->second];
}

}  // namespace tunable::model
