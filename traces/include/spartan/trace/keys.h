// Names used inside .sptrace files: tensor kinds and `__metadata__` keys. One definition for the
// writer (sw/train, sw/sdnn), the simulator (sim/) and the docs; the meaning of each name and the
// JSON schema of each structured value are specified in docs/trace-format.md.
#pragma once

namespace spartan::trace {

/// Version of the trace layout described in docs/trace-format.md (value of keys::kFormatVersion).
inline constexpr const char* kFormatVersion = "1";

namespace kinds {
/// Activation that feeds the layer's GEMM (its input), F32/F16/BF16, NCHW for conv ([N, C, H, W]),
/// [N, features] for fully connected layers.
inline constexpr const char* kAct = "act";
/// Zero pattern of the layer's backward-data GEMM's sparse operand, the output gradient as that GEMM received it
/// (1 = non-zero; layers with a ReLU after them only), U8 bit-packed, little-endian bit order:
/// element e (flat NCHW index of the layer output) is bit (e % 8) of byte e / 8. Shape [ceil(n / 8)].
inline constexpr const char* kDzMask = "dz_mask";
}  // namespace kinds

namespace keys {
/// "1" (kFormatVersion). Required.
inline constexpr const char* kFormatVersion = "format_version";
/// Model name, e.g. "vgg-s".
inline constexpr const char* kModel = "model";
/// Dataset name, e.g. "fashion-mnist".
inline constexpr const char* kDataset = "dataset";
/// Device that ran the training: "cpu: <model name> (<threads> threads)" or "cuda: <GPU name> (sm_XY)".
inline constexpr const char* kDevice = "device";
/// Random seed of the run (decimal integer as text).
inline constexpr const char* kSeed = "seed";
/// Mini-batch size N (decimal integer as text).
inline constexpr const char* kBatch = "batch";
/// Capture period K (decimal integer as text): iterations 0, K, 2K, ... were captured. Optional.
inline constexpr const char* kCaptureEvery = "capture_every";
/// JSON array: per conv/FC layer, name, type, shapes, im2col geometry and GEMM M/N/K.
inline constexpr const char* kLayers = "layers";
/// JSON array: per captured (iteration, layer), measured GEMM times in ms (dense, tile-sparse).
inline constexpr const char* kGemmTimes = "gemm_times";
/// JSON array: per layer, activation density over the captured iterations.
inline constexpr const char* kSparsity = "sparsity";
/// Name of the program that wrote the trace, e.g. "spartan-train 0.1.0". Optional.
inline constexpr const char* kWriter = "writer";
}  // namespace keys

}  // namespace spartan::trace
