// Software baselines and the other kernels of the trace replay, as memory traffic issued by the GPU
// model's SM traffic generators (hw/gpu RequestSource), with real data.
//
// Kernels (docs/hw-units.md, "Software baselines"):
//   producer     writes the dense activation tile by tile (tile t on SM t mod S), line-sized writes;
//   profile      (a) re-reads every tile, reduces its non-zero count, writes one u32 per tile (BITMAP);
//                (a') the same plus each tile's widest row, {nnz, ELL width} (8 B) per tile (ELL; the
//                make_count_pass kernel, costed by count_cycles_per_line / _per_tile);
//   scan         (b1) exclusive scan of the tile payload sizes: reads the profile's entries, writes the
//                16-byte tile headers (format, nnz, width, offset) of tile_format.h;
//   scatter      (b2) reads every tile's 16-byte header (written by the scan), then re-reads every tile that
//                is neither DENSE nor all-zero and writes its compacted payload;
//   memset       zero-fills a buffer (the count table before the monitors' flush);
//   consumer     the tile-sparse GEMM's operand reads: header, then payload (or the DENSE tile in place).
// Each SM works on `tiles_in_flight_per_sm` tiles at a time: their line reads overlap, and the writes that
// depend on the tiles' data wait for every read of the batch (MemRequest::after_reads; until the eighteenth
// session only for the last one issued, which can complete before earlier ones); the scatter's tile reads
// likewise wait for all of the batch's header reads. The scan's header writes wait for all of its entry reads.
//
// Compute cost: the memory model has no instruction timing, so every kernel also accumulates a documented
// compute cost per line and per tile (core cycles of one warp; "per line" = per warp load of up to one L2
// line of a tile row, tile_row_loads(), however the row segment falls on line boundaries: a warp loads a
// straddling segment in one instruction); an SM retires `issue_width` warp
// instructions per cycle. A kernel's time is max(memory time, compute time) + launch overhead, i.e.
// compute fully overlaps memory (the roofline assumption).
#pragma once
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "spartan/format/tile_format.h"
#include "spartan/hw/gpu/request.h"
#include "spartan/hw/regmap.h"

namespace spartan::hw {

/// Per-line / per-tile compute costs (core cycles of one warp) and launch overhead. Defaults are this
/// project's estimates from the instruction sequence of each kernel (listed beside each value); they are
/// assumptions, not measurements.
struct BaselineConfig {
  double kernel_launch_ns = 3000;        ///< per kernel launch: CUDA launch overhead is commonly 3-5 us
  std::uint32_t issue_width = 4;         ///< warp schedulers per SM (Volta: 4)
  std::uint32_t tiles_in_flight_per_sm = 4;
  /// profile: load (1) + 32-lane compare (1) + ballot (1) + popc (1) + accumulate (1) + loop (3)
  std::uint32_t profile_cycles_per_line = 8;
  /// profile: warp shuffle reduction (5 x 2) + shared-memory block reduction (10) + store (4)
  std::uint32_t profile_cycles_per_tile = 24;
  /// ELL profile (make_count_pass; a separate count pass before 2026-12-02): as profile + per-row running
  /// max for the ELL width (2)
  std::uint32_t count_cycles_per_line = 10;
  std::uint32_t count_cycles_per_tile = 32;
  /// scan: decoupled look-back scan, per tile: load, size formula (6), scan step (4), header store (2)
  std::uint32_t scan_cycles_per_tile = 16;
  /// scatter: load (1), compare + ballot (2), masked popc prefix (3), index/value stores (8), bitmap (4), loop (6)
  std::uint32_t scatter_cycles_per_line = 24;
  std::uint32_t scatter_cycles_per_tile = 16;
  /// consumer: operand load only (the GEMM's compute is the trace's measured time)
  std::uint32_t consumer_cycles_per_line = 1;
};

/// A dense matrix in simulated memory, with its host copy (what the producer writes).
struct DenseOperand {
  std::uint64_t base = 0;
  std::uint32_t rows = 0, cols = 0, pitch_bytes = 0;
  regmap::ElemType dtype = regmap::ElemType::F32;
  std::uint32_t tile_rows = 32, tile_cols = 32;
  const std::uint8_t* host = nullptr;  ///< rows * pitch_bytes bytes
  unsigned eb() const { return regmap::elem_bytes(dtype); }
  format::TileGrid grid() const { return format::TileGrid{rows, cols, tile_rows, tile_cols}; }
};

/// Where the tile-sparse output of a conversion goes.
struct SparseOutput {
  std::uint64_t header_base = 0, payload_base = 0;
};

/// A kernel: one RequestSource per SM plus its compute cost. The make_* functions below build one entry
/// per SM (`sms` entries; an SM with no work gets a source that yields nothing and 0 cycles).
struct Kernel {
  std::string name;                    ///< step name in stats.json ("sw_profile", "sw_scan", ...)
  std::vector<std::unique_ptr<gpu::RequestSource>> per_sm;  ///< index = SM; owned here
  std::vector<double> compute_cycles;  ///< per SM, core cycles (already divided by issue_width)
  /// Non-owning pointers to per_sm, same order and size (what GpuSystem::run takes: source i drives SM i).
  /// Valid while this Kernel lives; each source can be drained once.
  std::vector<gpu::RequestSource*> sources() const;
  /// The busiest SM's compute cycles (core cycles, already divided by issue_width; 0 for an empty kernel):
  /// the compute time of the kernel is this at the core clock.
  double max_compute_cycles() const;
};

/// Line-sized pieces of one tile's rows (row segment split at `line` boundaries), in row order.
struct LinePiece {
  std::uint64_t addr;         ///< simulated byte address (m.base + row * pitch_bytes + col * elem bytes)
  std::uint32_t bytes;        ///< 1 .. line; never crosses a multiple of `line`
  std::uint32_t host_offset;  ///< byte offset in the tile buffer (row-major r_eff x c_eff elements, no padding)
};
/// The pieces of tile (ti, tj) (tile row and column index in m.grid(), not element indices; edge tiles are
/// r_eff x c_eff): for each of its r_eff rows, the c_eff * elem-byte row segment split at multiples of `line`
/// bytes (the L2 line), in row order. A row shorter than a line gives one piece; a row segment straddling a
/// line boundary gives two or more. At least r_eff pieces; their bytes sum to r_eff * c_eff * elem bytes.
/// These are the memory requests; the per-line compute costs count tile_row_loads() instead. `line` must be
/// > 0; no bounds checks on ti/tj.
std::vector<LinePiece> tile_lines(const DenseOperand& m, std::uint32_t ti, std::uint32_t tj, std::uint32_t line);
/// The warp loads of tile (ti, tj) that the per-line compute costs count: r_eff * ceil(c_eff * elem bytes /
/// line), i.e. per row the number of whole lines its segment would fill, independent of where the segment
/// starts (tile_lines() gives one more piece per row for a segment straddling a line boundary; a warp loads
/// it with one instruction). Until the eighteenth session the costs counted tile_lines() pieces: 1.5x for
/// 32-element F32 rows at a pitch that is not a multiple of the line.
std::uint64_t tile_row_loads(const DenseOperand& m, std::uint32_t ti, std::uint32_t tj, std::uint32_t line);

Kernel make_producer(const DenseOperand& m, std::uint32_t sms, std::uint32_t line);
Kernel make_memset(std::uint64_t base, std::uint64_t bytes, std::uint32_t sms, std::uint32_t line);
/// One memset kernel over several ranges {base, bytes} (line pieces dealt to the SMs in turn, range after range).
Kernel make_memset(const std::vector<std::pair<std::uint64_t, std::uint64_t>>& ranges, std::uint32_t sms,
                   std::uint32_t line);
/// (a) profiling kernel; writes one u32 count per tile at `count_table` (what the BITMAP conversion needs).
Kernel make_profile(const DenseOperand& m, std::uint64_t count_table, const BaselineConfig& c, std::uint32_t sms,
                    std::uint32_t line);
/// (a') profiling kernel that also finds each tile's widest row (what the ELL conversion needs); writes
/// {u32 nnz, u32 max_row_nnz} per tile at `count_array`; costs count_cycles_per_line / _per_tile. Kernel
/// name "sw_profile" (it is the software path's profile; a separate count pass re-reading the activation,
/// as before 2026-12-02, would charge the software path twice for the counting the hardware does once).
Kernel make_count_pass(const DenseOperand& m, std::uint64_t count_array, const BaselineConfig& c, std::uint32_t sms,
                       std::uint32_t line);
/// (b1) scan; `headers` = the headers it computes from the profile's entries in memory (`entry_bytes` per
/// tile at `count_array`: 4 for make_profile's, 8 for make_count_pass's).
Kernel make_scan(std::uint64_t count_array, std::uint32_t entry_bytes, const std::vector<format::TileHeader>& headers,
                 const SparseOutput& out, const BaselineConfig& c, std::uint32_t sms, std::uint32_t line);
/// (b2) scatter; payload bytes come from the tile data the SM read, packed by tile_format.h.
Kernel make_scatter(const DenseOperand& m, const std::vector<format::TileHeader>& headers, format::TileFormat fmt,
                    const SparseOutput& out, const BaselineConfig& c, std::uint32_t sms, std::uint32_t line);
/// The consumer GEMM's operand reads (headers, payloads, in-place DENSE tiles). `headers` is indexed by
/// row-major tile index, payload offsets from out.payload_base; tile t's header is read at
/// out.header_base + 16 * header_slot[t] (default, header_slot empty: t), as with several compaction
/// engines, whose header tables are in block-major order (replay_impl.h engine_blocks).
Kernel make_consumer(const DenseOperand& m, const std::vector<format::TileHeader>& headers, const SparseOutput& out,
                     const BaselineConfig& c, std::uint32_t sms, std::uint32_t line,
                     const std::vector<std::uint64_t>& header_slot = {});

/// The headers the scan computes from per-tile {nnz, width}: DENSE at or above the threshold (Q16.16,
/// regmap::tile_is_dense, the engine's rule) or, with `size_rule`, when the sparse payload would not be
/// smaller than the dense tile (format::tile_stays_dense); else the sparse format; offsets per tile_format.h.
std::vector<format::TileHeader> scan_headers(const DenseOperand& m, const std::vector<std::uint32_t>& nnz,
                                             const std::vector<std::uint32_t>& width, std::uint32_t threshold_q16,
                                             bool size_rule, format::TileFormat fmt, std::uint64_t* payload_bytes);

}  // namespace spartan::hw
