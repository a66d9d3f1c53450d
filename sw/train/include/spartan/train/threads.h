// Thread control for the training engine: OpenMP (im2col, col2im, element-wise loops) and OpenBLAS
// (dense GEMMs; Debian's pthread build) use the same count. The two pools take turns, never nest.
// On a loaded machine idle OpenMP threads spin for a while after each loop; set
// OMP_WAIT_POLICY=passive in the environment (read by libgomp at start-up) to stop that.
#pragma once

namespace spartan::train {

/// Sets the OpenMP and OpenBLAS thread counts (n >= 1). Throws spartan::InputError for n < 1.
void set_num_threads(int n);
/// Current OpenMP thread count.
int num_threads();

}  // namespace spartan::train
