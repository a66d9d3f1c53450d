#include "spartan/hw/address_map.h"

#include <algorithm>

namespace spartan::hw {

AddressMap::AddressMap(const GpuConfig& c)
    : interleave_(c.l2.interleave_bytes),
      slices_(c.l2.slices),
      spc_(c.l2.slices / c.dram.channels),
      burst_(c.dram.burst_bytes()),
      bank_groups_(c.dram.bank_groups),
      banks_per_group_(c.dram.banks_per_group),
      bursts_per_line_(std::max<std::uint32_t>(1, c.l2.slice.line_bytes / c.dram.burst_bytes())),
      lines_per_row_(c.dram.row_bytes / std::max<std::uint32_t>(c.l2.slice.line_bytes, c.dram.burst_bytes())),
      xor_hash_(c.l2.hash == "rotate_xor") {}

}  // namespace spartan::hw
