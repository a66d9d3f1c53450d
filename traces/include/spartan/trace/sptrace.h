// The trace container (.sptrace): a safetensors file.
//
// Layout (safetensors, https://github.com/huggingface/safetensors, "Format" section):
//   [8 bytes: little-endian u64 N = header length][N bytes: UTF-8 JSON header][data section]
// The header maps each tensor name to {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}
// (offsets relative to the start of the data section) and may hold "__metadata__": {string: string}.
// Tensor names follow `it{iteration}/L{layer}/{kind}`; the metadata keys are specified in
// docs/trace-format.md. All data are little-endian.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "spartan/common/error.h"

namespace spartan::trace {

/// Longest JSON header, in bytes, that TraceReader accepts and TraceWriter writes (docs/trace-format.md, section 1,
/// rule 1): the safetensors library's own MAX_HEADER_SIZE.
inline constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;

/// Element types (safetensors names). Sizes in bytes: F32 4, F16 2, BF16 2, U8 1, I8 1, I32 4, U32 4,
/// I64 8, U64 8, F64 8, BOOL 1.
enum class DType { F32, F16, BF16, F64, U8, I8, I32, U32, I64, U64, BOOL };

std::size_t dtype_size(DType t);
const char* dtype_name(DType t);
/// Parses a safetensors dtype name; returns nullopt for an unknown name.
std::optional<DType> parse_dtype(const std::string& name);

/// One tensor's entry in the header. `begin`/`end` are byte offsets relative to the data section.
struct TensorInfo {
  std::string name;
  DType dtype = DType::F32;
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0, end = 0;
  std::uint64_t numel() const;
};

/// A shape as text, "[d0,d1,...]" ("[]" for a scalar), for messages and listings.
std::string shape_text(const std::vector<std::int64_t>& shape);

/// A parsed tensor name `it{iteration}/L{layer}/{kind}`.
struct TraceKey {
  std::int64_t iteration = 0;
  std::int64_t layer = 0;
  std::string kind;
  std::string name() const;  ///< formats back to `it{iteration}/L{layer}/{kind}`
};
/// Parses a tensor name; nullopt if it does not follow the `it{i}/L{l}/{kind}` pattern.
std::optional<TraceKey> parse_key(const std::string& name);

/// Streams tensors into a new .sptrace file. Tensor data go to a temporary file as they arrive;
/// finish() writes header + data to `<path>.tmp.<pid>` and renames it to `path`. If the writer is
/// destroyed without finish() (e.g. an exception), no file appears at `path`.
/// Throws spartan::IoError on I/O failure, spartan::InputError on a duplicate name or a size that
/// does not match shape x dtype.
class TraceWriter {
 public:
  explicit TraceWriter(const std::string& path);
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  /// Sets a `__metadata__` entry (string -> string; use JSON text for structured values).
  void set_metadata(const std::string& key, const std::string& value);
  /// Appends a tensor; `bytes` must equal product(shape) * dtype_size(dtype).
  void add_tensor(const std::string& name, DType dtype, const std::vector<std::int64_t>& shape, const void* data,
                  std::size_t bytes);
  /// Writes the file atomically. Tensors are stored in the order they were added.
  void finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// A read-only, zero-copy view of one tensor's bytes inside the mapped file.
struct TensorView {
  const TensorInfo* info = nullptr;
  const std::uint8_t* data = nullptr;  ///< not aligned in general: copy before typed access
  std::size_t bytes = 0;
};

/// Opens and validates a .sptrace file (mmap). Validation, before any use: file at least 8 bytes,
/// header length within the file, valid JSON object, every entry has known dtype, integer
/// non-negative shape, data_offsets [begin,end] with begin<=end inside the data section,
/// (end-begin) == product(shape)*dtype_size, no two ranges overlap, and the ranges cover the data
/// section without holes or trailing bytes; also: no duplicate JSON keys, no unknown entry fields,
/// __metadata__ is a string->string map. Any violation throws spartan::FormatError naming the file,
/// the tensor and the byte offset (docs/trace-format.md, "What a reader checks"); a missing or
/// unreadable file throws spartan::IoError. Opening is linear in the header size. The structured
/// metadata values are parsed by metadata.h (read_layers, ...), not here.
class TraceReader {
 public:
  explicit TraceReader(const std::string& path);
  ~TraceReader();
  TraceReader(const TraceReader&) = delete;
  TraceReader& operator=(const TraceReader&) = delete;

  const std::string& path() const;
  const std::map<std::string, std::string>& metadata() const;
  /// Tensors in data-offset order.
  const std::vector<TensorInfo>& tensors() const;
  /// nullptr if absent.
  const TensorInfo* find(const std::string& name) const;
  /// Throws spartan::InputError if absent.
  TensorView view(const std::string& name) const;
  /// Converts any floating tensor (F32/F16/BF16/F64) or integer tensor to float32.
  std::vector<float> to_f32(const std::string& name) const;
  /// Copies raw bytes of the tensor (for U8 masks etc.). Throws if the dtype size differs from T's.
  template <class T>
  std::vector<T> copy_as(const std::string& name) const;
  /// All tensors whose names parse as trace keys, sorted by (iteration, layer, kind).
  std::vector<TraceKey> keys() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

template <class T>
std::vector<T> TraceReader::copy_as(const std::string& name) const {
  const TensorView v = view(name);
  if (dtype_size(v.info->dtype) != sizeof(T))
    throw InputError(path() + ": " + name + ": dtype " + dtype_name(v.info->dtype) + " has " +
                     std::to_string(dtype_size(v.info->dtype)) + "-byte elements, requested type has " +
                     std::to_string(sizeof(T)));
  std::vector<T> out(v.bytes / sizeof(T));
  if (v.bytes) std::memcpy(out.data(), v.data, v.bytes);
  return out;
}

/// Bit-packing of masks (kind `dz_mask`, docs/trace-format.md): element e is bit (e % 8) of byte
/// e / 8 (little-endian bit order, numpy.packbits(..., bitorder="little")); padding bits are 0.
/// pack_bits: `flags` holds n bytes, non-zero = 1; returns ceil(n / 8) bytes.
std::vector<std::uint8_t> pack_bits(const std::uint8_t* flags, std::size_t n);
/// unpack_bits: returns n bytes of 0/1. Throws InputError if `v` is not U8 or holds a different
/// number of bytes than ceil(n / 8).
std::vector<std::uint8_t> unpack_bits(const TensorView& v, std::uint64_t n);

/// The 2-D matrix view of an `act` tensor used by the hardware replay (docs/hw-units.md, "Trace
/// replay"): rank >= 3 (NCHW) -> rows = N*C (one row per feature map), cols = H*W*...; rank 2 ([N, K])
/// -> rows = N, cols = K; rank 1 -> one row; rank 0 -> 1 x 1. Dimensions are returned unchecked (a zero
/// dimension gives a zero count; callers reject what they cannot map).
struct MatrixView {
  std::uint64_t rows = 1, cols = 1;
};
inline MatrixView activation_matrix_view(const std::vector<std::int64_t>& shape) {
  MatrixView v;
  if (shape.size() >= 3) {
    v.rows = std::uint64_t(shape[0]) * std::uint64_t(shape[1]);
    for (std::size_t i = 2; i < shape.size(); ++i) v.cols *= std::uint64_t(shape[i]);
  } else if (shape.size() == 2) {
    v.rows = std::uint64_t(shape[0]);
    v.cols = std::uint64_t(shape[1]);
  } else if (shape.size() == 1) {
    v.cols = std::uint64_t(shape[0]);
  }
  return v;
}

/// IEEE 754 half and bfloat16 conversions (round to nearest even; NaN stays NaN).
float f16_to_f32(std::uint16_t h);
std::uint16_t f32_to_f16(float f);
float bf16_to_f32(std::uint16_t h);
std::uint16_t f32_to_bf16(float f);

}  // namespace spartan::trace
