#include "tune/context_impl.hpp"

#include <fmt/format.h>

namespace tunable {

ContextImpl::ContextImpl(Device device, Options options, std::vector<Validator> validators)
    : device_(device), validators_(std::move(validators)) {
  throw_if_error(set_options(options));
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
  log_.open(o.verbose, verbose_target);
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

Status ContextImpl::ensure_loaded() {
  const std::string path = results_path();
  std::lock_guard<std::mutex> lock(file_mu_);
  if (path == loaded_path_ && (file_ || load_failed_)) return Status::ok();
  load_failed_ = false;
  if (path.empty()) {
    file_.reset();
    loaded_path_.clear();
    return Status::ok();
  }
  loaded_path_ = path;
  file_ = std::make_unique<ResultsFile>(path, validators_);
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
  if (!st.is_ok()) {
    log_.warn(fmt::format("results file unusable, results stay in memory: {}", st.message()));
    file_.reset();
    load_failed_ = true;
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
  (void)ensure_loaded();
  return store_.find(op_sig, params_sig);
}

void ContextImpl::add_result(const ResultRecord& r) {
  store_.put(r);
  std::lock_guard<std::mutex> lock(file_mu_);
  if (!file_) return;
  Status st = file_->append(r);
  if (!st.is_ok()) {
    log_.warn(fmt::format("result {} kept in memory only: {}", format_record(r), st.message()));
  } else {
    log_.log(1, "writing file {}: {}", file_->path(), format_record(r));
  }
}

void ContextImpl::record_untuned(const std::string& op_sig, const std::string& params_sig) {
  Options o = options();
  if (!o.record_untuned) return;
  const std::string path = untuned_path();
  std::lock_guard<std::mutex> lock(file_mu_);
  if (!untuned_ || untuned_->path() != path) untuned_ = std::make_unique<UntunedFile>(path);
  Status st = untuned_->record(op_sig, params_sig);
  if (!st.is_ok())
    log_.warn(fmt::format("untuned problem {},{} not recorded: {}", op_sig, params_sig, st.message()));
}

ContextStats ContextImpl::stats() const {
  return ContextStats{tuned_.load(), hits_.load(), defaults_.load(), fallbacks_.load()};
}

}  // namespace tunable
