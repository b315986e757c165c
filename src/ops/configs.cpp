// Launch configurations of the fused ops: generated names and their inverse, which problems a
// configuration can run, the Default choice and the tuning candidates. Host only.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdint>
#include <iterator>

#include "kernels/norm/rms_norm_limits.hpp"
#include "ops/ops_args.hpp"

namespace tunable {
namespace {

Status unsupported(std::string s) { return Status(StatusCode::kNotSupported, std::move(s)); }

std::int64_t round_up(std::int64_t v, std::int64_t m) { return (v + m - 1) / m * m; }
std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
bool aligned(const void* p, std::size_t a) { return reinterpret_cast<std::uintptr_t>(p) % a == 0; }

/// Elements per 16-byte vector.
int vec16_elems(DataType t) { return static_cast<int>(16 / size_of(t)); }
int vec_elems(DataType t, bool vec16) { return vec16 ? vec16_elems(t) : 1; }

bool is_items(int items, bool act) {
  return items == 1 || items == 2 || items == 4 || (!act && items == 8);
}

bool threads_ok(int t) { return t >= 32 && t <= 1024 && t % 32 == 0; }

bool is_cluster(int c) { return c == 2 || c == 4 || c == 8; }

bool is_stream(int s) {
  return std::find(std::begin(kernels::kRmsNormStreamRows), std::end(kernels::kRmsNormStreamRows), s) !=
         std::end(kernels::kRmsNormStreamRows);
}

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  std::size_t begin = 0;
  for (;;) {
    const std::size_t at = s.find(sep, begin);
    out.emplace_back(s.substr(begin, at == std::string_view::npos ? std::string_view::npos : at - begin));
    if (at == std::string_view::npos) return out;
    begin = at + 1;
  }
}

/// "<letter><positive decimal>" without leading zeros.
bool parse_field(const std::string& tok, char letter, int* out) {
  if (tok.size() < 2 || tok.size() > 6 || tok[0] != letter || tok[1] == '0') return false;
  int v = 0;
  for (std::size_t i = 1; i < tok.size(); ++i) {
    if (tok[i] < '0' || tok[i] > '9') return false;
    v = v * 10 + (tok[i] - '0');
  }
  *out = v;
  return true;
}

bool parse_vec(const std::string& tok, bool* vec16) {
  if (tok == "vec16") *vec16 = true;
  else if (tok == "scalar") *vec16 = false;
  else return false;
  return true;
}

int norm_max_threads(const NormConfig& c, DataType t) {
  return kernels::rms_norm_max_threads(c.items * vec_elems(t, c.vec16) * static_cast<int>(size_of(t)));
}

Status misaligned(const char* what, std::size_t bytes) {
  return Status(StatusCode::kMisaligned,
                fmt::format("{} is not aligned to {} bytes (16-byte vector candidate)", what, bytes));
}

}  // namespace

// ---- names ------------------------------------------------------------------------------------------

std::string config_name(const NormConfig& c) {
  const char* v = c.vec16 ? "vec16" : "scalar";
  if (c.staged) return fmt::format("rms_{}_staged_t{}", v, c.threads_per_row);
  if (c.cluster > 1) return fmt::format("rms_{}_c{}_t{}_i{}", v, c.cluster, c.threads_per_row, c.items);
  if (c.stream > 0) return fmt::format("rms_{}_w{}_t{}_i{}", v, c.stream, c.threads_per_row, c.items);
  return fmt::format("rms_{}_t{}_r{}_i{}{}", v, c.threads_per_row, c.rows_per_block, c.items,
                     c.early_weight ? "_ew" : "");
}

std::string config_name(const ActConfig& c) {
  return fmt::format("act_{}_t{}_i{}{}{}", c.vec16 ? "vec16" : "scalar", c.threads, c.items,
                     c.rows_per_thread > 1 ? fmt::format("_r{}", c.rows_per_thread) : std::string(),
                     c.fast ? "_fastsigmoid" : "");
}

std::optional<NormConfig> parse_norm_config(std::string_view name) {
  const std::vector<std::string> tok = split(name, '_');
  NormConfig c;
  if (tok.size() < 4 || tok[0] != "rms" || !parse_vec(tok[1], &c.vec16)) return std::nullopt;
  if (tok[2] == "staged") {
    c.staged = true;
    c.rows_per_block = 1;
    c.items = 1;
    if (tok.size() != 4 || !parse_field(tok[3], 't', &c.threads_per_row)) return std::nullopt;
    if (!threads_ok(c.threads_per_row)) return std::nullopt;
    return c;
  }
  if (!tok[2].empty() && tok[2][0] == 'c') {
    if (!c.vec16 || tok.size() != 5 || !parse_field(tok[2], 'c', &c.cluster) ||
        !parse_field(tok[3], 't', &c.threads_per_row) || !parse_field(tok[4], 'i', &c.items))
      return std::nullopt;
    if (!is_cluster(c.cluster) || !threads_ok(c.threads_per_row) || c.items > 2) return std::nullopt;
    return c;
  }
  if (!tok[2].empty() && tok[2][0] == 'w') {
    if (!c.vec16 || tok.size() != 5 || !parse_field(tok[2], 'w', &c.stream) ||
        !parse_field(tok[3], 't', &c.threads_per_row) || !parse_field(tok[4], 'i', &c.items))
      return std::nullopt;
    if (!is_stream(c.stream) || !threads_ok(c.threads_per_row) || c.items > 4 || !is_items(c.items, true) ||
        c.threads_per_row > kernels::rms_norm_stream_max_threads(c.items))
      return std::nullopt;
    return c;
  }
  if (tok.size() == 6) {
    if (tok[5] != "ew" || !c.vec16) return std::nullopt;
    c.early_weight = true;
  }
  if ((tok.size() != 5 && tok.size() != 6) || !parse_field(tok[2], 't', &c.threads_per_row) ||
      !parse_field(tok[3], 'r', &c.rows_per_block) || !parse_field(tok[4], 'i', &c.items))
    return std::nullopt;
  if (!threads_ok(c.threads_per_row) || !is_items(c.items, false) ||
      c.threads_per_row * c.rows_per_block > 1024 || (c.early_weight && c.items > 4))
    return std::nullopt;
  return c;
}

std::optional<ActConfig> parse_act_config(std::string_view name) {
  const std::vector<std::string> tok = split(name, '_');
  ActConfig c;
  if (tok.size() < 4 || tok.size() > 6 || tok[0] != "act" || !parse_vec(tok[1], &c.vec16) ||
      !parse_field(tok[2], 't', &c.threads) || !parse_field(tok[3], 'i', &c.items))
    return std::nullopt;
  std::size_t next = 4;
  if (tok.size() > next && !tok[next].empty() && tok[next][0] == 'r') {
    if (!parse_field(tok[next], 'r', &c.rows_per_thread) ||
        (c.rows_per_thread != 2 && c.rows_per_thread != 4) || !c.vec16 || c.items != 1)
      return std::nullopt;
    ++next;
  }
  if (tok.size() > next) {
    if (tok[next] != "fastsigmoid" || tok.size() != next + 1) return std::nullopt;
    c.fast = true;
  }
  if (!threads_ok(c.threads) || !is_items(c.items, true)) return std::nullopt;
  return c;
}

// ---- alignment and fit ----------------------------------------------------------------------------------

bool vec16_aligned(const NormArgs& a) {
  const DataType t = a.prob.dtype;
  const std::size_t es = size_of(t), oes = out_size(t, a.prob.fp8);
  const std::size_t out_vec = static_cast<std::size_t>(vec16_elems(t)) * oes;
  bool ok = aligned(a.x, 16) && aligned(a.weight, 16) && (a.x_stride * es) % 16 == 0 &&
            aligned(a.out, out_vec) && (a.out_stride * oes) % out_vec == 0;
  if (a.prob.fused) ok = ok && aligned(a.residual, 16) && (a.residual_stride * es) % 16 == 0;
  return ok;
}

bool vec16_aligned(const ActArgs& a) {
  const DataType t = a.prob.dtype;
  const std::size_t es = size_of(t), oes = out_size(t, a.prob.fp8);
  const std::size_t out_vec = static_cast<std::size_t>(vec16_elems(t)) * oes;
  return aligned(a.x, 16) && (a.x_stride * es) % 16 == 0 && aligned(a.out, out_vec) &&
         (a.out_stride * oes) % out_vec == 0;
}

Status config_fits(const NormArgs& a, const NormConfig& c) {
  const NormProblem& p = a.prob;
  const int vec = vec_elems(p.dtype, c.vec16);
  if (!threads_ok(c.threads_per_row))
    return unsupported(fmt::format("threads per row {} is not a multiple of 32 in [32, 1024]", c.threads_per_row));
  if (c.vec16) {
    if (p.hidden % vec != 0)
      return unsupported(fmt::format("hidden {} is not a multiple of {} ({}-element 16-byte vectors)",
                                     p.hidden, vec, vec));
    if (!vec16_aligned(a)) {
      const std::size_t es = size_of(p.dtype);
      if (!aligned(a.x, 16)) return misaligned("x", 16);
      if (!aligned(a.weight, 16)) return misaligned("weight", 16);
      if (p.fused && !aligned(a.residual, 16)) return misaligned("residual", 16);
      if ((a.x_stride * es) % 16) return misaligned("x_row_stride (in bytes)", 16);
      if (p.fused && (a.residual_stride * es) % 16) return misaligned("residual_row_stride (in bytes)", 16);
      const std::size_t ob = static_cast<std::size_t>(vec) * out_size(p.dtype, p.fp8);
      return aligned(a.out, ob) ? misaligned("out_row_stride (in bytes)", ob) : misaligned("out", ob);
    }
  }
  if (c.staged) return Status::ok();
  if ((c.cluster > 1 || c.early_weight || c.stream > 0) && !c.vec16)
    return unsupported("cluster, early-weight and streaming candidates need 16-byte vectors");
  const std::int64_t nvec = p.hidden / vec;
  if (c.stream > 0) {
    if (!is_stream(c.stream)) return unsupported(fmt::format("streaming rows per block {} not in {}", c.stream,
                                                             fmt::join(kernels::kRmsNormStreamRows, ", ")));
    if (c.items != 1 && c.items != 2 && c.items != 4)
      return unsupported(fmt::format("streaming items {} not in 1, 2, 4", c.items));
    if (c.threads_per_row > kernels::rms_norm_stream_max_threads(c.items))
      return unsupported(fmt::format("{} threads per block exceed the streaming kernel's limit of {} at {} items",
                                     c.threads_per_row, kernels::rms_norm_stream_max_threads(c.items), c.items));
    if (ceil_div(nvec, c.items) > c.threads_per_row)
      return unsupported(fmt::format("hidden {} needs {} vectors per row, more than {} threads x {} items",
                                     p.hidden, nvec, c.threads_per_row, c.items));
    if (ceil_div(p.rows, c.stream) > 0x7fffffff) return unsupported("too many rows for a streaming launch");
    return Status::ok();
  }
  if (c.cluster > 1) {
    if (!is_cluster(c.cluster)) return unsupported(fmt::format("cluster {} not in 2, 4, 8", c.cluster));
    if (c.items != 1 && c.items != 2) return unsupported(fmt::format("cluster items {} not in 1, 2", c.items));
    if (c.threads_per_row > norm_max_threads(c, p.dtype))
      return unsupported(fmt::format("{} threads per block exceed the kernel's limit of {} at {} items",
                                     c.threads_per_row, norm_max_threads(c, p.dtype), c.items));
    if (ceil_div(ceil_div(nvec, c.cluster), c.items) > c.threads_per_row)
      return unsupported(fmt::format("hidden {} needs {} vectors per block of a {}-block cluster, more "
                                     "than {} threads x {} items", p.hidden, ceil_div(nvec, c.cluster),
                                     c.cluster, c.threads_per_row, c.items));
    if (p.rows * c.cluster > 0x7fffffff) return unsupported("too many rows for a cluster launch");
    return Status::ok();
  }
  if (c.early_weight && c.items > 4) return unsupported("early-weight items must be 1, 2 or 4");
  if (!is_items(c.items, false)) return unsupported(fmt::format("items {} not in 1, 2, 4, 8", c.items));
  if (c.rows_per_block < 1) return unsupported("rows per block must be >= 1");
  if (ceil_div(nvec, c.items) > c.threads_per_row)
    return unsupported(fmt::format("hidden {} needs {} vectors per row, more than {} threads x {} items",
                                   p.hidden, nvec, c.threads_per_row, c.items));
  const int max_threads = norm_max_threads(c, p.dtype);
  if (c.threads_per_row * c.rows_per_block > max_threads)
    return unsupported(fmt::format("{} threads per block exceed the kernel's limit of {} at {} items",
                                   c.threads_per_row * c.rows_per_block, max_threads, c.items));
  return Status::ok();
}

Status config_fits(const ActArgs& a, const ActConfig& c) {
  const ActProblem& p = a.prob;
  const int vec = vec_elems(p.dtype, c.vec16);
  if (!threads_ok(c.threads) || c.threads > kernels::kActMaxThreads)
    return unsupported(fmt::format("threads {} is not a multiple of 32 in [32, 1024]", c.threads));
  if (!is_items(c.items, true)) return unsupported(fmt::format("items {} not in 1, 2, 4", c.items));
  if (c.rows_per_thread != 1 &&
      (!c.vec16 || c.items != 1 || (c.rows_per_thread != 2 && c.rows_per_thread != 4)))
    return unsupported(fmt::format("rows per thread {} needs 16-byte vectors, items 1 and 2 or 4",
                                   c.rows_per_thread));
  if (c.vec16) {
    if (p.d % vec != 0)
      return unsupported(fmt::format("d {} is not a multiple of {} ({}-element 16-byte vectors)", p.d, vec, vec));
    if (!vec16_aligned(a)) {
      if (!aligned(a.x, 16)) return misaligned("x", 16);
      if ((a.x_stride * size_of(p.dtype)) % 16) return misaligned("x_row_stride (in bytes)", 16);
      const std::size_t ob = static_cast<std::size_t>(vec) * out_size(p.dtype, p.fp8);
      return aligned(a.out, ob) ? misaligned("out_row_stride (in bytes)", ob) : misaligned("out", ob);
    }
  }
  return Status::ok();
}

// ---- Default and candidates -------------------------------------------------------------------------------

NormConfig default_config(const NormArgs& a, bool clusters) {
  const NormProblem& p = a.prob;
  NormConfig c;
  c.vec16 = p.hidden % vec16_elems(p.dtype) == 0 && vec16_aligned(a);
  const std::int64_t nvec = p.hidden / vec_elems(p.dtype, c.vec16);
  // <= 64 rows of >= 512 vectors: the row split over a cluster whose blocks push their sums to
  // each other (H100: 5-50 % faster per call in graphs than the register
  // kernel's best shape). Up to 16 rows: ~128 threads per block (c4_t128 at 4096 bf16, c8_t128 at 8192, c8_t256
  // at 16384); 17-64 rows: two blocks of <= 256 threads x 1-2 items (c2_t256, c2_t256_i2, c2_t512_i2).
  if (clusters && c.vec16 && p.rows <= 64 && nvec >= 512) {
    NormConfig t = c;
    if (p.rows <= 16) {
      t.cluster = static_cast<int>(std::min<std::int64_t>(8, nvec / 128));
      t.items = 1;
    } else {
      t.cluster = 2;
      t.items = nvec > 512 ? 2 : 1;
    }
    t.threads_per_row = static_cast<int>(round_up(ceil_div(ceil_div(nvec, t.cluster), t.items), 32));
    if (config_fits(a, t).is_ok()) return t;
  }
  // Few rows are latency-bound: spread each row over as many threads as possible. Many rows are
  // bandwidth-bound: a few vectors per thread and blocks of <= 512 threads keep several blocks
  // (so their loads) resident per SM while others reduce.
  const bool few_rows = p.rows <= 64;
  if (nvec <= 32 * 4) {
    // Short rows: one warp per row, several rows per block.
    c.threads_per_row = 32;
    c.items = static_cast<int>(std::min<std::int64_t>(4, std::max<std::int64_t>(1, ceil_div(nvec, 32))));
    if (c.items == 3) c.items = 4;
    c.rows_per_block = static_cast<int>(std::min<std::int64_t>(8, rows_bucket(p.rows)));
    return c;
  }
  // 512 < rows <= 1024 of 1024-2048 vectors: blocks walking two rows with the next one in flight (H100:
  // 3-7 % faster in graphs than the register kernels of the rule below at
  // 1024 rows of 16384 and 8192 bf16).
  if (p.rows > 512 && p.rows <= 1024 && c.vec16 && nvec >= 1024 && nvec <= 2048) {
    NormConfig t = c;
    t.stream = 2;
    t.items = 2;
    t.threads_per_row = static_cast<int>(round_up(ceil_div(nvec, 2), 32));
    if (config_fits(a, t).is_ok()) return t;
  }
  // 512 < rows <= 2048 (H100, 2026-11-21): 4 vectors per thread won at hidden 4096 (t128, 4 rows
  // per block at 1024 rows, 2 at 2048), 8192 (t256_r1) and 16384 (t512_r1): fewer, fuller threads.
  if (p.rows > 512 && p.rows <= 2048 && c.vec16 && nvec >= 4 * 128) {
    NormConfig t = c;
    t.items = 4;
    t.threads_per_row = static_cast<int>(round_up(ceil_div(nvec, 4), 32));
    t.rows_per_block = t.threads_per_row <= 128 ? (p.rows <= 1024 ? 4 : 2) : 1;
    if (t.threads_per_row * t.rows_per_block <= norm_max_threads(t, p.dtype)) return t;
  }
  const std::int64_t cap = few_rows ? 1024 : 512;
  for (int items : kernels::kRmsNormItems) {
    NormConfig t = c;
    t.items = items;
    t.rows_per_block = 1;
    t.threads_per_row = static_cast<int>(round_up(ceil_div(nvec, items), 32));
    if (t.threads_per_row <= cap && t.threads_per_row <= norm_max_threads(t, p.dtype)) return t;
  }
  c.staged = true;
  c.threads_per_row = few_rows ? 1024 : 512;
  return c;
}

ActConfig default_config(const ActArgs& a) {
  const ActProblem& p = a.prob;
  ActConfig c;
  c.vec16 = p.d % vec16_elems(p.dtype) == 0 && vec16_aligned(a);
  const std::int64_t nvec = p.d / vec_elems(p.dtype, c.vec16);
  if (p.rows <= 64) {
    // Latency-bound: many small blocks per row, one vector per thread.
    c.items = 1;
    c.threads = static_cast<int>(std::min<std::int64_t>(128, round_up(nvec, 32)));
  } else {
    c.items = nvec >= 1024 ? 2 : 1;
    c.threads = static_cast<int>(std::min<std::int64_t>(256, round_up(ceil_div(nvec, c.items), 32)));
  }
  return c;
}

std::vector<NormConfig> candidate_configs(const NormArgs& a) {
  const NormProblem& p = a.prob;
  std::vector<NormConfig> out;
  const bool vec16 = p.hidden % vec16_elems(p.dtype) == 0;
  const std::int64_t nvec = p.hidden / vec_elems(p.dtype, vec16);
  const std::int64_t rows = rows_bucket(p.rows);
  for (int items : kernels::kRmsNormItems) {
    // More items than needed when a single warp already covers the row with half as many.
    if (items > 1 && ceil_div(nvec, items / 2) <= 32) continue;
    NormConfig c;
    c.vec16 = vec16;
    c.items = items;
    const std::int64_t tpr = round_up(ceil_div(nvec, items), 32);
    if (tpr > 1024) continue;
    c.threads_per_row = static_cast<int>(tpr);
    const int max_threads = norm_max_threads(c, p.dtype);
    for (int rpb = 1; rpb <= 32 && rpb <= rows && c.threads_per_row * rpb <= max_threads; rpb *= 2) {
      c.rows_per_block = rpb;
      out.push_back(c);
    }
  }
  // The same register configurations with the weight loaded together with the row (one memory
  // round trip before the reduction instead of two; more registers live).
  if (vec16) {
    const std::size_t n = out.size();
    for (std::size_t i = 0; i < n; ++i) {
      if (out[i].items > 4) continue;
      NormConfig c = out[i];
      c.early_weight = true;
      out.push_back(c);
    }
  }
  // Few rows of long rows: a row split over a 2-8 block cluster (DSMEM reduction), so up to 8x as
  // many SMs move the bytes. Not worth it when one block of 256 threads covers the row at 1 item.
  if (vec16 && rows <= 256 && nvec > 256) {
    for (int cluster : {2, 4, 8}) {
      for (int items : {1, 2}) {
        NormConfig c;
        c.vec16 = true;
        c.cluster = cluster;
        c.items = items;
        const std::int64_t tpb = round_up(ceil_div(ceil_div(nvec, cluster), items), 32);
        if (tpb < 64 || tpb > norm_max_threads(c, p.dtype)) continue;
        c.threads_per_row = static_cast<int>(tpb);
        out.push_back(c);
      }
    }
  }
  // Many rows of long rows: blocks walking 2 or 4 rows each with the next row in flight (H100:
  // ahead of the one-row-per-block kernels at 1024 rows of 8192 and 16384).
  if (vec16 && rows >= 512 && nvec > 256) {
    for (int s : kernels::kRmsNormStreamRows) {
      for (int items : {1, 2, 4}) {
        NormConfig c;
        c.vec16 = true;
        c.stream = s;
        c.items = items;
        const std::int64_t tpb = round_up(ceil_div(nvec, items), 32);
        if (tpb < 128 || tpb > kernels::rms_norm_stream_max_threads(items)) continue;
        c.threads_per_row = static_cast<int>(tpb);
        out.push_back(c);
      }
    }
  }
  for (int threads : {256, 512, 1024}) {
    if (threads > 256 && threads / 2 > nvec) break;  // most threads would idle
    NormConfig c;
    c.vec16 = vec16;
    c.staged = true;
    c.threads_per_row = threads;
    out.push_back(c);
  }
  return out;
}

std::vector<ActConfig> candidate_configs(const ActArgs& a) {
  const ActProblem& p = a.prob;
  std::vector<ActConfig> out;
  const bool vec16 = p.d % vec16_elems(p.dtype) == 0;
  const std::int64_t nvec = p.d / vec_elems(p.dtype, vec16);
  for (bool fast : {false, true}) {
    for (int threads : {64, 128, 256, 512, 1024}) {
      for (int items : {1, 2, 4}) {
        // A block spanning more than twice the row leaves most of its threads idle.
        if (!(threads == 64 && items == 1) && threads * items > 2 * round_up(nvec, 32)) continue;
        out.push_back(ActConfig{vec16, threads, items, fast});
      }
    }
    // Many rows: each thread one vector column of 2 or 4 rows, all loads issued first.
    if (vec16 && rows_bucket(p.rows) >= 128) {
      for (int rpt : {2, 4}) {
        for (int threads : {128, 256, 512}) {
          if (threads > 2 * round_up(nvec, 32)) continue;
          ActConfig c{vec16, threads, 1, fast};
          c.rows_per_thread = rpt;
          out.push_back(c);
        }
      }
    }
  }
  return out;
}

}  // namespace tunable
