// Structured `__metadata__` values of a .sptrace file (docs/trace-format.md, section 4): C++ types and
// their JSON text form. Writers (sw/train, sw/sdnn) build these structs and store `*_to_json(...)` under
// the keys of keys.h; readers (sim/) call `read_*` and get validated structs.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace spartan::trace {

class TraceReader;

/// C[M x N] = A[M x K] * B[K x N], A = the activation-derived (sparse) operand.
struct GemmShape {
  std::int64_t M = 0, N = 0, K = 0;
  bool operator==(const GemmShape& o) const { return M == o.M && N == o.N && K == o.K; }
};

/// Convolution geometry of im2col (square stride, symmetric zero padding). FC layers use the
/// equivalent 1x1 geometry: C = input features, H = W = KH = KW = OH = OW = stride = 1, pad = 0.
struct Im2colGeometry {
  std::int64_t C = 0, H = 0, W = 0, KH = 1, KW = 1, stride = 1, pad = 0, OH = 0, OW = 0;
  /// Fills OH/OW = (H + 2 pad - KH) / stride + 1. Throws InputError if the kernel does not fit.
  static Im2colGeometry conv(std::int64_t C, std::int64_t H, std::int64_t W, std::int64_t KH, std::int64_t KW,
                             std::int64_t stride, std::int64_t pad);
  static Im2colGeometry fc(std::int64_t in_features);
};

/// One conv/FC layer (section 4.1). Shapes in elements; `input` = shape of the `act` tensor.
struct LayerInfo {
  std::int64_t index = 0;       ///< the L{layer} number
  std::string name;             ///< e.g. "conv1"
  std::string type;             ///< "conv" or "fc"
  bool relu_after = false;      ///< a dz_mask is captured for this layer
  std::vector<std::int64_t> input, output;  ///< conv: NCHW; fc: [N, features]
  Im2colGeometry im2col;
  GemmShape fwd, bwd_data, bwd_weight;
};

/// GEMM shapes of a layer from its geometry (table in section 4.1):
/// fwd (N_b*OH*OW, Cout, C*KH*KW), bwd_data (N_b*OH*OW, C*KH*KW, Cout), bwd_weight (C*KH*KW, Cout, N_b*OH*OW).
void fill_gemm_shapes(LayerInfo& layer, std::int64_t batch, std::int64_t out_channels);
/// A conv layer (input [batch, C, H, W] -> output [batch, Cout, OH, OW]) with its GEMM shapes filled in.
LayerInfo make_conv_layer(std::int64_t index, const std::string& name, std::int64_t batch, std::int64_t C,
                          std::int64_t H, std::int64_t W, std::int64_t Cout, std::int64_t KH, std::int64_t KW,
                          std::int64_t stride, std::int64_t pad, bool relu_after);
/// An FC layer (input [batch, in] -> output [batch, out]) with its GEMM shapes filled in.
LayerInfo make_fc_layer(std::int64_t index, const std::string& name, std::int64_t batch, std::int64_t in,
                        std::int64_t out, bool relu_after);

/// Time of one GEMM (section 4.2), milliseconds.
struct GemmTime {
  GemmTime(double dense = 0.0, std::optional<double> tile_sparse = std::nullopt,
           std::optional<double> compact = std::nullopt)
      : dense_ms(dense), tile_sparse_ms(tile_sparse), compact_ms(compact) {}
  double dense_ms = 0.0;
  std::optional<double> tile_sparse_ms;  ///< absent: tile-sparse GEMM not run
  std::optional<double> compact_ms;      ///< software dense-to-sparse conversion, if measured
  /// Density (non-zero fraction) of the operand the tile-sparse GEMM treats as sparse, if recorded.
  std::optional<double> operand_density;
  /// Which code ran as `tile_sparse_ms`, if recorded: "tiles" (the tile-sparse kernels) or "one-sgemm" (the
  /// whole call as one dense sgemm: every tile DENSE, or the density above the call-level guard; then
  /// tile_sparse_ms is a dense GEMM's time and compact_ms only the tile count). Empty: not recorded.
  std::string path;
};

/// Measured times of one captured (iteration, layer).
struct GemmTimes {
  std::int64_t iteration = 0, layer = 0;
  std::string device;  ///< device that measured, "cpu: ..." or "cuda: ..."
  std::string timer;   ///< "cuda-events" or "steady_clock"
  GemmTime fwd, bwd_data, bwd_weight;
};

/// Density of one layer over training (section 4.3). Arrays have equal length.
struct LayerSparsity {
  std::int64_t layer = 0;
  std::string name;
  std::vector<std::int64_t> iterations;
  std::vector<double> act_density;
  std::vector<double> dz_mask_density;  ///< empty if the layer has no ReLU after it
};

std::string layers_to_json(const std::vector<LayerInfo>& layers);
std::string gemm_times_to_json(const std::vector<GemmTimes>& times);
std::string sparsity_to_json(const std::vector<LayerSparsity>& sparsity);

/// Parse the JSON text of each key. `file` is used in error messages. Throws spartan::FormatError naming
/// `__metadata__.<key>[i].<field>` on invalid JSON, a missing/ill-typed field, or (layers) GEMM shapes
/// or output shapes inconsistent with the im2col geometry.
std::vector<LayerInfo> layers_from_json(const std::string& text, const std::string& file);
std::vector<GemmTimes> gemm_times_from_json(const std::string& text, const std::string& file);
std::vector<LayerSparsity> sparsity_from_json(const std::string& text, const std::string& file);

/// From an open trace: the parsed key, or an empty vector if the key is absent.
std::vector<LayerInfo> read_layers(const TraceReader& r);
std::vector<GemmTimes> read_gemm_times(const TraceReader& r);
std::vector<LayerSparsity> read_sparsity(const TraceReader& r);

/// Validates the metadata of a trace (docs/trace-format.md, section 4): each present key has its type
/// (format_version known; model/dataset/device non-empty; seed, batch, capture_every decimal integers;
/// layers, gemm_times, sparsity parse). A file carrying any .sptrace key must carry every required one;
/// layer indices are unique and increasing and each conv/fc layer's batch dimension equals `batch`;
/// each `act` / `dz_mask` tensor of a described conv/fc layer has that layer's dtype and shape; each
/// gemm_times entry names a captured (iteration, layer), at most once; each sparsity entry names a layer of
/// `layers`, at most once. A plain safetensors file without
/// .sptrace keys passes. Throws spartan::FormatError. Used by `spartan-trace check` and the simulator.
void check_metadata(const TraceReader& r);

}  // namespace spartan::trace
