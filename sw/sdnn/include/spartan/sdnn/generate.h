// RadiX-Net-style sparse network generator (Kepner & Robinett, "RadiX-Net: Structured Sparse Matrices for
// Deep Neural Networks", IEEE IPDPSW 2019; the Graph Challenge networks are built this way).
//
// N = N' x D neurons: neuron (u, v), u in [0, N') the butterfly index, v in [0, D) the position in a dense
// D x D block. With the mixed radix system (n_1, ..., n_m), prod n_i = N', layer l uses digit p = l mod m:
// (u, v) -> (u', v') for every u' that differs from u at most in digit p (stride prod_{i<p} n_i) and every v'.
// So layer l is a butterfly layer Kronecker'd with ones(D x D): nnz per row and column = n_p x D (32 in the
// challenge: e.g. radix 32 with D = 1 for N = 1024). Every `permute_every` layers a fresh seeded column
// permutation scrambles the topology (row and column counts are kept).
#pragma once
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "spartan/sdnn/sparse.h"

namespace spartan::sdnn {

struct RadixNetSpec {
  std::int64_t neurons = 1024;
  int layers = 120;
  std::vector<int> radices;   ///< empty: choose a uniform radix r and block D with r x D = nnz_per_row
  int nnz_per_row = 32;       ///< used when radices is empty
  int permute_every = 4;      ///< 0: never permute
  std::uint64_t seed = 1;
  /// "challenge": every weight 1/16 (the Graph Challenge value for its networks);
  /// "he": N(0, 2 / fan_in) from a counter-based generator (training);
  /// "identity": 1 on the diagonal where the pattern has it, plus 0.1 x the He deviate (identity initialisation,
  /// Le, Jaitly & Hinton 2015: the body starts as a pass-through so training starts from the linear model).
  std::string init = "challenge";
};

/// Chooses (radices, D) for `neurons` with nnz_per_row = r x D, N / D a power of r, preferring the largest r.
/// Throws InputError if none exists (e.g. N not a power of two).
void choose_radix(std::int64_t neurons, int nnz_per_row, std::vector<int>& radices, std::int64_t& block);

/// Generates the layers one at a time (neurons x neurons each), so that a caller that writes each layer out
/// holds one layer in memory (a 65536-neuron layer: 2^21 non-zeros, ~17 MB as CSR, ~50 MB while built from
/// triples), not the whole network. The layers are those of generate_radixnet, in order.
class RadixNetGenerator {
 public:
  /// Validates the spec (allocates nothing of size N). Throws InputError on an impossible spec (unknown init,
  /// radices whose product does not divide N, neurons outside [1, 2^31), layers < 1, permute_every < 0).
  explicit RadixNetGenerator(const RadixNetSpec& spec);
  /// Layer layer() + 1 (1-based), then advances. Throws std::logic_error after the last layer; std::bad_alloc
  /// if the layer does not fit in memory (its size: layer_nnz(layer()) non-zeros).
  Csr next();
  /// Number of layers generated so far (0-based index of the next one).
  int layer() const { return layer_; }
  /// True once every layer of the spec has been generated (next() would throw).
  bool done() const { return layer_ >= spec_.layers; }
  /// Non-zeros of 0-based layer l (N x n_p x D).
  std::int64_t layer_nnz(int l) const;

 private:
  RadixNetSpec spec_;
  std::vector<int> radices_;
  std::vector<std::int64_t> stride_;
  std::int64_t block_ = 1;
  std::mt19937_64 rng_;
  std::vector<std::int32_t> perm_;
  int layer_ = 0;
};

/// All layers at once (RadixNetGenerator run to the end). Throws as RadixNetGenerator.
std::vector<Csr> generate_radixnet(const RadixNetSpec& spec);

/// Counter-based normal deviate (splitmix64 + Box-Muller): the same value for (seed, a, b) everywhere,
/// independent of the partition or thread count.
float hash_normal(std::uint64_t seed, std::uint64_t a, std::uint64_t b);

}  // namespace spartan::sdnn
