// Test tensors with every dtype the project uses and the awkward values (NaN, +-0, +-Inf,
// denormals, extremes), shared by the round-trip test and the Python-reader golden writer.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "spartan/trace/sptrace.h"

namespace spartan::trace::testdata {

struct RawTensor {
  std::string name;
  DType dtype;
  std::vector<std::int64_t> shape;
  std::vector<std::uint8_t> bytes;
};

template <class T>
RawTensor make(const std::string& name, DType dt, std::vector<std::int64_t> shape, const std::vector<T>& v) {
  RawTensor r{name, dt, std::move(shape), std::vector<std::uint8_t>(v.size() * sizeof(T))};
  if (!v.empty()) std::memcpy(r.bytes.data(), v.data(), r.bytes.size());
  return r;
}

inline std::vector<float> special_floats() {
  const float inf = std::numeric_limits<float>::infinity();
  return {0.0f,   -0.0f, 1.0f, -1.5f, std::numeric_limits<float>::quiet_NaN(), inf, -inf,
          1e-40f /* denormal */, -3e-45f /* smallest denormals */, std::numeric_limits<float>::max(),
          std::numeric_limits<float>::lowest(), std::numeric_limits<float>::min(), 3.14159265f, 65504.0f,
          6.0e-8f /* f16 denormal range */, 1e-5f, 0.1f, 70000.0f /* overflows f16 */};
}

inline std::vector<RawTensor> golden_tensors() {
  std::vector<RawTensor> out;
  const std::vector<float> f = special_floats();
  std::vector<float> act(2 * 3 * 4 * 4);
  for (std::size_t i = 0; i < act.size(); ++i) act[i] = (i % 3 == 0) ? 0.0f : static_cast<float>(i) * 0.25f - 3.0f;
  out.push_back(make("it0/L0/act", DType::F32, {2, 3, 4, 4}, act));
  out.push_back(make("it0/L1/act", DType::F32, {2, 9}, f));
  std::vector<std::uint16_t> h, b;
  for (float x : f) {
    h.push_back(f32_to_f16(x));
    b.push_back(f32_to_bf16(x));
  }
  h.push_back(0x0001);  // smallest f16 denormal
  h.push_back(0x83ff);  // largest negative f16 denormal
  h.push_back(0x7e00);  // quiet NaN
  h.push_back(0xfc00);  // -Inf
  b.push_back(0x0001);  // bf16 denormal
  b.push_back(0x8000);  // -0
  out.push_back(make("it0/L2/act", DType::F16, {static_cast<std::int64_t>(h.size())}, h));
  out.push_back(make("it0/L3/act", DType::BF16, {2, static_cast<std::int64_t>(b.size() / 2)}, b));
  std::vector<std::uint8_t> flags(256);  // conv1 output 2 x 8 x 4 x 4 (the dz_mask rule of check_metadata)
  for (std::size_t i = 0; i < flags.size(); ++i) flags[i] = (i * 7 % 5) < 2;
  out.push_back(make("it0/L0/dz_mask", DType::U8, {static_cast<std::int64_t>((flags.size() + 7) / 8)},
                     pack_bits(flags.data(), flags.size())));
  out.push_back(make("it0/L1/u8", DType::U8, {5}, std::vector<std::uint8_t>{0, 1, 127, 128, 255}));
  out.push_back(make("it1/L0/i32", DType::I32, {2, 3},
                     std::vector<std::int32_t>{0, -1, 1, std::numeric_limits<std::int32_t>::min(),
                                               std::numeric_limits<std::int32_t>::max(), 123456}));
  out.push_back(make("it1/L0/i64", DType::I64, {4},
                     std::vector<std::int64_t>{0, -1, std::numeric_limits<std::int64_t>::min(),
                                               std::numeric_limits<std::int64_t>::max()}));
  out.push_back(make("it1/L0/u32", DType::U32, {3},
                     std::vector<std::uint32_t>{0, 1, std::numeric_limits<std::uint32_t>::max()}));
  out.push_back(make("it1/L0/empty", DType::F32, {0, 4}, std::vector<float>{}));
  out.push_back(make("scalar", DType::F32, {}, std::vector<float>{42.0f}));
  return out;
}

}  // namespace spartan::trace::testdata
