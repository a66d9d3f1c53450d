// DType names and sizes, trace-key parsing, IEEE half / bfloat16 conversions.
#include <cstring>
#include <limits>

#include "spartan/common/error.h"
#include "spartan/trace/sptrace.h"

namespace spartan::trace {

namespace {
struct DTypeEntry {
  DType type;
  const char* name;
  std::size_t size;
};
// Names as in the safetensors "Format" section.
constexpr DTypeEntry kDTypes[] = {
    {DType::F32, "F32", 4}, {DType::F16, "F16", 2}, {DType::BF16, "BF16", 2}, {DType::F64, "F64", 8},
    {DType::U8, "U8", 1},   {DType::I8, "I8", 1},   {DType::I32, "I32", 4},   {DType::U32, "U32", 4},
    {DType::I64, "I64", 8}, {DType::U64, "U64", 8}, {DType::BOOL, "BOOL", 1},
};

std::uint32_t f32_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float bits_f32(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Parses a non-empty decimal without sign or redundant leading zeros into an int64.
bool parse_index(const std::string& s, std::int64_t* out) {
  if (s.empty() || s.size() > 18) return false;  // 18 digits always fit in int64
  if (s.size() > 1 && s[0] == '0') return false;
  std::int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return true;
}
}  // namespace

std::size_t dtype_size(DType t) {
  for (const auto& e : kDTypes)
    if (e.type == t) return e.size;
  return 0;
}

const char* dtype_name(DType t) {
  for (const auto& e : kDTypes)
    if (e.type == t) return e.name;
  return "?";
}

std::optional<DType> parse_dtype(const std::string& name) {
  for (const auto& e : kDTypes)
    if (name == e.name) return e.type;
  return std::nullopt;
}

std::uint64_t TensorInfo::numel() const {
  std::uint64_t n = 1;
  for (std::int64_t d : shape) n *= static_cast<std::uint64_t>(d);  // validated by the reader
  return n;
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string o = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) o += (i ? "," : "") + std::to_string(shape[i]);
  return o + "]";
}

std::string TraceKey::name() const {
  return "it" + std::to_string(iteration) + "/L" + std::to_string(layer) + "/" + kind;
}

std::optional<TraceKey> parse_key(const std::string& name) {
  // it{digits}/L{digits}/{kind}; kind is non-empty and has no '/'.
  if (name.size() < 7 || name.compare(0, 2, "it") != 0) return std::nullopt;
  const std::size_t s1 = name.find('/', 2);
  if (s1 == std::string::npos || s1 + 1 >= name.size() || name[s1 + 1] != 'L') return std::nullopt;
  const std::size_t s2 = name.find('/', s1 + 2);
  if (s2 == std::string::npos || s2 + 1 >= name.size()) return std::nullopt;
  TraceKey k;
  if (!parse_index(name.substr(2, s1 - 2), &k.iteration)) return std::nullopt;
  if (!parse_index(name.substr(s1 + 2, s2 - s1 - 2), &k.layer)) return std::nullopt;
  k.kind = name.substr(s2 + 1);
  if (k.kind.find('/') != std::string::npos) return std::nullopt;
  return k;
}

// IEEE 754-2008 binary16: 1 sign, 5 exponent (bias 15), 10 mantissa bits.
float f16_to_f32(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  std::uint32_t man = h & 0x3ffu;
  if (exp == 0x1f) return bits_f32(sign | 0x7f800000u | (man << 13));  // Inf / NaN (payload kept)
  if (exp != 0) return bits_f32(sign | ((exp + 112u) << 23) | (man << 13));
  if (man == 0) return bits_f32(sign);  // +-0
  // Subnormal: value = man * 2^-24; normalise.
  int e = -1;
  do {
    ++e;
    man <<= 1;
  } while ((man & 0x400u) == 0);
  return bits_f32(sign | ((112u - static_cast<std::uint32_t>(e)) << 23) | ((man & 0x3ffu) << 13));
}

std::uint16_t f32_to_f16(float f) {
  const std::uint32_t u = f32_bits(f);
  const std::uint16_t sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
  const std::uint32_t exp = (u >> 23) & 0xffu;
  const std::uint32_t man = u & 0x7fffffu;
  if (exp == 0xff) {
    if (man == 0) return sign | 0x7c00u;  // Inf
    std::uint16_t m = static_cast<std::uint16_t>(man >> 13);
    return sign | 0x7c00u | 0x200u | m;  // NaN: keep the top payload bits, force quiet
  }
  const int e = static_cast<int>(exp) - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00u;  // overflow -> Inf
  if (e <= 0) {
    // Result is subnormal or zero: shift the full significand (with hidden bit) right.
    if (e < -10) return sign;  // below half the smallest subnormal -> +-0
    const std::uint32_t sig = man | 0x800000u;
    const int shift = 14 - e;  // 13 + (1 - e)
    std::uint32_t r = sig >> shift;
    const std::uint32_t rem = sig & ((1u << shift) - 1);
    const std::uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1u))) ++r;  // may carry into the smallest normal: correct
    return sign | static_cast<std::uint16_t>(r);
  }
  std::uint32_t r = (static_cast<std::uint32_t>(e) << 10) | (man >> 13);
  const std::uint32_t rem = man & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) ++r;  // carry may round up to Inf: correct
  return sign | static_cast<std::uint16_t>(r);
}

float bf16_to_f32(std::uint16_t h) { return bits_f32(static_cast<std::uint32_t>(h) << 16); }

std::uint16_t f32_to_bf16(float f) {
  const std::uint32_t u = f32_bits(f);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x7fffffu) != 0)
    return static_cast<std::uint16_t>((u >> 16) | 0x40u);  // NaN stays NaN (quiet)
  const std::uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);  // round to nearest even
  return static_cast<std::uint16_t>((u + rounding) >> 16);
}

}  // namespace spartan::trace

namespace spartan::trace {

std::vector<std::uint8_t> pack_bits(const std::uint8_t* flags, std::size_t n) {
  std::vector<std::uint8_t> out((n + 7) / 8, 0);
  for (std::size_t i = 0; i < n; ++i)
    if (flags[i]) out[i / 8] |= static_cast<std::uint8_t>(1u << (i % 8));
  return out;
}

std::vector<std::uint8_t> unpack_bits(const TensorView& v, std::uint64_t n) {
  const std::string name = v.info ? v.info->name : std::string("?");
  if (!v.info || v.info->dtype != DType::U8) throw InputError(name + ": bit-packed mask must be U8");
  if (v.bytes != (n + 7) / 8)
    throw InputError(name + ": bit-packed mask of " + std::to_string(n) + " elements needs " +
                     std::to_string((n + 7) / 8) + " bytes, tensor has " + std::to_string(v.bytes));
  std::vector<std::uint8_t> out(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = (v.data[i / 8] >> (i % 8)) & 1u;
  return out;
}

}  // namespace spartan::trace
