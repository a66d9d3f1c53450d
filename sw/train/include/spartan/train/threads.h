// Thread control for the training engine: OpenMP (im2col, col2im, element-wise loops) and OpenBLAS
// (dense GEMMs; Debian's pthread build) use the same count. The two pools take turns, never nest.
// On a loaded machine idle OpenMP threads spin for a while after each loop; set
// OMP_WAIT_POLICY=passive in the environment (read by libgomp at start-up) to stop that.
#pragma once

namespace spartan::train {

/// Sets the OpenMP and OpenBLAS thread counts (1 <= n <= spartan::kMaxThreads = 1024). Throws
/// spartan::InputError otherwise.
void set_num_threads(int n);
/// Current OpenMP thread count.
int num_threads();

}  // namespace spartan::train
