// SGD training of a sparse DNN on its fixed sparsity pattern (Demirci & Ferhatosmanoglu, ICS 2021):
// body = the Graph Challenge layer rule y_k = min(max(y_{k-1} W_k + b_k, 0), ymax) over a RadiX-Net pattern,
// head = dense softmax layer (classes x N) with cross-entropy loss. Forward SpMM per layer, backward with the
// transposed pattern; weight gradients only on the existing non-zeros; bias per layer or per neuron.
// Runs on one process or distributed over MPI ranks with DistEngine (dist.h).
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "spartan/sdnn/dist.h"
#include "spartan/sdnn/sparse.h"

namespace spartan::sdnn {

/// A labelled data set: features (images x N, binary) and labels in [0, classes).
struct LabelledSet {
  Csr features;
  std::vector<int> labels;
};

/// Reads Fashion-MNIST (Xiao et al. 2017; gzip IDX files `{prefix}-images-idx3-ubyte.gz` and
/// `{prefix}-labels-idx1-ubyte.gz`, prefix "train" or "t10k"), bilinearly resizes each 28x28 image to
/// sqrt(N) x sqrt(N) and binarises it (pixel/255 >= 0.5 -> 1). `limit` > 0 keeps the first `limit` images.
/// Throws InputError if N is not a perfect square, FormatError on a bad IDX header, IoError if missing.
LabelledSet load_fashion_mnist(const std::string& dir, const std::string& prefix, std::int64_t neurons, std::int64_t limit);

/// The two files load_fashion_mnist(dir, prefix, ...) reads: images, labels (nothing is opened).
std::array<std::string, 2> fashion_mnist_files(const std::string& dir, const std::string& prefix);

struct TrainConfig {
  int batch = 64;
  float lr = 0.05f;
  bool bias_per_neuron = true;  ///< false: one bias per layer (its gradient is summed over ranks)
  float bias_init = 0.0f;
  float ymax = 32.0f;
  int classes = 10;
  std::uint64_t seed = 1;       ///< head initialisation
};

struct EpochStats {
  double mean_loss = 0, train_acc = 0, test_acc = 0, seconds = 0;
  std::vector<double> batch_loss;
  /// Per batch, update_path() when its loss was computed (before its step): the scale of the rounding drift its
  /// loss may carry (`train --verify`).
  std::vector<double> batch_update_path;
};

class Trainer {
 public:
  /// `w` is the body (copied into the engine's local layout). Throws InputError as DistEngine does.
  Trainer(const std::vector<Csr>& w, const Partition& p, int rank, int size, bool use_mpi, const TrainConfig& cfg);

  /// Mean cross-entropy of rows [row0, row0+B) and, if `grad`, the gradients (kept internally);
  /// correct: number of correct argmax predictions. Collective over ranks.
  double loss(const LabelledSet& data, std::int64_t row0, int batch, bool grad, int* correct = nullptr);
  /// One SGD step with the gradients of the last loss(..., grad = true) call.
  void step();
  /// One epoch over `train` in order (batches of cfg.batch), then test accuracy on `test`.
  EpochStats epoch(const LabelledSet& train, const LabelledSet& test);
  /// Accuracy over a whole set (forward only).
  double accuracy(const LabelledSet& data);

  DistEngine& engine() { return eng_; }
  int classes() const { return cfg_.classes; }
  float ymax() const { return cfg_.ymax; }
  /// nnz of body layer k over all ranks.
  std::int64_t global_nnz(int k) const { return nnz_[static_cast<std::size_t>(k)]; }
  /// SGD steps taken so far.
  std::int64_t steps() const { return steps_; }
  /// Sum over the SGD steps so far of the largest |update| (lr x |gradient|) of any parameter this rank holds,
  /// in parameter units: the scale of the rounding differences a run with another summation order can
  /// accumulate (used by `train --verify`'s tolerance).
  double update_path() const { return update_path_; }
  /// Parameter access for the finite-difference check: layer k's local values, biases, head.
  std::vector<float>& body_values(int k) { return eng_.plan()[k].values; }
  std::vector<float>& body_bias(int k) { return bias_[k]; }
  std::vector<float>& head() { return head_; }
  const std::vector<std::vector<float>>& grad_w() const { return gw_; }
  const std::vector<std::vector<float>>& grad_b() const { return gb_; }
  const std::vector<float>& grad_head() const { return ghead_; }

 private:
  TrainConfig cfg_;
  DistEngine eng_;
  std::vector<std::vector<float>> bias_;   // per layer, per local output (all equal when per-layer)
  std::vector<float> head_, head_bias_;    // head_: classes x local outputs of the last layer
  std::vector<std::vector<float>> gw_, gb_;
  std::vector<float> ghead_, ghead_bias_;
  std::vector<std::int64_t> nnz_;
  std::int64_t steps_ = 0;
  double update_path_ = 0;
};

/// Softmax-regression baseline on the same inputs (dense classes x N weights, same SGD, batch and epochs).
/// Returns the test accuracy after `epochs`.
double train_linear(const LabelledSet& train, const LabelledSet& test, int epochs, int batch, float lr, int classes);

}  // namespace spartan::sdnn
