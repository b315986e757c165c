// Device helpers of the planted-candidate tests (tests/gpu/planted.hpp): spoiling a right answer
// by a known amount, and holding the GPU for a while. Launchers return cudaError_t.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "tunable/types.hpp"

namespace tunable::test {

/// How a planted candidate spoils the right answer it has just computed. Every spoiled value is
/// finite: the numerics check must catch a candidate that is wrong by a little, not only NaN.
enum class Spoil {
  kOneElement,  ///< one element moved away from zero by half the mean |value| of 64 samples of the
                ///< output (fp8 e4m3: six steps): far past any tolerance, one element only
  kScaleAll,    ///< every element scaled by (1 + rel) (fp8 e4m3: two steps away from zero, where one
                ///< is allowed): just past the bound, everywhere
  kOneUlp,      ///< one element's encoding one step away from zero: fails an exact check only
};

const char* to_string(Spoil s);

/// Spoils `batch` column-major (rows x cols, leading dimension ld) matrices `stride` elements apart,
/// of type t (fp64, fp32, fp16, bf16 or fp8 e4m3), on `stream`. The single element of kOneElement
/// and kOneUlp is the middle row of the last column of the last matrix.
cudaError_t spoil_matrix(void* p, DataType t, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                         std::int64_t batch, std::int64_t stride, Spoil how, double rel, cudaStream_t stream);

/// A kernel that holds the GPU for `us` microseconds (it spins on the global timer).
cudaError_t spin_us(double us, cudaStream_t stream);

}  // namespace tunable::test
