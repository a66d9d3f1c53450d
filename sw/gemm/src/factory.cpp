// Engine factory by name and the threshold calibration (sw/gemm/README.md, "Threshold calibration").
#include <algorithm>
#include <array>
#include <chrono>
#include <random>

#include "spartan/common/aligned.h"
#include "spartan/common/error.h"
#include "spartan/gemm/simt.h"
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
  if (const TileSparseStats* s = simt_last_tile_stats(e)) return s;
#ifdef SPARTAN_HAVE_CUDA
  if (const TileSparseStats* s = cuda_last_tile_stats(e)) return s;
#endif
  return nullptr;
}

double calibration_crossover(const std::vector<double>& density, const std::vector<double>& sparse_s,
                             const std::vector<double>& dense_s) {
  if (sparse_s.size() != density.size() || dense_s.size() != density.size())
    throw InputError("gemm calibrate: density, sparse and dense times differ in length");
  if (density.empty()) throw InputError("gemm calibrate: no densities");
  double t = 1.0;
  for (std::size_t i = density.size(); i-- > 0;) {
    if (dense_s[i] > sparse_s[i]) break;
    t = density[i];
  }
  return t;
}

Calibration calibrate_threshold(const TileSparseOptions& base, int hw, int cout, int ckk, unsigned seed,
                                int repeats) {
  if (hw <= 0 || cout <= 0 || ckk <= 0 || repeats <= 0)
    throw InputError("gemm calibrate: layer sizes and repeats must be > 0");
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::uniform_real_distribution<double> p(0, 1);
  // The three training GEMMs of the layer as spartan-train issues them (sw/gemm/bench/shapes.h, layout Train):
  // stored sparse operands col [ckk x hw] and dY^T [hw x cout], dense W [cout x ckk]; outputs per pass.
  // 64-byte aligned as in spartan-train (spartan/common/aligned.h): a one-panel dense operand (bwd-weight's
  // dY^T, cout <= 128) is read in place only then, else copied in every call.
  AlignedVector<float> col(std::size_t(ckk) * hw), dyt(std::size_t(hw) * cout), w(std::size_t(cout) * ckk);
  AlignedVector<float> y(std::size_t(hw) * cout), dcol(std::size_t(hw) * ckk), dw(std::size_t(ckk) * cout);
  for (auto& x : w) x = u(rng);
  std::array<GemmCall, 3> calls;
  GemmCall& fwd = calls[0];  // Y^T[hw x cout] = col^T * W^T
  fwd.op_a = Op::T, fwd.op_b = Op::T, fwd.M = hw, fwd.N = cout, fwd.K = ckk;
  fwd.A = col.data(), fwd.lda = hw, fwd.B = w.data(), fwd.ldb = ckk, fwd.C = y.data(), fwd.ldc = cout;
  GemmCall& bwd_data = calls[1];  // dcol^T[hw x ckk] = dY^T * W
  bwd_data.M = hw, bwd_data.N = ckk, bwd_data.K = cout;
  bwd_data.A = dyt.data(), bwd_data.lda = cout, bwd_data.B = w.data(), bwd_data.ldb = ckk;
  bwd_data.C = dcol.data(), bwd_data.ldc = ckk;
  GemmCall& bwd_weight = calls[2];  // dW^T[ckk x cout] = col * dY^T (dY^T: the dense operand here)
  bwd_weight.M = ckk, bwd_weight.N = cout, bwd_weight.K = hw;
  bwd_weight.A = col.data(), bwd_weight.lda = hw, bwd_weight.B = dyt.data(), bwd_weight.ldb = cout;
  bwd_weight.C = dw.data(), bwd_weight.ldc = cout;
  for (auto& c : calls) c.sparse = SparseOperand::A;

  Calibration cal;
  TileSparseOptions sparse_opt = base, dense_opt = base;
  sparse_opt.threshold = 2.0;  // every non-zero tile sparse
  sparse_opt.dense_if_not_smaller = false;
  sparse_opt.whole_call_guard = false;
  dense_opt.threshold = 0.0;  // every tile DENSE: one sgemm of the whole call
  TileSparseEngine se(sparse_opt), de(dense_opt);
  for (double d : {0.01, 0.02, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.8, 1.0}) {
    // col for fwd and bwd-weight, dY^T for bwd-data: both at density d (non-zeros away from 0).
    for (auto& x : col) x = p(rng) < d ? u(rng) + 2.0f : 0.0f;
    for (auto& x : dyt) x = p(rng) < d ? u(rng) + 2.0f : 0.0f;
    double sum_s = 0, sum_d = 0;
    for (std::size_t k = 0; k < calls.size(); ++k) {
      const GemmCall& c = calls[k];
      const format::TiledMatrix ts = se.compact_operand(c), td = de.compact_operand(c);
      const Orientation os = se.compact_orientation(c), od = de.compact_orientation(c);
      // Interleaved (sparse, dense, sparse, ...) so that both paths see the same machine load; minimum of
      // each after one warm-up call.
      double bs = 1e30, bd = 1e30;
      for (int i = 0; i < repeats + 1; ++i) {
        se.run_compacted(c, ts, os);
        de.run_compacted(c, td, od);
        if (i == 0) continue;
        bs = std::min(bs, se.last_stats().compute_s);
        bd = std::min(bd, de.last_stats().compute_s);
      }
      cal.pass_sparse_s[k].push_back(bs);
      cal.pass_dense_s[k].push_back(bd);
      sum_s += bs, sum_d += bd;
    }
    cal.density.push_back(d);
    cal.sparse_s.push_back(sum_s);
    cal.dense_s.push_back(sum_d);
  }
  for (std::size_t k = 0; k < 3; ++k)
    cal.pass_threshold[k] = calibration_crossover(cal.density, cal.pass_sparse_s[k], cal.pass_dense_s[k]);
  cal.threshold = calibration_crossover(cal.density, cal.sparse_s, cal.dense_s);
  return cal;
}

}  // namespace spartan::gemm
