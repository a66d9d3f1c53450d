#include "spartan/hw/gpu/workloads.h"

#include <cstring>
#include <algorithm>
#include <numeric>
#include <random>

namespace spartan::hw::gpu {

StreamSource::StreamSource(std::uint64_t base, std::uint64_t bytes, std::uint32_t line_bytes, std::uint32_t sm,
                           std::uint32_t sms, bool write, std::uint32_t passes, std::uint8_t seed)
    : base_(base), lines_(bytes / line_bytes), line_(sm), sms_(sms), next_line_(sm), passes_(passes),
      line_bytes_(line_bytes), write_(write), seed_(seed), buf_(line_bytes), ramp_(256 + line_bytes) {
  // pattern(a + k) depends on the low byte of a + k only: a line is a window of this ramp.
  for (std::size_t i = 0; i < ramp_.size(); ++i) ramp_[i] = pattern(i, seed_);
}

bool StreamSource::next(MemRequest& r) {
  if (next_line_ >= lines_) {
    if (++pass_ >= passes_) return false;
    next_line_ = line_;
    if (next_line_ >= lines_) return false;
  }
  std::uint64_t a = base_ + next_line_ * line_bytes_;
  next_line_ += sms_;
  r = MemRequest{a, line_bytes_, write_, buf_.data(), false, false};
  if (write_) std::memcpy(buf_.data(), ramp_.data() + (a & 255), line_bytes_);
  return true;
}

CopySource::CopySource(std::uint64_t src, std::uint64_t dst, std::uint64_t bytes, std::uint32_t line_bytes,
                       std::uint32_t sm, std::uint32_t sms, std::uint32_t batch)
    : src_(src), dst_(dst), lines_(bytes / line_bytes), sms_(sms), line_bytes_(line_bytes), cursor_(sm),
      batch_(batch ? batch : 1), batch_lines_(batch_), buf_(std::size_t(batch_) * line_bytes) {}

bool CopySource::next(MemRequest& r) {
  if (phase_ == 0 && in_batch_ == 0) {  // start a batch
    batch_size_ = 0;
    while (batch_size_ < batch_ && cursor_ < lines_) {
      batch_lines_[batch_size_++] = cursor_;
      cursor_ += sms_;
    }
    if (batch_size_ == 0) return false;
  }
  std::uint64_t line = batch_lines_[in_batch_];
  std::uint8_t* data = buf_.data() + std::size_t(in_batch_) * line_bytes_;
  if (phase_ == 0) {
    r = MemRequest{src_ + line * line_bytes_, std::uint32_t(line_bytes_), false, data, false, false};
  } else {
    r = MemRequest{dst_ + line * line_bytes_, std::uint32_t(line_bytes_), true, data, in_batch_ == 0, false};
  }
  if (++in_batch_ == batch_size_) {
    in_batch_ = 0;
    phase_ ^= 1;
  }
  return true;
}

RandomReadSource::RandomReadSource(std::uint64_t base, std::uint64_t bytes, std::uint32_t request_bytes,
                                   std::uint64_t requests, std::uint32_t sm, std::uint64_t seed)
    : base_(base), slots_(std::max<std::uint64_t>(1, bytes / request_bytes)), left_(requests),
      state_(seed * 0x9E3779B97F4A7C15ull + sm + 1), request_bytes_(request_bytes) {}

bool RandomReadSource::next(MemRequest& r) {
  if (left_ == 0) return false;
  --left_;
  // splitmix64: a fixed, portable sequence (std:: distributions are not specified bit for bit across libraries).
  std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  r = MemRequest{base_ + (z % slots_) * request_bytes_, request_bytes_, false, nullptr, false, false};
  return true;
}

bool PointerChaseSource::next(MemRequest& r) {
  if (done_ >= steps_) return false;
  if (!first_) {
    std::uint64_t p = 0;
    for (int k = 7; k >= 0; --k) p = p << 8 | buf_[k];
    addr_ = p;
  }
  first_ = false;
  ++done_;
  r = MemRequest{addr_, 8, false, buf_, true, false};
  return true;
}

std::vector<std::pair<std::uint64_t, std::uint64_t>> make_pointer_chain(std::uint64_t base, std::uint64_t count,
                                                                        std::uint64_t stride, std::uint64_t seed) {
  std::vector<std::uint64_t> order(count);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(seed);
  std::shuffle(order.begin() + 1, order.end(), rng);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
  out.reserve(count);
  for (std::uint64_t i = 0; i < count; ++i)
    out.emplace_back(base + order[i] * stride, base + order[(i + 1) % count] * stride);
  return out;
}

}  // namespace spartan::hw::gpu
