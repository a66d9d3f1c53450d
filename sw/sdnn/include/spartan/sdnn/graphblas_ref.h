// The Graph Challenge inference written with SuiteSparse:GraphBLAS (Davis, ACM TOMS 2019), used as an
// independent oracle in tests and as the baseline in bench-sdnn. Same steps as the challenge's reference:
// mxm (PLUS_TIMES, FP32), bias added to the stored entries, select > 0, min with ymax.
#pragma once
#include <vector>

#include "spartan/sdnn/sparse.h"

namespace spartan::sdnn::graphblas {

/// Opaque GraphBLAS problem: the weights and features converted once, so that timing covers inference only.
class Problem {
 public:
  Problem(const Csr& y0, const std::vector<Csr>& weights);
  ~Problem();
  Problem(const Problem&) = delete;
  Problem& operator=(const Problem&) = delete;
  /// Runs all layers; returns the final activation matrix in CSR (sorted). Throws spartan::Error on a
  /// GraphBLAS failure.
  Csr run(float bias, float ymax = 32.0f);

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace spartan::sdnn::graphblas
