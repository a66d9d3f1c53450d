// Row-wise partitioning of a sparse DNN over P ranks and the multi-layer hypergraph model of its
// communication (Demirci & Ferhatosmanoglu, "Partitioning sparse deep neural networks for scalable training
// and inference", ICS 2021).
//
// Notation: the network computes Y_k = f(Y_{k-1} W_k), W_k is N x N with W_k(j, c) != 0 when input neuron j
// of layer k-1 feeds output neuron c of layer k. A rank that owns output neuron c of layer k owns column c of
// W_k (= row c of W_k^T, the paper's "row of W" in its y = W x notation) and the matching activation entries.
//
// Hypergraph model (one vertex per neuron per layer, layers 1..L):
//  - vertex (k, c): weight = nnz(column c of W_k) + kVectorWork. nnz is the multiply-add count per image;
//    kVectorWork = 1 is the per-image vector work of the neuron (bias, ReLU, clip; in training also the
//    derivative mask), in the same multiply-add units.
//  - net n(k-1, j) for k = 2..L: pins = {(k-1, j)} U {(k, c) : W_k(j, c) != 0}. In the forward expand the
//    owner of y_{k-1}[j] sends it to every other part holding a pin, so the volume (in activation entries per
//    image) of layer k's expand is sum_j (lambda(n) - 1) = connectivity-1; the backward fold returns one
//    partial sum per such (neuron, part) pair: the same volume.
//  - input features (layer 0) are not communicated: every rank reads the feature file and keeps the columns
//    its layer-1 neurons read, so layer 0 has no vertices and layer 1 no incoming nets.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "spartan/sdnn/sparse.h"

namespace spartan::sdnn {

/// Per-image vector work of one neuron, in multiply-add units (see above).
constexpr std::int64_t kVectorWork = 1;

/// part[k][c] in [0, parts): owner of output neuron c of layer k+1 (k = 0..layers-1).
struct Partition {
  int parts = 1;
  std::int64_t neurons = 0;
  std::string method;
  std::vector<std::vector<std::int32_t>> part;
  int layers() const { return static_cast<int>(part.size()); }
};

/// Vertex weights of layer k (0-based): nnz of each column of w[k] + kVectorWork.
std::vector<std::int64_t> vertex_weights(const Csr& wk);

/// Forward-expand volume of each layer in activation entries per image (element 0 is 0: inputs are not
/// communicated). Equals the connectivity-1 of the layer's nets. Throws InputError on a shape mismatch.
std::vector<std::int64_t> expand_volume(const std::vector<Csr>& w, const Partition& p);

/// Load imbalance of each layer: max part weight / average part weight - 1 (0 = perfect).
std::vector<double> layer_imbalance(const std::vector<Csr>& w, const Partition& p);

/// Text file: `# spartan-sdnn partition v1`, then `parts P neurons N layers L method M`, then one line per
/// layer with N part ids (`#` comment lines may follow the first line). Written atomically. read_partition throws
/// FormatError (line numbers) on bad files: a first line other than the magic line above, a method that is not
/// one of partitioner_names(), a malformed header, part ids out of [0, P) or not N per layer, extra content.
void write_partition(const std::string& path, const Partition& p);
Partition read_partition(const std::string& path);

/// One interface for every partitioner. Deterministic for a given seed.
class Partitioner {
 public:
  virtual ~Partitioner() = default;
  /// One-time start-up of the library behind the method (hypergraph: MPI_Init when the caller has not, and
  /// Zoltan_Initialize; the others: nothing). Idempotent; run() calls it too. Callers that time run() call it
  /// first, so that the time is partitioning only (the start-up is ~0.4 s for MPI + Zoltan on one process).
  virtual void initialize() {}
  /// Partitions every layer of the network into `parts` parts. Throws InputError if parts < 1 or > neurons.
  virtual Partition run(const std::vector<Csr>& w, int parts) = 0;
};

/// `block` (contiguous neuron ranges, the same for every layer), `random` (seeded, balanced counts per layer),
/// `hypergraph` (Zoltan PHG, see zoltan_partitioner.cpp), `graph` (METIS, see metis_partitioner.cpp).
/// `imbalance_tol` is the allowed per-layer imbalance (0.05 = 5%). Throws InputError for an unknown method.
std::unique_ptr<Partitioner> make_partitioner(const std::string& method, std::uint64_t seed, double imbalance_tol = 0.05);

/// Largest value of METIS's index type idx_t in this build (2^31 - 1 with Debian's IDXTYPEWIDTH 32).
std::int64_t metis_index_max();

/// Size check of the `graph` method's METIS graph, run before it is built: `vertices` = neurons x layers,
/// `adjacency_entries` = 2 x the non-zeros of layers 2..L (each edge stored at both ends), `max_layer_weight` =
/// the largest sum of vertex weights of one layer (METIS sums each constraint's weights in idx_t),
/// `weight_entries` = vertices x layers (the multi-constraint weight array, one weight per vertex and layer,
/// which METIS indexes as vertex x ncon + constraint in idx_t). Throws InputError naming the sizes and
/// suggesting the hypergraph method when one exceeds metis_index_max() (the arrays would wrap silently).
void check_metis_graph_size(std::int64_t vertices, std::int64_t adjacency_entries, std::int64_t max_layer_weight,
                            std::int64_t weight_entries);

/// Names accepted by make_partitioner in this build.
std::vector<std::string> partitioner_names();

}  // namespace spartan::sdnn
