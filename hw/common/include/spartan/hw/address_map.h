// Physical address -> L2 slice -> DRAM channel / bank group / bank / row / column.
//
// Slice selection (address-slice hashing): the address is cut into `interleave_bytes` chunks; chunk c lies
// in group g = c / S (S = number of slices) and goes to slice (c mod S + h(g)) mod S, where h is an XOR
// fold of g ("rotate_xor") or 0 ("modulo"). Within each group the S chunks are a rotation over the S slices,
// so the map is a bijection for any S (also non-powers of two) and the slice-local address is simply
// g * interleave_bytes + offset. The XOR fold spreads power-of-two strides over slices, in the spirit of
// the IPOLY hashing of Accel-Sim/GPGPU-Sim (Rau, ISCA 1991) but not the same function (this project's choice).
//
// DRAM: slices_per_channel = S / channels consecutive slices share channel slice / slices_per_channel.
// The channel-local address is split, low to high, into burst offset | bank group | column | bank | row,
// so consecutive bursts alternate bank groups (tCCD_S, not tCCD_L, paces a stream) and a stream stays in
// one row of each bank for row_bytes * bank_groups bytes. The bank index is XORed with the low row bits
// (permutation-based interleaving, Zhang et al., MICRO 2000) to spread row conflicts.
#pragma once
#include <cstdint>

#include "spartan/hw/gpu_config.h"

namespace spartan::hw {

struct SliceAddress {
  std::uint32_t slice;  ///< 0 .. slices-1
  std::uint64_t local;  ///< byte address inside the slice's share of memory
};

struct DramAddress {
  std::uint32_t channel, bank_group, bank;  ///< bank is within its bank group
  std::uint32_t row;
  std::uint32_t column;  ///< burst index within the row
  std::uint32_t flat_bank(std::uint32_t banks_per_group) const { return bank_group * banks_per_group + bank; }
};

class AddressMap {
 public:
  explicit AddressMap(const GpuConfig& cfg);

  SliceAddress to_slice(std::uint64_t addr) const noexcept {
    std::uint64_t chunk = addr / interleave_, off = addr % interleave_;
    std::uint64_t group = chunk / slices_;
    std::uint64_t rot = xor_hash_ ? fold(group) : 0;
    return {std::uint32_t((chunk % slices_ + rot) % slices_), group * interleave_ + off};
  }
  /// Inverse of to_slice().
  std::uint64_t to_global(std::uint32_t slice, std::uint64_t local) const noexcept {
    std::uint64_t group = local / interleave_, off = local % interleave_;
    std::uint64_t rot = xor_hash_ ? fold(group) % slices_ : 0;
    std::uint64_t pos = (slice + slices_ - rot) % slices_;
    return (group * slices_ + pos) * interleave_ + off;
  }
  /// DRAM coordinates of a slice-local address.
  DramAddress to_dram(std::uint32_t slice, std::uint64_t local) const noexcept {
    std::uint32_t ch = slice / slices_per_channel_;
    std::uint64_t ch_local = (local / interleave_) * slices_per_channel_ * interleave_ +
                             (slice % slices_per_channel_) * interleave_ + local % interleave_;
    std::uint64_t x = ch_local / burst_bytes_;
    DramAddress d{};
    d.channel = ch;
    d.bank_group = std::uint32_t(x % bank_groups_);
    x /= bank_groups_;
    d.column = std::uint32_t(x % bursts_per_row_);
    x /= bursts_per_row_;
    std::uint32_t bank = std::uint32_t(x % banks_per_group_);
    x /= banks_per_group_;
    d.row = std::uint32_t(x);
    d.bank = std::uint32_t((bank ^ x) % banks_per_group_);
    return d;
  }
  std::uint32_t slices() const noexcept { return slices_; }
  std::uint32_t slices_per_channel() const noexcept { return slices_per_channel_; }

 private:
  static std::uint64_t fold(std::uint64_t g) noexcept { return g ^ (g >> 5) ^ (g >> 11) ^ (g >> 17); }
  std::uint64_t interleave_, slices_, slices_per_channel_, burst_bytes_, bank_groups_, banks_per_group_,
      bursts_per_row_;
  bool xor_hash_;
};

}  // namespace spartan::hw
