// Sparse DNN inference with the Graph Challenge layer rule (graphchallenge.mit.edu, "Sparse Deep Neural
// Network Graph Challenge", Kepner et al., IEEE HPEC 2019):
//   Y_{k+1} = min(max(Y_k W_k + b_k, 0), ymax),  ymax = 32,
// the bias added to the structural non-zeros of Y_k W_k only; categories = rows of the final Y with any
// non-zero. Y is images x neurons, W_k is neurons x neurons (row = input neuron, column = output neuron).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "spartan/sdnn/sparse.h"

namespace spartan::sdnn {

/// Loads layers 1..layers from `dir` (see find_layer_file). A TSV layer (no header) is N x N with N the
/// largest index of any layer (or a MatrixMarket layer's stated size). Throws IoError/FormatError; InputError
/// if a layer is not square or the layers disagree in size.
std::vector<Csr> load_weights(const std::string& dir, int layers);

/// Reads the input features (images x neurons). `neurons` > 0 fixes the column count for TSV input.
/// Throws InputError if the file has a column count other than `neurons` (when given).
Csr load_features(const std::string& path, std::int64_t neurons);

/// One layer: returns min(max(Y W + bias, 0), ymax) with the bias on the structural non-zeros of Y W and
/// entries <= 0 dropped. Row-parallel (OpenMP) Gustavson SpMM: every non-zero y_ij scales row j of W into a
/// dense per-thread accumulator, so the work is sum over non-zeros of Y of nnz(W row), exploiting the
/// sparsity of both operands. Requires y.cols == w.rows (InputError otherwise).
Csr layer_forward(const Csr& y, const Csr& w, float bias, float ymax = 32.0f);

/// Runs all layers. `bias` is the same for every layer (Graph Challenge). Returns the final Y.
Csr infer(const Csr& y0, const std::vector<Csr>& weights, float bias, float ymax = 32.0f);

/// 0-based rows of y with at least one stored non-zero (the Graph Challenge "categories").
std::vector<std::int64_t> categories(const Csr& y);

/// Largest |a_ij - b_ij| over every entry stored in either matrix (an entry stored in one only counts as its
/// |value|), so that two results with different structures still get a meaningful difference. Duplicate
/// entries of one row are summed, as a CSR product would. Throws InputError if the shapes differ.
double max_abs_difference(const Csr& a, const Csr& b);

/// Total edges (sum of nnz over the layers): throughput is images * edges / seconds.
std::int64_t total_edges(const std::vector<Csr>& weights);

/// images * edges / secs, the Graph Challenge throughput; 0 when no image ran (or no time was measured), so
/// that an empty features file prints 0 (not NaN) in the single-process and the distributed run alike.
double throughput_image_edges_per_s(std::int64_t images, std::int64_t edges, double secs);

}  // namespace spartan::sdnn
