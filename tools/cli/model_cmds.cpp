// `tunable generate` and `tunable bench-model`: the decode engine from the command line.
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "tunable/engine.hpp"
#include "tunable/measure.hpp"
#include "tunable/tokenizer.hpp"

namespace tunable::cli {
namespace {

/// Comma-separated non-negative integers; errors name the option and what each value should be.
std::vector<std::int32_t> parse_ids(const std::string& s, const char* option, const char* kind) {
  std::vector<std::int32_t> ids;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    std::size_t used = 0;
    long long v = -1;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || v < 0 || v > INT32_MAX)
      throw Error(StatusCode::kInvalidArgument, fmt::format("{}: '{}' is not a {}", option, item, kind));
    ids.push_back(static_cast<std::int32_t>(v));
  }
  if (ids.empty()) throw Error(StatusCode::kInvalidArgument, fmt::format("{}: no values given", option));
  return ids;
}

std::vector<int> parse_int_list(const std::string& s, const char* what) {
  std::vector<int> v;
  for (std::int32_t x : parse_ids(s, what, "count")) {
    if (x < 1) throw Error(StatusCode::kInvalidArgument, fmt::format("{}: values must be >= 1", what));
    v.push_back(x);
  }
  return v;
}

EngineOptions engine_options(const ModelRunArgs& a, int max_batch, std::int64_t max_seq) {
  EngineOptions o;
  o.device = a.device;
  o.max_batch = max_batch;
  o.max_seq_len = max_seq;
  o.cuda_graphs = !a.no_graphs;
  o.fp8_weights = a.fp8;
  o.prefill_chunk = a.prefill_chunk;
  o.tuning = Options::from_environment();
  o.tuning.tuning = a.tune;
  if (!a.file.empty()) o.tuning.filename = a.file;
  o.progress = [](const std::string& s) { std::fprintf(stderr, "[tunable] %s\n", s.c_str()); };
  return o;
}

/// The model directory's tokenizer through libtunable_tokenizer.so, loaded now rather than linked,
/// so that the command starts on machines without ICU and SentencePiece and only text prompts need
/// them: TUNABLE_TOKENIZER_LIBRARY, else next to the build tree's or an install's libraries.
std::unique_ptr<Tokenizer> load_tokenizer(const std::string& dir) {
  using Load = int (*)(const char*, Tokenizer**, char*, std::size_t);
  std::vector<std::string> candidates;
  if (const char* p = std::getenv("TUNABLE_TOKENIZER_LIBRARY")) candidates.push_back(p);
  const std::string exe = executable_path();
  const std::string exe_dir = exe.substr(0, exe.find_last_of('/') == std::string::npos ? 0 : exe.find_last_of('/'));
  if (!exe_dir.empty()) {
    candidates.push_back(exe_dir + "/../libtunable_tokenizer.so");
    candidates.push_back(exe_dir + "/../lib/libtunable_tokenizer.so");
  }
  candidates.push_back("libtunable_tokenizer.so");
  std::string why;
  for (const std::string& c : candidates) {
    void* h = ::dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
      const char* e = ::dlerror();
      if (why.empty() || (e && std::string(e).find("No such file") == std::string::npos)) why = e ? e : c;
      continue;
    }
    auto load = reinterpret_cast<Load>(::dlsym(h, "tunable_tokenizer_load_dir"));
    if (load == nullptr) throw Error(StatusCode::kInternal, fmt::format("{} lacks tunable_tokenizer_load_dir", c));
    Tokenizer* t = nullptr;
    char err[2048] = {0};
    if (const int code = load(dir.c_str(), &t, err, sizeof err); code != 0) throw Error(static_cast<StatusCode>(code), err);
    return std::unique_ptr<Tokenizer>(t);  // the library stays loaded for the process
  }
  throw Error(StatusCode::kNotSupported,
              fmt::format("text prompts need libtunable_tokenizer.so (ICU and SentencePiece), which did not load ({}); "
                          "give --prompt-ids instead",
                          why));
}

std::size_t device_free(int device) {
  std::size_t free = 0, total = 0;
  if (cudaSetDevice(device) != cudaSuccess || cudaFree(nullptr) != cudaSuccess ||
      cudaMemGetInfo(&free, &total) != cudaSuccess) {
    (void)cudaGetLastError();
    throw Error(StatusCode::kNoDevice, fmt::format("cuda:{} cannot be used", device));
  }
  return free;
}

/// Every cuBLAS call tunable makes passes tunable's own workspace (cublasSetWorkspace after each
/// cublasSetStream), so cuBLAS's default workspace pool is never used, yet its buffers (67 MB on an
/// H100, measured) stay allocated next to the model: the engine commands ask cuBLAS for none, unless
/// the user set CUBLAS_WORKSPACE_CONFIG. Only these commands: their process runs nobody else's cuBLAS
/// (`tunable run` hands its environment to the program it starts).
void no_default_cublas_workspace() { setenv("CUBLAS_WORKSPACE_CONFIG", ":0:0", /*overwrite=*/0); }

}  // namespace

int run_generate(const GenerateArgs& a) {
  no_default_cublas_workspace();
  // Text prompts: the tokenizer first (a missing or unreadable one is reported before any GPU
  // work), BOS as the tokenizer's post-processor adds it.
  std::unique_ptr<Tokenizer> tok;
  std::vector<std::int32_t> prompt;
  if (a.prompt_ids_given) {
    prompt = parse_ids(a.prompt_ids, "--prompt-ids", "token id");
  } else {
    tok = load_tokenizer(a.run.model);
    throw_if_error(tok->encode(a.prompt, true, &prompt));
    if (prompt.empty()) throw Error(StatusCode::kInvalidArgument, "--prompt: the text gives no tokens");
  }
  std::unique_ptr<Engine> e;
  throw_if_error(Engine::load(a.run.model, engine_options(a.run, a.batch, a.run.max_seq_len), &e));
  if (tok && tok->vocab_size() > e->info().vocab_size)
    throw Error(StatusCode::kInvalidArgument,
                fmt::format("the tokenizer has {} ids but the model's vocabulary {}", tok->vocab_size(), e->info().vocab_size));
  const std::vector<std::vector<std::int32_t>> prompts(a.batch, prompt);
  GenerateParams g;
  g.max_new_tokens = a.max_new_tokens;
  g.sampling.temperature = a.temperature;
  g.sampling.top_k = a.top_k;
  g.sampling.top_p = a.top_p;
  g.sampling.seed = a.seed;
  g.ignore_eos = a.ignore_eos;
  g.keep_logits = !a.dump.empty();
  std::vector<std::vector<std::int32_t>> out(a.batch);
  std::unique_ptr<TokenStreamer> streamer;
  if (tok && a.batch == 1) streamer = std::make_unique<TokenStreamer>(*tok, true);
  Status stream_error;
  GenerateStats st;
  throw_if_error(e->generate(prompts, g, [&](const std::vector<std::int32_t>& step) {
    for (int b = 0; b < a.batch; ++b)
      if (step[b] >= 0) out[b].push_back(step[b]);
    if (a.batch == 1 && step[0] >= 0) {
      if (streamer) {
        std::string piece;
        stream_error = streamer->push(step[0], &piece);
        if (!stream_error.is_ok()) return false;
        std::fputs(piece.c_str(), stdout);
      } else {
        std::printf("%d ", step[0]);
      }
      std::fflush(stdout);
    }
    return true;
  }, &st));
  throw_if_error(stream_error);
  if (streamer) {
    std::string rest;
    throw_if_error(streamer->finish(&rest));
    std::printf("%s\n", rest.c_str());
  } else if (a.batch == 1) {
    std::printf("\n");
  } else {
    for (int b = 0; b < a.batch; ++b) {
      std::printf("[%d]", b);
      if (tok) {
        std::vector<std::int32_t> known;  // ids past the tokenizer's vocabulary give no text
        for (std::int32_t t : out[b])
          if (t < tok->vocab_size()) known.push_back(t);
        std::string text;
        throw_if_error(tok->decode(known, true, &text));
        std::printf(" %s", text.c_str());
      } else {
        for (std::int32_t t : out[b]) std::printf(" %d", t);
      }
      std::printf("\n");
    }
  }
  std::fprintf(stderr, "[tunable] %d steps: prefill %.2f ms, decode %.3f ms per step\n", st.steps, st.prefill_ms,
               st.steps > 1 ? st.decode_ms / (st.steps - 1) : 0.0);
  if (!a.dump.empty()) {
    std::vector<float> prompt_logits;
    throw_if_error(e->prompt_logits(prompt, &prompt_logits));
    nlohmann::json j;
    j["vocab"] = e->info().vocab_size;
    j["tokens"] = out;
    j["prompt_logits"] = prompt_logits;
    j["step_logits"] = st.logits;
    std::ofstream f(a.dump);
    f << j.dump();
    if (!f) throw Error(StatusCode::kIoError, fmt::format("cannot write '{}'", a.dump));
  }
  return 0;
}

int run_bench_model(const BenchModelArgs& a) {
  no_default_cublas_workspace();
  const std::vector<int> batches = parse_int_list(a.batch, "--batch");
  const int plen = (a.prompt_len + 7) / 8 * 8;  // padded to a multiple of 8, as the TunableOp blog pads it
  const int max_batch = *std::max_element(batches.begin(), batches.end());
  const std::int64_t max_seq = a.run.max_seq_len > 0 ? a.run.max_seq_len : plen + a.new_tokens;
  const std::size_t free0 = device_free(a.run.device);
  std::unique_ptr<Engine> e;
  throw_if_error(Engine::load(a.run.model, engine_options(a.run, max_batch, max_seq), &e));
  const ModelInfo& mi = e->info();
  double copy_bw = 0;
  {
    cudaStream_t s = nullptr;
    if (cudaStreamCreate(&s) != cudaSuccess) throw Error(StatusCode::kCudaError, "cudaStreamCreate failed");
    const Status st = measure_copy_bandwidth(reinterpret_cast<Stream>(s), &copy_bw);
    (void)cudaStreamDestroy(s);
    throw_if_error(st);
  }
  DeviceInfo di;
  throw_if_error(device_info(a.run.device, &di));
  nlohmann::json out;
  out["model"] = a.run.model;
  out["family"] = mi.family;
  out["dtype"] = mi.dtype;
  out["weights"] = mi.weights;
  out["device"] = di.name;
  out["driver"] = di.driver_version;
  out["copy_bandwidth_gbs"] = copy_bw / 1e9;
  const std::string types = mi.weights == mi.dtype ? mi.dtype : fmt::format("{}, {} weights", mi.dtype, mi.weights);
  std::printf("%s (%s, %s) on %s: copy bandwidth %.0f GB/s\n", a.run.model.c_str(), mi.architecture.c_str(),
              types.c_str(), di.name.c_str(), copy_bw / 1e9);
  std::printf("%6s %8s %12s %12s %10s %10s %8s   %s\n", "batch", "prompt", "prefill t/s", "decode t/s", "ms/step",
              "GB/s", "of copy", "GPU ms per step by kind (alone)");
  for (int b : batches) {
    Engine::BenchResult r;
    throw_if_error(e->benchmark(b, plen, a.new_tokens, a.runs, &r));
    const double gbs = r.bytes_per_step / (r.decode_ms_per_step * 1e-3) / 1e9;
    std::string kinds;
    double sum = 0;
    nlohmann::json kj;
    for (const auto& [k, ms] : r.kind_ms_per_step) {
      kinds += fmt::format("{} {:.3f}  ", k, ms);
      sum += ms;
      kj[k] = ms;
    }
    kinds += fmt::format("gaps {:.3f}", r.decode_ms_per_step - sum);
    std::printf("%6d %8d %12.0f %12.1f %10.3f %10.0f %7.1f%%   %s\n", b, plen, b * plen / (r.prefill_ms * 1e-3),
                b / (r.decode_ms_per_step * 1e-3), r.decode_ms_per_step, gbs, 100 * gbs * 1e9 / copy_bw, kinds.c_str());
    out["runs"].push_back({{"batch", b},
                           {"prompt_len", plen},
                           {"new_tokens", a.new_tokens},
                           {"prefill_ms", r.prefill_ms},
                           {"prefill_tok_s", b * plen / (r.prefill_ms * 1e-3)},
                           {"decode_ms_per_step", r.decode_ms_per_step},
                           {"decode_tok_s", b / (r.decode_ms_per_step * 1e-3)},
                           {"bytes_per_step", r.bytes_per_step},
                           {"gbs", gbs},
                           {"fraction_of_copy", gbs * 1e9 / copy_bw},
                           {"kind_ms_per_step", kj}});
  }
  const std::size_t free1 = device_free(a.run.device);
  const std::size_t used = free0 > free1 ? free0 - free1 : 0;
  const std::size_t base = mi.weight_bytes + mi.kv_cache_bytes;
  std::printf("memory: weights %s, KV cache %s, buffers %s; the process holds %s on the GPU (%.1f%% over weights + "
              "KV cache)\n",
              format_bytes(mi.weight_bytes).c_str(), format_bytes(mi.kv_cache_bytes).c_str(),
              format_bytes(mi.buffer_bytes).c_str(), format_bytes(used).c_str(),
              base ? 100.0 * (static_cast<double>(used) - base) / base : 0.0);
  out["memory"] = {{"weights", mi.weight_bytes}, {"kv_cache", mi.kv_cache_bytes}, {"buffers", mi.buffer_bytes},
                   {"process_device_bytes", used}};
  if (!a.json.empty()) {
    std::ofstream f(a.json);
    f << out.dump(2) << "\n";
    if (!f) throw Error(StatusCode::kIoError, fmt::format("cannot write '{}'", a.json));
  }
  return 0;
}

}  // namespace tunable::cli
