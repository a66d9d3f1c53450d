// RadiX-Net-style generator (see generate.h).
#include "spartan/sdnn/generate.h"

#include <cmath>
#include <numeric>
#include <random>
#include <stdexcept>

#include "spartan/common/error.h"

namespace spartan::sdnn {
namespace {
std::uint64_t splitmix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
}  // namespace

float hash_normal(std::uint64_t seed, std::uint64_t a, std::uint64_t b) {
  const std::uint64_t h1 = splitmix(seed ^ splitmix(a * 0x100000001B3ull ^ splitmix(b)));
  const std::uint64_t h2 = splitmix(h1);
  const double u1 = (static_cast<double>(h1 >> 11) + 1.0) / 9007199254740993.0;  // (0, 1]
  const double u2 = static_cast<double>(h2 >> 11) / 9007199254740992.0;
  return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
}

void choose_radix(std::int64_t neurons, int nnz_per_row, std::vector<int>& radices, std::int64_t& block) {
  for (int r = nnz_per_row; r >= 2; --r) {
    if (nnz_per_row % r) continue;
    const std::int64_t d = nnz_per_row / r;
    if (neurons % d) continue;
    std::int64_t np = neurons / d, m = 0;
    while (np > 1 && np % r == 0) {
      np /= r;
      ++m;
    }
    if (np == 1 && m >= 1) {
      radices.assign(static_cast<std::size_t>(m), r);
      block = d;
      return;
    }
  }
  throw InputError("no uniform radix r and dense block D with r*D = " + std::to_string(nnz_per_row) + " and N/D a power of r for N = " + std::to_string(neurons));
}

RadixNetGenerator::RadixNetGenerator(const RadixNetSpec& spec) : spec_(spec) {
  if (spec.init != "challenge" && spec.init != "he" && spec.init != "identity")
    throw InputError("unknown weight init '" + spec.init + "' (expected challenge, he or identity)");
  const std::int64_t n = spec.neurons;
  if (n < 1 || n > INT32_MAX) throw InputError("neurons must be in [1, 2^31), got " + std::to_string(n));
  if (spec.layers < 1) throw InputError("layers must be >= 1");
  if (spec.permute_every < 0) throw InputError("permute-every must be >= 0 (0 = never), got " + std::to_string(spec.permute_every));
  radices_ = spec.radices;
  if (radices_.empty()) {
    choose_radix(n, spec.nnz_per_row, radices_, block_);
  } else {
    std::int64_t prod = 1;
    for (int r : radices_) {
      if (r < 1) throw InputError("radices must be >= 1");
      if (prod > n / r) throw InputError("the product of the radices exceeds N = " + std::to_string(n));  // (no overflow)
      prod *= r;
    }
    if (prod < 1 || n % prod) throw InputError("product of radices " + std::to_string(prod) + " does not divide N = " + std::to_string(n));
    block_ = n / prod;
  }
  stride_.assign(radices_.size(), 1);
  for (std::size_t i = 1; i < radices_.size(); ++i) stride_[i] = stride_[i - 1] * radices_[i - 1];
  rng_.seed(spec.seed);
}

std::int64_t RadixNetGenerator::layer_nnz(int l) const {
  return spec_.neurons * radices_[static_cast<std::size_t>(l) % radices_.size()] * block_;
}

Csr RadixNetGenerator::next() {
  if (layer_ >= spec_.layers) throw std::logic_error("RadixNetGenerator::next: all " + std::to_string(spec_.layers) + " layers generated");
  constexpr float kIdentityNoise = 0.1f;
  const std::int64_t n = spec_.neurons;
  const int l = layer_;
  // The permutation is allocated once, at the first layer (not in the constructor: validation allocates nothing).
  if (perm_.empty()) {
    perm_.resize(static_cast<std::size_t>(n));
    std::iota(perm_.begin(), perm_.end(), 0);
  }
  if (spec_.permute_every > 0 && l % spec_.permute_every == 0 && l > 0)
    for (std::size_t i = perm_.size(); i > 1; --i) std::swap(perm_[i - 1], perm_[rng_() % i]);
  const std::size_t p = static_cast<std::size_t>(l) % radices_.size();
  const std::int64_t r = radices_[p], s = stride_[p], block = block_, np = n / block;
  std::vector<Triple> t;
  t.reserve(static_cast<std::size_t>(n * r * block));
  const std::int64_t fan_in = r * block;
  const float he = static_cast<float>(std::sqrt(2.0 / static_cast<double>(fan_in)));
  for (std::int64_t u = 0; u < np; ++u) {
    const std::int64_t digit = (u / s) % r, base = u - digit * s;
    for (std::int64_t m = 0; m < r; ++m) {
      const std::int64_t u2 = base + m * s;
      for (std::int64_t v = 0; v < block; ++v)
        for (std::int64_t v2 = 0; v2 < block; ++v2) {
          const std::int64_t row = u * block + v, col = perm_[static_cast<std::size_t>(u2 * block + v2)];
          const float g = hash_normal(spec_.seed, static_cast<std::uint64_t>(l) * static_cast<std::uint64_t>(n) + static_cast<std::uint64_t>(row), static_cast<std::uint64_t>(col));
          float val = 1.0f / 16.0f;
          if (spec_.init == "he") val = he * g;
          else if (spec_.init == "identity") val = (row == col ? 1.0f : 0.0f) + kIdentityNoise * he * g;
          t.push_back({row, col, val});
        }
    }
  }
  ++layer_;
  return csr_from_triples(n, n, std::move(t));
}

std::vector<Csr> generate_radixnet(const RadixNetSpec& spec) {
  RadixNetGenerator gen(spec);
  std::vector<Csr> out;
  out.reserve(static_cast<std::size_t>(spec.layers));
  while (!gen.done()) out.push_back(gen.next());
  return out;
}

}  // namespace spartan::sdnn
