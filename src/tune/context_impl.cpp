#include "tune/context_impl.hpp"

#include <fmt/format.h>

namespace tunable {

ContextImpl::ContextImpl(Device device, Options options, std::vector<Validator> validators)
    : device_(device), validators_(std::move(validators)) {
  // An unopenable verbose file is not worth refusing the context for: the reason was printed to
  // stderr, where the log then goes (set_options returns it to a program that changes options).
  const Status st = set_options(options);
  if (st.code() != StatusCode::kIoError) throw_if_error(st);
}

ContextImpl::~ContextImpl() = default;

Options ContextImpl::options() const {
  std::lock_guard<std::mutex> lock(opt_mu_);
  return options_;
}

Status ContextImpl::set_options(const Options& o) {
  TUNABLE_RETURN_IF_ERROR(o.validate());
  std::string verbose_target = o.verbose_filename == "err" || o.verbose_filename == "out"
                                   ? o.verbose_filename
                                   : insert_ordinal(o.verbose_filename, device_);
  {
    std::lock_guard<std::mutex> lock(opt_mu_);
    options_ = o;
  }
  enabled_ = o.enabled;
  tuning_ = o.tuning;
  // Opened only when something goes there: verbose 0 writes warnings to stderr and creates no file.
  if (!log_.open(o.verbose, o.verbose > 0 ? verbose_target : std::string("err")))
    return Status(StatusCode::kIoError,
                  fmt::format("cannot open verbose file '{}' (TUNABLE_VERBOSE_FILENAME): {}; logging to stderr",
                              verbose_target, log_.open_error()));
  return Status::ok();
}

std::string ContextImpl::results_path() const {
  Options o = options();
  return o.filename.empty() ? std::string() : insert_ordinal(o.filename, device_);
}

std::string ContextImpl::untuned_path() const {
  Options o = options();
  return o.untuned_filename.empty() ? std::string() : insert_ordinal(o.untuned_filename, device_);
}

LockWait ContextImpl::lock_wait() {
  LockWait w;
  w.timeout_ms = options().lock_timeout_ms;
  w.notice = [this](const std::string& text) { log_.warn(text); };
  return w;
}

Status ContextImpl::ensure_loaded() {
  const std::string path = results_path();
  std::lock_guard<std::mutex> lock(file_mu_);
  // A failed load is not retried (its warning was given once) but every caller still gets its reason.
  if (path == loaded_path_ && (file_ || !load_status_.is_ok())) return load_status_;
  load_status_ = Status::ok();
  if (path.empty()) {
    file_.reset();
    loaded_path_.clear();
    return Status::ok();
  }
  loaded_path_ = path;
  file_ = std::make_unique<ResultsFile>(path, validators_, lock_wait());
  log_.log(1, "reading tuning results from {}", path);
  std::vector<ResultRecord> records;
  LoadReport rep;
  Status st = file_->load(&records, &rep);
  for (const auto& d : rep.diagnostics)
    log_.warn(fmt::format("{}:{}: {}", path, d.line, d.message));
  if (!rep.backup_path.empty()) {
    log_.warn(fmt::format("{}: {}; the old file was kept as {} and a fresh file was started", path,
                          rep.mismatch, rep.backup_path));
  }
  if (!rep.read_only.empty())
    log_.warn(fmt::format("{} is read and not written ({}): new results stay in memory", path, rep.read_only));
  if (!st.is_ok()) {
    log_.warn(fmt::format("results file unusable, results stay in memory: {}", st.message()));
    file_.reset();
    load_status_ = st;
    return st;
  }
  if (log_.enabled(1)) {
    for (const auto& [k, v] : validators_) log_.line(1, fmt::format("Validator,{},{}", k, v));
    log_.line(1, rep.created ? fmt::format("created {}", path)
                             : fmt::format("loading {} results", records.size()));
  }
  for (const auto& r : records) {
    log_.log(2, "{}", format_record(r));
    store_.put(r);
  }
  return Status::ok();
}

std::optional<ResultRecord> ContextImpl::find(const std::string& op_sig,
                                              const std::string& params_sig) {
  // An unusable file was warned about when it failed; the lookup goes on with what is in memory.
  (void)ensure_loaded();
  return store_.find(op_sig, params_sig);
}

Status ContextImpl::add_result(const ResultRecord& r) {
  store_.put(r);
  std::lock_guard<std::mutex> lock(file_mu_);
  if (!file_) {
    if (loaded_path_.empty() || load_status_.is_ok()) return Status::ok();  // no results file asked for
    return Status(load_status_.code(),
                  fmt::format("result {} kept in memory only: {}", format_record(r), load_status_.message()));
  }
  std::string dropped;
  Status st = file_->append(r, &dropped);
  if (!dropped.empty()) {
    for (char& c : dropped)
      if (static_cast<unsigned char>(c) < 0x20) c = '?';
    if (dropped.size() > 200) dropped = dropped.substr(0, 200) + "...";
    log_.warn(fmt::format("{}: removed a torn last line (a write cut short): '{}'", file_->path(), dropped));
  }
  if (!st.is_ok()) {
    st = Status(st.code(), fmt::format("result {} kept in memory only: {}", format_record(r), st.message()));
    log_.warn(st.message());
    return st;
  }
  log_.log(1, "writing file {}: {}", file_->path(), format_record(r));
  return Status::ok();
}

void ContextImpl::record_untuned(const std::string& op_sig, const std::string& params_sig) {
  Options o = options();
  if (!o.record_untuned) return;
  const std::string path = untuned_path();
  std::lock_guard<std::mutex> lock(file_mu_);
  if (!untuned_ || untuned_->path() != path) untuned_ = std::make_unique<UntunedFile>(path, lock_wait());
  Status st = untuned_->record(op_sig, params_sig);
  if (!st.is_ok())
    log_.warn(fmt::format("untuned problem {},{} not recorded: {}", op_sig, params_sig, st.message()));
}

ContextStats ContextImpl::stats() const {
  return ContextStats{tuned_.load(), hits_.load(), defaults_.load(), fallbacks_.load()};
}

}  // namespace tunable
