#include "spartan/train/gemm_runner.h"

#include <algorithm>
#include <chrono>

#include "spartan/common/error.h"
#include "spartan/gemm/tile_sparse.h"
#include "spartan/train/threads.h"
#include "spartan/train/tensor.h"

namespace spartan::train {

double zero_fraction(const float* p, std::size_t n) {
  if (n == 0) return 0.0;
  std::size_t z = 0;
#pragma omp parallel for reduction(+ : z) schedule(static) if (parallel_worth(n))
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

bool is_cuda_engine(const std::string& engine_name) { return engine_name.rfind("cuda-", 0) == 0; }

std::string reference_engine_name(const std::string& engine_name) {
  return is_cuda_engine(engine_name) ? "cuda-dense" : "dense";
}

GemmRunner::GemmRunner(gemm::GemmEngine* engine, gemm::GemmEngine* dense) : engine_(engine), dense_(dense) {}

namespace {
double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}
double operand_zero_fraction(const gemm::GemmCall& c, Executor* ex) {
  auto frac = [&](const float* p, std::size_t n) {
    if (!ex) return zero_fraction(p, n);
    return n ? static_cast<double>(ex->count_zeros(p, n)) / static_cast<double>(n) : 0.0;
  };
  if (c.sparse == gemm::SparseOperand::A) {
    const int rows = c.op_a == gemm::Op::N ? c.M : c.K, cols = c.op_a == gemm::Op::N ? c.K : c.M;
    if (c.lda == cols) return frac(c.A, std::size_t(rows) * cols);
  } else if (c.sparse == gemm::SparseOperand::B) {
    const int rows = c.op_b == gemm::Op::N ? c.K : c.N, cols = c.op_b == gemm::Op::N ? c.N : c.K;
    if (c.ldb == cols) return frac(c.B, std::size_t(rows) * cols);
  }
  return 0.0;
}
}  // namespace

namespace {
double minimum(const std::vector<double>& v) { return v.empty() ? 0.0 : *std::min_element(v.begin(), v.end()); }
}  // namespace

void GemmRunner::run(int layer, GemmPass pass, const gemm::GemmCall& call) {
  if (!timing_) {
    engine_->run(call);
    return;
  }
  const bool separate_dense = dense_ && dense_ != engine_;
  // A CUDA engine is timed with CUDA events around its kernels (transfers excluded), a CPU engine with
  // steady_clock: the two times of one record must come from the same device and timer, or dense_ms /
  // tile_sparse_ms would compare a CPU with a GPU.
  const bool cuda = is_cuda_engine(engine_->name());
  if (separate_dense && is_cuda_engine(dense_->name()) != cuda)
    throw Error("gemm runner: engine '" + engine_->name() + "' (" + (cuda ? "CUDA events" : "steady_clock") +
                ") and dense reference '" + dense_->name() + "' (" + (cuda ? "steady_clock" : "CUDA events") +
                ") would be timed on different devices; use reference '" + reference_engine_name(engine_->name()) + "'",
                1);
  GemmTiming t;
  t.layer = layer;
  t.pass = pass;
  t.M = call.M;
  t.N = call.N;
  t.K = call.K;
  if (call.device_pointers != (exec_ && exec_->device_pointers()))
    throw Error("gemm runner: a timed call's pointers are not in the memory of the runner's executor (set_executor)");
  t.operand_sparsity = operand_zero_fraction(call, exec_);
  // Extra (timing-only) runs write into scratch with beta = 0; C's old contents are never needed here.
  gemm::GemmCall scratch_call = call;
  const std::size_t c_elems = std::size_t(call.M) * call.ldc;
  if (exec_) {
    if (!d_scratch_ || d_scratch_->bytes() < c_elems * sizeof(float) || d_scratch_->owner() != exec_)
      d_scratch_ = exec_->alloc(c_elems * sizeof(float));
    scratch_call.C = d_scratch_->as<float>();
  } else {
    scratch_.assign(c_elems, 0.0f);
    scratch_call.C = scratch_.data();
  }
  scratch_call.beta = 0.0f;
  // The dense reference and the engine run alternately (dense, engine, dense, engine, ...) so that both
  // see the same machine state, and each records the minimum of its runs: on a shared host the noise only
  // ever adds time (other processes, thread wake-ups), and a median of 3 still let 5x outliers through
  // when two runs of one engine were disturbed (review finding F1, docs/review/2026-12-01-numbers.md).
  t.device_timer = cuda;
  const bool tile = engine_->name().find("tile-sparse") != std::string::npos;
  // The measured time of a run of `e` that started at t0: its CUDA-event time for a CUDA engine.
  auto measured_ms = [&](const gemm::GemmEngine& e, std::chrono::steady_clock::time_point t0) {
    const double wall = ms_since(t0);
    if (!cuda) return wall;
    const gemm::TileSparseStats* st = gemm::last_tile_stats(e);
    if (!st) throw Error("gemm runner: CUDA engine '" + e.name() + "' reported no CUDA-event time", 1);
    return st->compute_s * 1e3;
  };
  std::vector<double> dms, ms, kernel, compact;
  for (int r = 0; r < repeats_; ++r) {
    if (separate_dense) {
      const auto t0 = std::chrono::steady_clock::now();
      dense_->run(scratch_call);
      dms.push_back(measured_ms(*dense_, t0));
    }
    const auto t0 = std::chrono::steady_clock::now();
    engine_->run(r + 1 == repeats_ ? call : scratch_call);  // the last run produces the result
    ms.push_back(measured_ms(*engine_, t0));
    if (const gemm::TileSparseStats* st = gemm::last_tile_stats(*engine_)) {
      kernel.push_back(st->compute_s * 1e3);
      compact.push_back(st->compact_s * 1e3);
      t.tile_full_dense = st->full_dense;  // the same operand every repeat: the same path
    }
  }
  if (separate_dense) t.dense_ms = minimum(dms);
  t.engine_ms = minimum(ms);
  if (tile && !kernel.empty()) {
    t.tile_sparse = true;
    t.tile_kernel_ms = minimum(kernel);
    t.tile_compact_ms = minimum(compact);
  }
  if (!separate_dense) t.dense_ms = t.engine_ms;
  timings_.push_back(t);
}

std::vector<GemmTiming> GemmRunner::take_timings() {
  std::vector<GemmTiming> out;
  out.swap(timings_);
  return out;
}

}  // namespace spartan::train
