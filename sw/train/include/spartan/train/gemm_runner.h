// Routes every GEMM of the training engine through one spartan::gemm::GemmEngine and, when timing is
// on (capture iterations), measures each call and re-runs it on the dense reference engine so that
// the trace holds both times for the same call. Both times must come from one device and one timer:
// a CUDA engine is compared with cuBLAS ("cuda-dense", CUDA events), a CPU engine with OpenBLAS ("dense",
// steady_clock); reference_engine_name() picks the reference, and GemmRunner refuses a mixed pair.
#pragma once
#include <string>
#include <vector>

#include "spartan/common/aligned.h"
#include "spartan/gemm/gemm.h"
#include "spartan/train/executor.h"

namespace spartan::train {

/// The three GEMMs of a conv / FC layer (names as in the trace metadata).
enum class GemmPass { Forward, BackwardData, BackwardWeight };
const char* pass_name(GemmPass p);  ///< "fwd", "bwd_data", "bwd_weight"

struct GemmTiming {
  int layer = 0;
  GemmPass pass = GemmPass::Forward;
  int M = 0, N = 0, K = 0;
  double engine_ms = 0;  ///< time of the engine that produced the result (minimum of the repeats)
  double dense_ms = -1;  ///< time of the same call on the dense reference (OpenBLAS for a CPU engine, cuBLAS for a
                         ///< CUDA engine: reference_engine_name()); == engine_ms when the reference is the engine
  bool tile_sparse = false;  ///< the engine is a tile-sparse one: the two fields below are valid
  double tile_kernel_ms = -1;   ///< tile-sparse compute alone (operand already compacted)
  double tile_compact_ms = -1;  ///< dense-to-tile-sparse conversion of the sparse operand
  /// The tile-sparse engine ran the call as one dense sgemm (TileSparseStats::full_dense: every tile DENSE, or
  /// the operand's density above the call-level guard): tile_kernel_ms is then a dense GEMM's time.
  bool tile_full_dense = false;
  bool device_timer = false;    ///< times are device times (CUDA events of a CUDA engine), not host wall clock
  double operand_sparsity = 0;  ///< zero fraction of the operand marked sparse
};

/// True for the CUDA engines of sw/gemm (names starting "cuda-": cuda-dense, cuda-tile-sparse), whose timed
/// runs GemmRunner measures with CUDA events; every other engine runs on the CPU and is timed with steady_clock.
bool is_cuda_engine(const std::string& engine_name);
/// The dense reference engine to time beside `engine_name`: "cuda-dense" (cuBLAS) for a CUDA engine, "dense"
/// (OpenBLAS) for a CPU engine, so that dense_ms and engine_ms are measured on the same device with the same timer.
/// Chosen by the engine, not by where the layers run (spartan-train --device cpu --gemm cuda-tile-sparse times
/// its GEMMs on the GPU).
std::string reference_engine_name(const std::string& engine_name);

class GemmRunner {
 public:
  /// `engine` computes every call; `dense` (may equal `engine`) is the reference timed beside it; it must run on
  /// the same device (is_cuda_engine() alike, see reference_engine_name()), else a timed run() throws
  /// spartan::Error. Neither is owned.
  GemmRunner(gemm::GemmEngine* engine, gemm::GemmEngine* dense);
  /// Runs `call` for `layer`'s `pass`; records a GemmTiming when timing is enabled. A timed call throws
  /// spartan::Error if the engine and the reference would be timed with different timers (a CUDA engine beside a CPU
  /// reference or the reverse) or a CUDA engine reports no CUDA-event time.
  void run(int layer, GemmPass pass, const gemm::GemmCall& call);
  void set_timing(bool on) { timing_ = on; }
  /// Timed calls are repeated `n` times on each engine, the dense reference and the engine alternately
  /// (extra runs write to scratch), and the minimum of each is recorded: on a shared machine the noise
  /// only ever adds time, and alternating lets both see the same machine state. Default 5.
  void set_repeats(int n) { repeats_ = n < 1 ? 1 : n; }
  bool timing() const { return timing_; }
  std::vector<GemmTiming> take_timings();
  const gemm::GemmEngine& engine() const { return *engine_; }
  /// The executor whose memory the calls' pointers are in (device-resident path; null: host memory). Timed calls
  /// then put their extra runs' output in executor scratch and count the operand's zeros on the executor.
  void set_executor(Executor* ex) { exec_ = ex; }
  Executor* executor() const { return exec_; }

 private:
  gemm::GemmEngine* engine_;
  gemm::GemmEngine* dense_;
  bool timing_ = false;
  int repeats_ = 5;
  std::vector<GemmTiming> timings_;
  AlignedVector<float> scratch_;  ///< C of the extra timed runs: aligned like the layers' own C
  Executor* exec_ = nullptr;
  std::shared_ptr<Buffer> d_scratch_;
};

}  // namespace spartan::train
