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
// The channel-local address is split, low to high, into burst offset | burst within the L2 line (low column
// bits) | bank group | rest of the column | bank | row: an L2 line's sectors are consecutive columns of one row
// of one bank (one ACT per line, as Accel-Sim's QV100 map), consecutive lines alternate bank groups (tCCD_S, not
// tCCD_L, paces a stream), and a stream stays in one row of each bank for row_bytes * bank_groups bytes. (Until
// the thirty-eighth session the burst itself was below the bank group: a line's four sectors opened four rows,
// 3.8 ACTs per random 128 B read on v100; docs/gpu-model.md "Address mapping".) The bank index is XORed with the low row bits
// (permutation-based interleaving, Zhang et al., MICRO 2000) to spread row conflicts.
#pragma once
#include <cstdint>

#include "spartan/hw/fast_div.h"
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

/// All functions are pure, noexcept and O(1); addresses are byte addresses.
class AddressMap {
 public:
  /// `cfg` must have passed validate_gpu_config (non-zero slices, channels, banks, interleave and burst
  /// sizes; slices a multiple of channels); the constructor checks nothing and divides by these values.
  explicit AddressMap(const GpuConfig& cfg);

  /// The L2 slice that owns global byte address `addr`, and the address's offset in that slice's share of
  /// memory (`local`; consecutive interleave chunks of one slice are contiguous in `local`).
  SliceAddress to_slice(std::uint64_t addr) const noexcept {
    std::uint64_t chunk = interleave_.div(addr), off = interleave_.mod(addr);
    std::uint64_t group = slices_.div(chunk);
    std::uint64_t rot = xor_hash_ ? fold(group) : 0;
    return {std::uint32_t(slices_.mod(slices_.mod(chunk) + rot)), group * interleave_.d + off};
  }
  /// Inverse of to_slice(): the global byte address of `local` in slice `slice` (slice < slices()).
  std::uint64_t to_global(std::uint32_t slice, std::uint64_t local) const noexcept {
    std::uint64_t group = interleave_.div(local), off = interleave_.mod(local);
    std::uint64_t rot = xor_hash_ ? slices_.mod(fold(group)) : 0;
    std::uint64_t pos = slices_.mod(slice + slices_.d - rot);
    return (group * slices_.d + pos) * interleave_.d + off;
  }
  /// DRAM coordinates of a slice-local address (as from to_slice): channel = slice / slices_per_channel();
  /// column counts bursts (of dram.bus_bytes * burst_length bytes) within the row; bank is within its bank
  /// group (bank XOR low row bits); row is truncated to 32 bits. Slice must be < slices().
  DramAddress to_dram(std::uint32_t slice, std::uint64_t local) const noexcept {
    std::uint32_t ch = std::uint32_t(spc_.div(slice));
    std::uint64_t ch_local = interleave_.div(local) * spc_.d * interleave_.d + spc_.mod(slice) * interleave_.d +
                             interleave_.mod(local);
    std::uint64_t x = burst_.div(ch_local);
    DramAddress d{};
    d.channel = ch;
    const std::uint32_t col_low = std::uint32_t(bursts_per_line_.mod(x));  // the burst within its L2 line
    x = bursts_per_line_.div(x);
    d.bank_group = std::uint32_t(bank_groups_.mod(x));
    x = bank_groups_.div(x);
    d.column = std::uint32_t(lines_per_row_.mod(x)) * std::uint32_t(bursts_per_line_.d) + col_low;
    x = lines_per_row_.div(x);
    std::uint32_t bank = std::uint32_t(banks_per_group_.mod(x));
    x = banks_per_group_.div(x);
    d.row = std::uint32_t(x);
    d.bank = std::uint32_t(banks_per_group_.mod(bank ^ x));
    return d;
  }
  /// DRAM coordinates of slice-local address `next_local` = `prev_local` + one burst, given `d` =
  /// to_dram(slice, prev_local): when both lie in one interleave chunk the channel-local burst index is
  /// the previous one plus one, so only the bank group changes unless it wraps. Same result as
  /// to_dram(slice, next_local), without the full decode.
  DramAddress next_burst(const DramAddress& d, std::uint32_t slice, std::uint64_t prev_local,
                         std::uint64_t next_local) const noexcept {
    if (interleave_.div(prev_local) == interleave_.div(next_local)) {
      if (bursts_per_line_.mod(d.column) + 1 < bursts_per_line_.d) {  // the next burst of the same line
        DramAddress n = d;
        ++n.column;
        return n;
      }
      if (d.bank_group + 1 < bank_groups_.d) {  // the first burst of the next line: the next bank group
        DramAddress n = d;
        ++n.bank_group;
        n.column -= std::uint32_t(bursts_per_line_.d) - 1;
        return n;
      }
    }
    return to_dram(slice, next_local);
  }
  /// l2.slices of the config.
  std::uint32_t slices() const noexcept { return std::uint32_t(slices_.d); }
  /// l2.slices / dram.channels: consecutive slices c*spc .. c*spc+spc-1 share DRAM channel c.
  std::uint32_t slices_per_channel() const noexcept { return std::uint32_t(spc_.d); }

 private:
  static std::uint64_t fold(std::uint64_t g) noexcept { return g ^ (g >> 5) ^ (g >> 11) ^ (g >> 17); }
  FastDiv interleave_, slices_, spc_, burst_, bank_groups_, banks_per_group_, bursts_per_line_, lines_per_row_;
  bool xor_hash_;
};

}  // namespace spartan::hw
