// Distributed (MPI) sparse DNN forward/backward with row-wise partitioned weights (Demirci &
// Ferhatosmanoglu, ICS 2021). Rank r owns output neurons {c : part[k][c] == r} of every layer k, i.e. column c
// of W_k (its "row" in y = W x notation), the bias and the activation entries of those neurons.
// Forward expand: before layer k (k >= 2), the owner of y_{k-1}[j] sends its batch vector to every other
// rank that owns a reader of j; backward fold: every reader rank returns its partial sum of
// sum_c W_k(j, c) delta_k[c] to the owner of j. Both use the same precomputed send/receive lists (the fold
// reversed). The expand is an MPI_Ialltoallv, with the outputs whose inputs are all local computed while it is in
// flight; the fold is a blocking MPI_Alltoallv (its partial sums are computed before it starts).
// The engine is also used with a single rank and no MPI (size 1): then nothing is communicated.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "spartan/sdnn/partition.h"
#include "spartan/sdnn/sparse.h"

namespace spartan::sdnn {

/// One layer as seen by one rank. Activations are neuron-major: vector i holds the batch of neuron i.
struct LayerPlan {
  std::vector<std::int32_t> out;           ///< owned output neurons (global ids, sorted)
  std::vector<std::int64_t> row_ptr{0};    ///< local W_k^T rows (one per owned output)
  std::vector<std::int32_t> slot;          ///< input slot of each entry
  std::vector<float> values;               ///< W_k(j, c) of each entry (updated by training)
  std::vector<std::int32_t> slot_global;   ///< global input neuron of each slot (sorted)
  std::vector<std::int32_t> slot_src;      ///< k >= 1: index into the previous layer's `out` if local, else -1
  std::vector<std::int64_t> st_ptr{0};     ///< slot -> entries (transpose of the local rows) for backward
  std::vector<std::int32_t> st_row;        ///< local output row of each transposed entry
  std::vector<std::int64_t> st_pos;        ///< position in `values` of each transposed entry
  std::vector<std::int32_t> interior, boundary;  ///< local outputs whose inputs are all local / not
  std::vector<int> send_count, recv_count;       ///< expand, in neurons, per rank
  std::vector<std::int32_t> send_idx;      ///< by destination: index into the previous layer's `out`
  std::vector<std::int32_t> recv_slot;     ///< by source: slot index
};

/// Bytes each rank has sent so far, by phase.
struct CommCounters {
  std::uint64_t expand_bytes = 0, fold_bytes = 0, allreduce_bytes = 0, gather_bytes = 0;
  std::uint64_t forward_images = 0, backward_images = 0;  ///< batch sizes summed over calls
};

class DistEngine {
 public:
  /// Builds this rank's plan from the full network and partition (every rank holds both).
  /// With `use_mpi` false and size > 1 only the plan is usable (forward/backward throw). Throws InputError if the partition does not match the network or
  /// the number of parts differs from `size`.
  DistEngine(const std::vector<Csr>& w, const Partition& p, int rank, int size, bool use_mpi);

  int rank() const { return rank_; }
  int size() const { return size_; }
  int layers() const { return static_cast<int>(plan_.size()); }
  const std::vector<LayerPlan>& plan() const { return plan_; }
  std::vector<LayerPlan>& plan() { return plan_; }

  /// Forward over `batch` rows of `features` starting at `row0` (rows beyond the end are zero).
  /// bias[k][i] is the bias of local output i of layer k. Keeps every layer's input slots and outputs
  /// for backward() unless set_keep_activations(false). ymax: clip value (32 for the Graph Challenge).
  /// Throws InputError if a layer's exchange counts (entries x batch) do not fit MPI's int counts.
  void forward(const Csr& features, std::int64_t row0, int batch, const std::vector<std::vector<float>>& bias, float ymax);
  /// Output batch vectors of the last layer (local outputs x batch, neuron-major).
  const std::vector<float>& output() const { return y_.back(); }
  const std::vector<float>& layer_output(int k) const { return y_[k]; }
  int batch() const { return batch_; }
  /// Inference only (false): forward() frees each layer's input slots and the previous layer's outputs as it
  /// goes, so that memory is two layers' vectors instead of all of them; only the last layer's output (and
  /// gather_output() of it) remains. backward() then throws. Default true (training).
  void set_keep_activations(bool keep) { keep_ = keep; }

  /// Backward from delta_L (local outputs of the last layer x batch, d loss / d y_L). Applies the clipped-ReLU
  /// derivative itself. Writes dW (same layout as plan()[k].values) and db (per local output) per layer.
  void backward(const std::vector<float>& dy_last, float ymax, std::vector<std::vector<float>>& dw, std::vector<std::vector<float>>& db);

  /// Gathers layer `layer`'s outputs (-1: the last) to rank 0 as a rows x neurons CSR of the non-zeros
  /// (rows <= batch). Collective; other ranks get an empty matrix.
  Csr gather_output(std::int64_t rows, int layer = -1);

  /// Sum of a small float array over ranks (in place), counted in allreduce_bytes.
  void allreduce_sum(std::vector<float>& v);

  const CommCounters& counters() const { return counters_; }

  /// Test hook for the mutation test of `train --verify` (CTests sdnn_mpi_train_fault_drop_halo_np2, sdnn_mpi_train_fault_drop_fold_np2): with the
  /// environment variable SPARTAN_SDNN_TEST_FAULT set when the engine is built, the engine is deliberately
  /// wrong in a multi-rank run: `drop-halo` loses the first received vector of every layer's forward expand
  /// (its slot stays 0), `drop-fold` loses every 50th partial sum of the backward fold (2 %). Unset or empty:
  /// no fault. Any other value: InputError. An active fault prints a warning on rank 0 of a multi-rank run.
  enum class Fault { kNone, kDropHalo, kDropFold };
  Fault fault() const { return fault_; }

 private:
  void exchange(int k, bool fold, std::vector<float>& sendbuf, std::vector<float>& recvbuf);
  std::vector<LayerPlan> plan_;
  int rank_, size_;
  bool mpi_;
  int batch_ = 0;
  bool keep_ = true;
  Fault fault_ = Fault::kNone;
  std::int64_t neurons_ = 0;
  std::vector<std::vector<float>> x_;  // per layer: slots x batch
  std::vector<std::vector<float>> y_;  // per layer: local outputs x batch
  CommCounters counters_;
};

/// Collective over MPI_COMM_WORLD: concatenates every rank's (index, value) pairs, in rank order, into `idx` and
/// `vals` on rank 0; the other ranks' vectors end empty. Throws InputError on every rank if the total exceeds
/// MPI's int counts (2^31 - 1 values), std::logic_error if idx and vals differ in length.
void gather_to_root(std::vector<std::int64_t>& idx, std::vector<float>& vals);

/// `spartan-sdnn infer --partition FILE` body (MPI_Init/Finalize inside). Prints on rank 0 the categories,
/// throughput, predicted and measured expand volume; with verify it also runs the shared-memory inference on
/// rank 0 and compares. The images go through the network `images_per_pass` at a time (>= 1), so that a rank
/// holds two layers' vectors of that many images, not of the whole feature file. Returns 0, or 1 if measured
/// volume != predicted or verification fails.
int dist_infer_main(const std::string& weights, int layers, const std::string& features, float bias, const std::string& partition,
                    const std::string& cats_out, int images_per_pass = 1024, bool verify = true);

}  // namespace spartan::sdnn
