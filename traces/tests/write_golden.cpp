// Writes golden.sptrace with the C++ writer and expected.json with, per tensor, the dtype, shape,
// raw storage integers and (for float dtypes) the float32 bit patterns produced by the C++ reader.
// Used by python_reader_test.sh to check traces/tools/read_sptrace.py bit-exactly.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "golden_data.h"
#include "spartan/common/atomic_file.h"
#include "spartan/trace/metadata.h"

using namespace spartan::trace;

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: sptrace_golden OUT.sptrace OUT.json\n");
    return 2;
  }
  const auto tensors = testdata::golden_tensors();
  {
    TraceWriter w(argv[1]);
    w.set_metadata("format_version", "1");
    w.set_metadata("model", "golden");
    w.set_metadata("dataset", "none");
    w.set_metadata("device", "cpu: test (1 threads)");
    w.set_metadata("seed", "1");
    w.set_metadata("batch", "2");
    w.set_metadata("unicode", "\xc3\xa9t\xc3\xa9 \xe2\x9c\x93");
    w.set_metadata("layers", layers_to_json({make_conv_layer(0, "conv1", 2, 3, 4, 4, 8, 3, 3, 1, 1, true)}));
    for (const auto& t : tensors) w.add_tensor(t.name, t.dtype, t.shape, t.bytes.data(), t.bytes.size());
    w.finish();
  }
  TraceReader r(argv[1]);
  nlohmann::json out;
  out["metadata"] = r.metadata();
  for (const auto& t : tensors) {
    nlohmann::json e;
    e["dtype"] = dtype_name(t.dtype);
    e["shape"] = t.shape;
    const std::size_t es = dtype_size(t.dtype);
    const TensorView v = r.view(t.name);
    nlohmann::json raw = nlohmann::json::array();
    for (std::size_t i = 0; i + es <= v.bytes; i += es) {
      switch (t.dtype) {
        case DType::I32: {
          std::int32_t x;
          std::memcpy(&x, v.data + i, 4);
          raw.push_back(x);
          break;
        }
        case DType::I64: {
          std::int64_t x;
          std::memcpy(&x, v.data + i, 8);
          raw.push_back(x);
          break;
        }
        default: {  // unsigned storage integer (floats: their bit pattern)
          std::uint64_t x = 0;
          std::memcpy(&x, v.data + i, es);
          raw.push_back(x);
        }
      }
    }
    e["raw"] = raw;
    if (t.dtype == DType::F32 || t.dtype == DType::F16 || t.dtype == DType::BF16) {
      nlohmann::json f = nlohmann::json::array();
      for (float x : r.to_f32(t.name)) {
        std::uint32_t u;
        std::memcpy(&u, &x, 4);
        f.push_back(u);
      }
      e["f32_bits"] = f;
    }
    out["tensors"][t.name] = e;
  }
  spartan::write_file_atomic(argv[2], out.dump(1) + "\n");
  return 0;
}
