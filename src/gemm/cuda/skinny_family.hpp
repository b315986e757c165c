// One skinny kernel family as the provider sees it: the shapes it is built for (what the name
// grammar accepts), its candidate table (what the tuner times), its family-specific limits and its
// launch. Each family's bridge file (skinny_gemv.cu, skinny_mma.cu, skinny_mmap.cu, skinny_mmt.cu,
// skinny_wgt.cu, skinny_wo.cu, skinny_wov.cu) instantiates its kernels and defines one SkinnyFamilyBridge, so adding a variant
// touches that family's tables and nothing else.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gemm/cuda/skinny_config.hpp"
#include "kernels/gemv/skinny_device.hpp"

namespace tunable {

namespace kernels {
enum class SkinnyIn : int;
struct SkinnyLaunch;
}  // namespace kernels
class SkinnyState;

/// One shape a family is built for: a configuration less its dtype and K split, and which K splits
/// it takes (every fixed count, auto and wave-balanced, unless stated). Built by name:
/// SkinnyShape::of(16, 8).ring(8, 3).on(SkinnyGrid::kPair).
struct SkinnyShape {
  int rows = 0, width = 0;    ///< as SkinnyConfig::rows, width
  bool wc = false;            ///< warp-contiguous K order
  int boxes = 0, stages = 0;  ///< ring shape (the TMA-fed families)
  SkinnyGrid grid = SkinnyGrid::kTiles;
  bool cluster_splits = false;  ///< also takes ks c2 and c4 (K split over a thread-block cluster)
  bool unsplit_only = false;    ///< takes ks1 only (the balanced grid)
  bool cvt = false;             ///< e4m3 weight by the hardware's cvt (wov)

  /// `rows` x `width` as SkinnyConfig names them (gemv: rows per warp x threads; the MMA families:
  /// rows per block x warps along K).
  static SkinnyShape of(int rows, int width) {
    SkinnyShape s;
    s.rows = rows;
    s.width = width;
    return s;
  }
  SkinnyShape warp_contiguous(bool on = true) const {
    SkinnyShape s = *this;
    s.wc = on;
    return s;
  }
  SkinnyShape ring(int boxes_per_stage, int ring_stages) const {
    SkinnyShape s = *this;
    s.boxes = boxes_per_stage;
    s.stages = ring_stages;
    return s;
  }
  SkinnyShape on(SkinnyGrid g) const {
    SkinnyShape s = *this;
    s.grid = g;
    return s;
  }
  SkinnyShape converted_by_cvt(bool on = true) const {
    SkinnyShape s = *this;
    s.cvt = on;
    return s;
  }
  SkinnyShape with_cluster_splits() const {
    SkinnyShape s = *this;
    s.cluster_splits = true;
    return s;
  }
  SkinnyShape unsplit() const {
    SkinnyShape s = *this;
    s.unsplit_only = true;
    return s;
  }

  bool takes(const KSplit& ks) const {
    if (unsplit_only) return ks == KSplit::splits(1);
    return ks.cluster == 0 || cluster_splits;
  }
  /// The configuration of this shape for `dtype` and `ks`.
  SkinnyConfig config(SkinnyFamily family, DataType dtype, KSplit ks) const {
    SkinnyConfig c;
    c.family = family;
    c.dtype = dtype;
    c.rows = rows;
    c.width = width;
    c.ks = ks;
    c.wc = wc;
    c.boxes = boxes;
    c.stages = stages;
    c.grid = grid;
    c.cvt = cvt;
    return c;
  }
};

class SkinnyFamilyBridge {
 public:
  virtual SkinnyFamily family() const = 0;
  /// Largest desc.n (tokens) the family runs.
  virtual std::int64_t max_tokens() const = 0;
  /// Whether the family runs the weight-only problem (e4m3 A with row scales, 16-bit B; see
  /// is_weight_only) and nothing else; the other families never run it.
  virtual bool weight_only() const { return false; }
  /// Every shape the family is built for: SkinnyConfig::valid and parse accept these and nothing
  /// else.
  virtual const std::vector<SkinnyShape>& shapes() const = 0;
  /// K elements of one split granule of `c` (a split is a whole number of them).
  virtual std::int64_t granule(const SkinnyConfig& c) const = 0;
  /// Appends the family's candidates worth timing for `d` (its tuning table; can_implement filters
  /// them later).
  virtual void candidates(const GemmDesc& d, std::vector<SkinnyConfig>* out) const = 0;
  /// Family-specific refusals of `d` by `c` (named `name`) beyond the common ones.
  virtual Status check(const SkinnyConfig& /*c*/, const GemmDesc& /*d*/,
                       const std::string& /*name*/) const {
    return Status::ok();
  }
  /// Workspace bytes `c` needs on `d`, when the family sizes it itself rather than as split-K
  /// partials; nullopt: the split-K partials of the largest plan.
  virtual std::optional<std::size_t> workspace(const SkinnyConfig& /*c*/,
                                               const GemmDesc& /*d*/) const {
    return std::nullopt;
  }
  /// Launches `c` on `stream` for inputs `in`: `l` holds the problem and the split request the
  /// provider filled in (the family adds what only it uses), `dev` and `state` the context's device
  /// facts and caches.
  virtual Status launch(const SkinnyConfig& c, kernels::SkinnyIn in, kernels::SkinnyLaunch& l,
                        const kernels::SkinnyDevice& dev, SkinnyState& state,
                        cudaStream_t stream) const = 0;

 protected:
  ~SkinnyFamilyBridge() = default;
};

/// Whether `d` needs each token's whole row in one block: the RMS-normalized weight-only problem
/// (ScaleMode::kRowwiseRms), whose kernels sum the squares of the token values they load. Such a
/// problem runs unsplit: candidates that split K are refused, the others run with one split.
inline bool needs_whole_rows(const GemmDesc& d) { return d.scale_mode == ScaleMode::kRowwiseRms; }

/// Whether a configuration splits K (a fixed count above one, wave-balanced or over a cluster).
inline bool splits_k(const KSplit& ks) { return ks.fixed > 1 || ks.waves != 0 || ks.cluster != 0; }

/// Appends `c` to a weight-only family's candidates for `d`: as it is, or, where `d` needs whole
/// rows, in its one-split form, once, and not at all where it splits K.
inline void add_weight_only_candidate(const GemmDesc& d, SkinnyConfig c, std::vector<SkinnyConfig>* out) {
  if (needs_whole_rows(d)) {
    if (splits_k(c.ks)) return;
    c.ks = KSplit::splits(1);
    for (const SkinnyConfig& o : *out)
      if (o.name() == c.name()) return;
  }
  out->push_back(c);
}

/// The families' bridges (defined in their bridge files).
const SkinnyFamilyBridge& skinny_gemv_family();
const SkinnyFamilyBridge& skinny_mma_family();
const SkinnyFamilyBridge& skinny_mmap_family();
const SkinnyFamilyBridge& skinny_mmt_family();
const SkinnyFamilyBridge& skinny_wgt_family();
const SkinnyFamilyBridge& skinny_wo_family();
const SkinnyFamilyBridge& skinny_wov_family();

/// The bridge of `f`.
const SkinnyFamilyBridge& skinny_family(SkinnyFamily f);
/// Every family, in the order of SkinnyFamily.
const std::vector<const SkinnyFamilyBridge*>& skinny_families();

/// A launcher's status as the provider reports it: kNotSupported naming what `name` lacks on this
/// device, build or driver; the CUDA error otherwise.
Status skinny_launch_status(cudaError_t e, const std::string& name);

}  // namespace tunable
