#include "spartan/train/gemm_runner.h"

#include <chrono>

#include "spartan/gemm/tile_sparse.h"
#include "spartan/train/tensor.h"

namespace spartan::train {

double zero_fraction(const float* p, std::size_t n) {
  if (n == 0) return 0.0;
  std::size_t z = 0;
#pragma omp parallel for reduction(+ : z) schedule(static)
  for (std::ptrdiff_t i = 0; i < static_cast<std::ptrdiff_t>(n); ++i) z += p[i] == 0.0f;
  return static_cast<double>(z) / static_cast<double>(n);
}

const char* pass_name(GemmPass p) {
  switch (p) {
    case GemmPass::Forward: return "fwd";
    case GemmPass::BackwardData: return "bwd_data";
    case GemmPass::BackwardWeight: return "bwd_weight";
  }
  return "?";
}

GemmRunner::GemmRunner(gemm::GemmEngine* engine, gemm::GemmEngine* dense) : engine_(engine), dense_(dense) {}

namespace {
double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}
double operand_zero_fraction(const gemm::GemmCall& c) {
  if (c.sparse == gemm::SparseOperand::A) {
    const int rows = c.op_a == gemm::Op::N ? c.M : c.K, cols = c.op_a == gemm::Op::N ? c.K : c.M;
    if (c.lda == cols) return zero_fraction(c.A, std::size_t(rows) * cols);
  } else if (c.sparse == gemm::SparseOperand::B) {
    const int rows = c.op_b == gemm::Op::N ? c.K : c.N, cols = c.op_b == gemm::Op::N ? c.N : c.K;
    if (c.ldb == cols) return zero_fraction(c.B, std::size_t(rows) * cols);
  }
  return 0.0;
}
}  // namespace

void GemmRunner::run(int layer, GemmPass pass, const gemm::GemmCall& call) {
  if (!timing_) {
    engine_->run(call);
    return;
  }
  GemmTiming t;
  t.layer = layer;
  t.pass = pass;
  t.M = call.M;
  t.N = call.N;
  t.K = call.K;
  t.operand_sparsity = operand_zero_fraction(call);
  if (dense_ && dense_ != engine_) {
    // Dense reference first, into scratch (beta = 0: C's old contents are not needed).
    gemm::GemmCall ref = call;
    scratch_.assign(std::size_t(call.M) * call.ldc, 0.0f);
    ref.C = scratch_.data();
    if (ref.beta != 0.0f) ref.beta = 0.0f;
    const auto t0 = std::chrono::steady_clock::now();
    dense_->run(ref);
    t.dense_ms = ms_since(t0);
  }
  const auto t0 = std::chrono::steady_clock::now();
  engine_->run(call);
  t.engine_ms = ms_since(t0);
  if (const gemm::TileSparseStats* st = gemm::last_tile_stats(*engine_)) {
    t.tile_sparse = true;
    t.tile_kernel_ms = st->compute_s * 1e3;
    t.tile_compact_ms = st->compact_s * 1e3;
  }
  if (!dense_ || dense_ == engine_) t.dense_ms = t.engine_ms;
  timings_.push_back(t);
}

std::vector<GemmTiming> GemmRunner::take_timings() {
  std::vector<GemmTiming> out;
  out.swap(timings_);
  return out;
}

}  // namespace spartan::train
