// Launch limits of the RMSNorm kernels that host code (candidate enumeration, can_implement)
// must agree with. Plain C++: included by the kernels and by host-only sources alike.
#pragma once

namespace tunable::kernels {

/// Vectors per thread the register kernel is instantiated for.
inline constexpr int kRmsNormItems[] = {1, 2, 4, 8};

/// Most threads per block of the register kernel when each thread caches `bytes_per_thread` bytes
/// of the row (and as many of the weight): its __launch_bounds__, so the register budget holds.
constexpr int rms_norm_max_threads(int bytes_per_thread) {
  return bytes_per_thread <= 32 ? 1024 : 512;
}

/// Most threads per block of the streaming kernel at `items` vectors per thread (its
/// __launch_bounds__: two rows of x and residual and the weight live in registers).
constexpr int rms_norm_stream_max_threads(int items) { return items <= 2 ? 1024 : 512; }

/// Rows each block of the streaming kernel walks at most (its tuning candidates).
inline constexpr int kRmsNormStreamRows[] = {2, 4};

/// Threads per block of the activation kernel (its __launch_bounds__).
inline constexpr int kActMaxThreads = 1024;

}  // namespace tunable::kernels
