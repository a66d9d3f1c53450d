// Trace capture: a TrainObserver that writes, every K steps, each conv/FC layer's input activation
// (`it{i}/L{l}/act`) and, for a layer with a ReLU after it, the non-zero pattern of its backward-data GEMM's
// sparse operand, the output gradient as that GEMM received it (`it{i}/L{l}/dz_mask`, U8 bit-packed,
// little-endian bit order), plus the metadata of docs/trace-format.md (model, dataset, device, seed,
// batch, layers with NCHW shapes, im2col geometry and GEMM M/N/K, measured GEMM times, sparsity).
// The file appears atomically at finish(); if training fails, no trace is left behind.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "spartan/trace/metadata.h"
#include "spartan/trace/sptrace.h"
#include "spartan/train/trainer.h"

namespace spartan::train {

struct CaptureOptions {
  std::string path;                     ///< output .sptrace
  std::int64_t every = 100;             ///< capture steps 0, K, 2K, ...
  trace::DType act_dtype = trace::DType::F32;  ///< F32, F16 or BF16
  std::string model, dataset, device;   ///< device (trains): "cpu: <model name> (<n> threads)" or "cuda: ..."
  /// The device that measured the GEMM times (each gemm_times record's `device`): the CUDA GPU for a CUDA engine
  /// also when the layers run on the CPU (spartan-train --device cpu --gemm cuda-tile-sparse). Empty: `device`.
  std::string gemm_device;
  std::uint64_t seed = 0;
  int batch = 0;
  std::string writer = "spartan-train";
};

/// "cpu: <model name from /proc/cpuinfo> (<threads> threads)".
std::string cpu_device_name(int threads);

class TraceCapture final : public TrainObserver {
 public:
  /// Opens the writer (temporary data file). Throws InputError for every < 1 or an unsupported act
  /// dtype, IoError if the output directory is not writable.
  TraceCapture(const CaptureOptions& opt, const Model& model);
  bool wants_capture(std::int64_t iteration) override { return iteration % opt_.every == 0; }
  /// Writes the step's activations, dz masks and GEMM times. Throws spartan::Error (before writing anything) when
  /// a timing's timer does not fit the GEMM device: CUDA events need a "cuda: ..." device, steady_clock a CPU.
  void on_capture(std::int64_t iteration, Model& model, const std::vector<GemmTiming>& timings) override;
  /// Writes metadata (including the sparsity history of `result`) and commits the file.
  void finish(const TrainResult& result);
  std::int64_t captures() const { return captures_; }

 private:
  CaptureOptions opt_;
  trace::TraceWriter writer_;
  std::vector<std::string> names_;
  std::vector<trace::LayerInfo> layers_;
  std::vector<trace::GemmTimes> times_;
  std::int64_t captures_ = 0;
};

/// The trace-format LayerInfo of a GEMM layer after a forward pass (throws spartan::Error if the
/// GEMM shapes the layer ran differ from the ones the format derives from its geometry).
trace::LayerInfo layer_info(const GemmLayer& layer, const std::string& name);

}  // namespace spartan::train
