// Engine factory by name and the threshold calibration (sw/gemm/README.md, "Threshold calibration").
#include <algorithm>
#include <chrono>
#include <random>

#include "spartan/common/error.h"
#include "spartan/gemm/tile_sparse.h"
#ifdef SPARTAN_HAVE_CUDA
#include "spartan/gemm/cuda.h"
#endif

namespace spartan::gemm {

std::vector<std::string> engine_names() {
  std::vector<std::string> n = {"dense", "tile-sparse"};
#ifdef SPARTAN_HAVE_CUDA
  n.push_back("cuda-dense");
  n.push_back("cuda-tile-sparse");
#endif
  return n;
}

std::unique_ptr<GemmEngine> make_engine(const std::string& name, const TileSparseOptions& opt) {
  if (name == "dense") return make_dense_engine();
  if (name == "tile-sparse") return make_tile_sparse_engine(opt);
#ifdef SPARTAN_HAVE_CUDA
  if (name == "cuda-dense") return make_cuda_dense_engine();
  if (name == "cuda-tile-sparse") return make_cuda_tile_sparse_engine(opt);
#endif
  std::string known;
  for (const auto& n : engine_names()) known += (known.empty() ? "" : ", ") + n;
  throw InputError("gemm: unknown engine '" + name + "' (known: " + known + ")");
}

const TileSparseStats* last_tile_stats(const GemmEngine& e) {
  if (auto* t = dynamic_cast<const TileSparseEngine*>(&e)) return &t->last_stats();
#ifdef SPARTAN_HAVE_CUDA
  if (const TileSparseStats* s = cuda_last_tile_stats(e)) return s;
#endif
  return nullptr;
}

Calibration calibrate_threshold(const TileSparseOptions& base, int M, int N, int K, unsigned seed, int repeats) {
  if (M <= 0 || N <= 0 || K <= 0 || repeats <= 0) throw InputError("gemm calibrate: sizes and repeats must be > 0");
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::uniform_real_distribution<double> p(0, 1);
  std::vector<float> A(std::size_t(M) * K), B(std::size_t(K) * N), C(std::size_t(M) * N);
  for (auto& x : A) x = u(rng);
  Calibration cal;
  TileSparseOptions sparse_opt = base, dense_opt = base;
  sparse_opt.threshold = 2.0;  // every non-zero tile sparse
  sparse_opt.dense_if_not_smaller = false;
  dense_opt.threshold = 0.0;   // every tile DENSE
  TileSparseEngine se(sparse_opt), de(dense_opt);
  GemmCall c;
  c.M = M, c.N = N, c.K = K, c.A = A.data(), c.lda = K, c.B = B.data(), c.ldb = N, c.C = C.data(), c.ldc = N;
  c.sparse = SparseOperand::B;
  for (double d : {0.01, 0.02, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0}) {
    for (auto& x : B) x = p(rng) < d ? u(rng) + 2.0f : 0.0f;
    const format::TiledMatrix ts = se.compact_operand(c), td = de.compact_operand(c);
    // Interleaved (sparse, dense, sparse, ...) so that both paths see the same machine load; minimum of
    // each after one warm-up call.
    double bs = 1e30, bd = 1e30;
    for (int i = 0; i < repeats + 1; ++i) {
      se.run_compacted(c, ts, se.compact_orientation(c));
      de.run_compacted(c, td, de.compact_orientation(c));
      if (i == 0) continue;
      bs = std::min(bs, se.last_stats().compute_s);
      bd = std::min(bd, de.last_stats().compute_s);
    }
    cal.density.push_back(d);
    cal.sparse_s.push_back(bs);
    cal.dense_s.push_back(bd);
  }
  // Crossover: the smallest measured density from which on the dense path is never slower.
  cal.threshold = 1.0;
  for (std::size_t i = cal.density.size(); i-- > 0;) {
    if (cal.dense_s[i] > cal.sparse_s[i]) break;
    cal.threshold = cal.density[i];
  }
  return cal;
}

}  // namespace spartan::gemm
