// The skinny configurations' name grammar (skinny_config.hpp): name(), its inverse parse(), and
// valid(), which asks the configuration's family whether it is built for that shape.
#include "gemm/cuda/skinny_config.hpp"

#include <fmt/format.h>

#include <regex>

#include "gemm/cuda/skinny_family.hpp"

namespace tunable {

const char* skinny_family_tag(SkinnyFamily f) {
  switch (f) {
    case SkinnyFamily::kGemv:
      return "gemv";
    case SkinnyFamily::kMma:
      return "mma";
    case SkinnyFamily::kMmaPipe:
      return "mmap";
    case SkinnyFamily::kMmaTma:
      return "mmt";
    case SkinnyFamily::kWgmma:
      return "wgt";
    case SkinnyFamily::kWeightOnly:
      return "wo";
    case SkinnyFamily::kWeightOnlyGemv:
      return "wov";
  }
  return "?";
}

const SkinnyFamilyBridge& skinny_family(SkinnyFamily f) {
  switch (f) {
    case SkinnyFamily::kGemv:
      return skinny_gemv_family();
    case SkinnyFamily::kMma:
      return skinny_mma_family();
    case SkinnyFamily::kMmaPipe:
      return skinny_mmap_family();
    case SkinnyFamily::kMmaTma:
      return skinny_mmt_family();
    case SkinnyFamily::kWeightOnly:
      return skinny_wo_family();
    case SkinnyFamily::kWeightOnlyGemv:
      return skinny_wov_family();
    case SkinnyFamily::kWgmma:
      break;
  }
  return skinny_wgt_family();
}

const std::vector<const SkinnyFamilyBridge*>& skinny_families() {
  static const std::vector<const SkinnyFamilyBridge*> all = {
      &skinny_gemv_family(), &skinny_mma_family(), &skinny_mmap_family(), &skinny_mmt_family(),
      &skinny_wgt_family(), &skinny_wo_family(), &skinny_wov_family()};
  return all;
}

std::string SkinnyConfig::name() const {
  const std::string split = ks.fixed != 0     ? std::to_string(ks.fixed)
                            : ks.waves != 0   ? fmt::format("w{}", ks.waves)
                            : ks.cluster != 0 ? fmt::format("c{}", ks.cluster)
                                              : std::string("auto");
  if (family == SkinnyFamily::kGemv || family == SkinnyFamily::kWeightOnlyGemv)
    return fmt::format("skinny_{}_{}_r{}_t{}_ks{}{}", skinny_family_tag(family), short_name(dtype), rows, width,
                       split, cvt ? "_cvt" : "");
  const bool ring = family == SkinnyFamily::kMmaTma || family == SkinnyFamily::kWgmma;
  const std::string shape = ring ? fmt::format("_b{}s{}", boxes, stages) : "";
  return fmt::format("skinny_{}_{}_bm{}_wk{}_ks{}{}{}{}{}", skinny_family_tag(family),
                     short_name(dtype), rows, width, split, shape,
                     grid == SkinnyGrid::kPair ? "_pair" : "",
                     grid == SkinnyGrid::kBal ? "_bal" : "", wc ? "_wc" : "");
}

bool SkinnyConfig::valid() const {
  if (dtype != DataType::kBF16 && dtype != DataType::kF16 && dtype != DataType::kF8E4M3)
    return false;
  if (skinny_family(family).weight_only() && dtype != DataType::kF8E4M3) return false;
  if (ks.fixed < 0 || ks.fixed > kSkinnyMaxSplits || ks.waves < 0 || ks.waves > kSkinnyMaxWaves)
    return false;
  if (ks.cluster != 0 && ks.cluster != 2 && ks.cluster != 4) return false;
  if ((ks.fixed != 0) + (ks.waves != 0) + (ks.cluster != 0) > 1) return false;
  for (const SkinnyShape& s : skinny_family(family).shapes()) {
    if (s.rows == rows && s.width == width && s.wc == wc && s.boxes == boxes &&
        s.stages == stages && s.grid == grid && s.cvt == cvt)
      return s.takes(ks);
  }
  return false;
}

std::optional<SkinnyConfig> SkinnyConfig::parse(const std::string& s) {
  static const std::regex re(
      "^skinny_(gemv|mmap|mmt|mma|wgt|wov|wo)_([a-z0-9]+)_(r|bm)([0-9]{1,3})_(t|wk)([0-9]{1,3})_ks(auto|w["
      "0-9]|c[0-9]|"
      "[0-9]{1,2})(_b([0-9]{1,2})s([0-9]))?(_pair)?(_bal)?(_wc)?(_cvt)?$");
  std::smatch m;
  if (!std::regex_match(s, m, re)) return std::nullopt;
  SkinnyConfig c;
  c.family = m[1] == "gemv"   ? SkinnyFamily::kGemv
             : m[1] == "mma"  ? SkinnyFamily::kMma
             : m[1] == "mmap" ? SkinnyFamily::kMmaPipe
             : m[1] == "mmt"  ? SkinnyFamily::kMmaTma
             : m[1] == "wo"   ? SkinnyFamily::kWeightOnly
             : m[1] == "wov"  ? SkinnyFamily::kWeightOnlyGemv
                              : SkinnyFamily::kWgmma;
  const auto t = parse_data_type(m[2].str());
  if (!t) return std::nullopt;
  c.dtype = *t;
  c.rows = std::stoi(m[4].str());
  c.width = std::stoi(m[6].str());
  const std::string split = m[7].str();
  if (split[0] == 'w')
    c.ks = KSplit::balanced(std::stoi(split.substr(1)));
  else if (split[0] == 'c')
    c.ks = KSplit::over_cluster(std::stoi(split.substr(1)));
  else if (split != "auto")
    c.ks = KSplit::splits(std::stoi(split));
  c.boxes = m[8].matched ? std::stoi(m[9].str()) : 0;
  c.stages = m[8].matched ? std::stoi(m[10].str()) : 0;
  if (m[11].matched && m[12].matched) return std::nullopt;  // one grid per configuration
  c.grid = m[11].matched   ? SkinnyGrid::kPair
           : m[12].matched ? SkinnyGrid::kBal
                           : SkinnyGrid::kTiles;
  c.wc = m[13].matched;
  c.cvt = m[14].matched;
  // Canonical spelling only (family letters, no leading zeros, no aliases such as "BFloat16").
  if (!c.valid() || c.name() != s) return std::nullopt;
  return c;
}

bool SkinnyConfig::operator==(const SkinnyConfig& o) const {
  return family == o.family && dtype == o.dtype && rows == o.rows && width == o.width &&
         ks == o.ks && wc == o.wc && boxes == o.boxes && stages == o.stages && grid == o.grid &&
         cvt == o.cvt;
}

std::vector<SkinnyConfig> skinny_all_configs() {
  std::vector<KSplit> splits = {KSplit::automatic()};
  for (int n = 1; n <= kSkinnyMaxSplits; ++n) splits.push_back(KSplit::splits(n));
  for (int w = 1; w <= kSkinnyMaxWaves; ++w) splits.push_back(KSplit::balanced(w));
  for (int c : {2, 4}) splits.push_back(KSplit::over_cluster(c));
  std::vector<SkinnyConfig> out;
  for (const SkinnyFamilyBridge* f : skinny_families())
    for (DataType t : {DataType::kBF16, DataType::kF16, DataType::kF8E4M3})
      for (const SkinnyShape& s : f->shapes())
        for (const KSplit& ks : splits)
          if (s.takes(ks) && s.config(f->family(), t, ks).valid()) out.push_back(s.config(f->family(), t, ks));
  return out;
}

std::vector<SkinnyConfig> skinny_candidate_configs(const GemmDesc& d) {
  std::vector<SkinnyConfig> out;
  // The weight-only problem is the wo family's alone, and that family runs nothing else.
  for (const SkinnyFamilyBridge* f : skinny_families())
    if (f->weight_only() == is_weight_only(d)) f->candidates(d, &out);
  return out;
}

}  // namespace tunable
