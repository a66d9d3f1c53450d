// Register maps of the two Spartan units: the ONE definition used by the TLM models (hw/spartan),
// the RTL harnesses and scoreboards (rtl/), and docs/hw-units.md (which prints these tables).
//
// This is the project's own design: the Spartan paper (Dong et al., IEEE TPDS 32(10), 2021) names the
// units and their function but publishes no register map, so every offset, field and code below is ours.
//
// Conventions (both units):
//   * Each unit owns a 4 KiB MMIO window; offsets are relative to the window base.
//   * Every register is 32 bits, little-endian. An access must be exactly 4 bytes long, 4-byte aligned,
//     with no byte-enable array. 64-bit quantities are split into _LO (bits 31:0) / _HI (bits 63:32).
//   * Reserved bits read as 0; writes to them are ignored.
//   * A bad access changes nothing, returns a TLM error response (see MmioError / mmio_response_for) and
//     latches the error in ERR_CODE (first error since the last clear) and STATUS.ERR.
#pragma once
#include <array>
#include <cstdint>

namespace spartan::hw::regmap {

/// Size of each unit's MMIO window (bytes).
constexpr std::uint64_t kWindowBytes = 0x1000;
/// Width of every register (bytes). Only accesses of exactly this length are accepted.
constexpr unsigned kRegBytes = 4;

/// Element types understood by both units (field value in REGION_CFG.DTYPE and DESC CFG.DTYPE).
/// Zero means +0.0 or -0.0 only (the bit pattern with the sign bit cleared is all zero); NaN, Inf and
/// denormals are non-zero (docs/tile-format.md).
enum class ElemType : std::uint32_t { F32 = 0, F16 = 1, BF16 = 2 };
constexpr unsigned elem_bytes(ElemType t) { return t == ElemType::F32 ? 4u : 2u; }
constexpr bool elem_type_valid(std::uint32_t v) { return v <= 2; }

/// Error codes latched in ERR_CODE[7:0] (both units). The TLM response for each is given by
/// mmio_response_for(); the RTL returns the same code on its MMIO response pins.
enum class MmioError : std::uint32_t {
  None = 0,
  Unmapped = 1,       ///< offset outside every register            -> TLM_ADDRESS_ERROR_RESPONSE
  Misaligned = 2,     ///< offset not a multiple of 4               -> TLM_ADDRESS_ERROR_RESPONSE
  BadSize = 3,        ///< length != 4 or streaming width < length -> TLM_BURST_ERROR_RESPONSE
  ByteEnable = 4,     ///< a byte-enable array was given           -> TLM_BYTE_ENABLE_ERROR_RESPONSE
  ReadOnly = 5,       ///< write to a read-only register            -> TLM_COMMAND_ERROR_RESPONSE
  BadValue = 6,       ///< invalid field value / invalid region or descriptor -> TLM_COMMAND_ERROR_RESPONSE
  Busy = 7,           ///< write not allowed in the current state   -> TLM_COMMAND_ERROR_RESPONSE
  QueueFull = 8,      ///< engine SUBMIT with a full queue          -> TLM_COMMAND_ERROR_RESPONSE
  /// Engine descriptor fetch (FETCH): the descriptor line's read returned a bus error. Latched in ERR_CODE
  /// (offset FETCH, write bit set) when the read completes; no MMIO access is answered with it.
  DescFetch = 9,
  /// Engine completion record (COMPL_PTR): the record's write returned a bus error. Latched in ERR_CODE (offset
  /// COMPL_PTR_LO, write bit set) when the write is answered; no MMIO access is answered with it.
  ComplWrite = 10,
};

/// Generic field helpers.
constexpr std::uint32_t field_get(std::uint32_t reg, unsigned lsb, unsigned width) {
  return (reg >> lsb) & ((width >= 32) ? 0xFFFFFFFFu : ((1u << width) - 1u));
}
constexpr std::uint32_t field_put(std::uint32_t v, unsigned lsb, unsigned width) {
  return (v & ((width >= 32) ? 0xFFFFFFFFu : ((1u << width) - 1u))) << lsb;
}

/// ERR_CODE layout (both units): [7:0] code (MmioError), [27:16] offset of the offending access
/// (low 12 bits), [31] set if the offending access was a write. Any write to ERR_CODE clears it and
/// STATUS.ERR (this write itself never fails).
constexpr unsigned kErrCodeLsb = 0, kErrCodeWidth = 8;
constexpr unsigned kErrOffsetLsb = 16, kErrOffsetWidth = 12;
constexpr unsigned kErrWriteBit = 31;

// ------------------------------------------------------------------------------------------------
// SparsityMonitor (one per L2 slice)
// ------------------------------------------------------------------------------------------------
namespace monitor {
constexpr std::uint32_t kIdValue = 0x53504D31;  ///< "SPM1"
constexpr unsigned kNumRegions = 16;

// Global registers.
constexpr std::uint32_t ID = 0x000;             ///< RO  reset 0x53504D31
constexpr std::uint32_t CTRL = 0x004;           ///< RW  reset 0
constexpr std::uint32_t STATUS = 0x008;         ///< RO  reset 0
constexpr std::uint32_t ERR_CODE = 0x00C;       ///< RW (write clears) reset 0
constexpr std::uint32_t SAMPLE_SHIFT = 0x010;   ///< RW  reset 0, [3:0] s: count 1 of 2^s matched lines
constexpr std::uint32_t FLUSH = 0x014;          ///< WO  (reads 0) [15:0] region mask; write starts a flush
constexpr std::uint32_t LINES_SEEN = 0x018;     ///< RO  write requests seen since CLEAR (wraps)
constexpr std::uint32_t LINES_MATCHED = 0x01C;  ///< RO  requests hitting >= 1 enabled region (wraps)
constexpr std::uint32_t LINES_SAMPLED = 0x020;  ///< RO  matched requests that were counted (wraps)
constexpr std::uint32_t CAPACITY = 0x024;       ///< RO  counter-memory entries (config counter_entries)
constexpr std::uint32_t FLUSH_CYCLES = 0x028;   ///< RO  cycles of the last completed flush
constexpr std::uint32_t SLICE_ID = 0x02C;       ///< RO  index of the L2 slice this monitor sits on
// Flush completion counter (this project's design, fifty-fourth session): each monitor reports the end of its
// flush by an atomic add of 1 to a u32 in memory, as a GPU front end releases a semaphore, so that a waiter on
// the GPU polls one word (an L2 hit) for the count of monitors done instead of reading STATUS over the host's
// MMIO path (one read per monitor without a broadcast window). The add is one more atomic message of the flush's
// kind (the L2 ROP adds; the word's other bytes are untouched).
/// RW reset 0: byte address of the completion counter, bits 31:0; a value not 4-byte aligned is refused
/// (BadValue, register unchanged). COMPL_PTR = 0: no add. Writes to COMPL_PTR_LO/HI while a flush runs are Busy
/// (the flush uses the value at its end).
constexpr std::uint32_t COMPL_PTR_LO = 0x030;
constexpr std::uint32_t COMPL_PTR_HI = 0x034;   ///< RW reset 0: bits 63:32
/// A flush with COMPL_PTR != 0 issues, once every atomic add of the count table is answered, one atomic add of
/// the u32 kComplIncrement at COMPL_PTR; FLUSH_DONE is set (and FLUSH_CYCLES, which includes it, latched) when
/// that add is answered, so a waiter that reads the counter at S (the number of monitors) sees every count. The
/// counter wraps at 2^32. The driver zeroes it with the count table.
constexpr std::uint32_t kComplIncrement = 1;

// CTRL fields.
constexpr unsigned CTRL_ENABLE_BIT = 0;  ///< 1: count writes into enabled regions
constexpr unsigned CTRL_CLEAR_BIT = 1;   ///< W1 (self-clearing, reads 0): zero counters + line counters
// STATUS fields.
constexpr unsigned STATUS_FLUSH_BUSY_BIT = 0;
constexpr unsigned STATUS_FLUSH_DONE_BIT = 1;  ///< set at flush end; cleared when a flush starts or by CLEAR
constexpr unsigned STATUS_ERR_BIT = 2;         ///< an MMIO error is latched in ERR_CODE
constexpr unsigned SAMPLE_SHIFT_WIDTH = 4;

// Region register set r (0..15) at REGION_BASE + r * REGION_STRIDE.
constexpr std::uint32_t REGION_BASE = 0x100;
constexpr std::uint32_t REGION_STRIDE = 0x40;
constexpr std::uint32_t R_CFG = 0x00;          ///< RW reset 0: [0] EN, [5:4] DTYPE (ElemType)
constexpr std::uint32_t R_TILE = 0x04;         ///< RW reset 0: [15:0] TILE_ROWS, [31:16] TILE_COLS
constexpr std::uint32_t R_BASE_LO = 0x08;      ///< RW byte address of element (0,0)
constexpr std::uint32_t R_BASE_HI = 0x0C;      ///< RW
constexpr std::uint32_t R_ROWS = 0x10;         ///< RW matrix rows (elements)
constexpr std::uint32_t R_COLS = 0x14;         ///< RW matrix columns (elements)
constexpr std::uint32_t R_ROW_PITCH = 0x18;    ///< RW bytes between row starts
constexpr std::uint32_t R_CNT_OFFSET = 0x1C;   ///< RW first counter-memory entry used by this region
constexpr std::uint32_t R_CT_BASE_LO = 0x20;   ///< RW byte address of the u32 count table in memory
constexpr std::uint32_t R_CT_BASE_HI = 0x24;   ///< RW
constexpr std::uint32_t R_SIZE_LO = 0x28;      ///< RO region extent in bytes = ROWS * ROW_PITCH
constexpr std::uint32_t R_SIZE_HI = 0x2C;      ///< RO
constexpr std::uint32_t R_TILES = 0x30;        ///< RO number of tiles = ceil(ROWS/TR) * ceil(COLS/TC)
constexpr std::uint32_t R_MATCHED = 0x34;      ///< RO requests that hit this region since CLEAR (wraps)
// 0x38, 0x3C: unmapped (TLM_ADDRESS_ERROR_RESPONSE).

constexpr unsigned R_CFG_EN_BIT = 0;
constexpr unsigned R_CFG_DTYPE_LSB = 4, R_CFG_DTYPE_WIDTH = 2;
constexpr unsigned R_TILE_ROWS_LSB = 0, R_TILE_COLS_LSB = 16, R_TILE_WIDTH = 16;

constexpr std::uint32_t region_reg(unsigned r, std::uint32_t reg) { return REGION_BASE + r * REGION_STRIDE + reg; }
}  // namespace monitor

// ------------------------------------------------------------------------------------------------
// CompactionEngine (near L2)
// ------------------------------------------------------------------------------------------------
namespace engine {
constexpr std::uint32_t kIdValue = 0x53504331;  ///< "SPC1"

constexpr std::uint32_t ID = 0x000;              ///< RO reset 0x53504331
constexpr std::uint32_t CTRL = 0x004;            ///< RW reset 0: [0] ENABLE, [1] CLEAR_DONE (W1, reads 0)
constexpr std::uint32_t STATUS = 0x008;          ///< RO see STATUS_* below
constexpr std::uint32_t ERR_CODE = 0x00C;        ///< RW (write clears), same layout as the monitor's
constexpr std::uint32_t QUEUE_DEPTH = 0x010;     ///< RO descriptor-queue entries (config queue_depth)
constexpr std::uint32_t DONE_COUNT = 0x014;      ///< RO jobs completed since reset / CLEAR_DONE (wraps)
constexpr std::uint32_t LAST_TAG = 0x018;        ///< RO JOB_TAG of the last completed job
constexpr std::uint32_t LAST_CYCLES = 0x01C;     ///< RO engine cycles of the last completed job
constexpr std::uint32_t LAST_OUT_BYTES = 0x020;  ///< RO payload bytes written by the last job
constexpr std::uint32_t LAST_STATUS = 0x024;     ///< RO JobStatus of the last completed job
constexpr std::uint32_t SUBMIT = 0x028;          ///< WO (reads 0) any write pushes the staged descriptor
// Descriptor fetch (this project's design, fifty-second session): descriptors kept in memory, as DMA engines'
// descriptor rings, so that a driver that prepares them once pays a few register writes per job batch instead
// of 17 per engine. Engine i's descriptor is the 64 bytes at DESC_PTR + 64 * ENGINE_INDEX.
constexpr std::uint32_t DESC_PTR_LO = 0x02C;     ///< RW reset 0: byte address of descriptor 0, bits 31:0
constexpr std::uint32_t DESC_PTR_HI = 0x030;     ///< RW reset 0: bits 63:32
constexpr std::uint32_t ENGINE_INDEX = 0x034;    ///< RW reset 0: [15:0] this engine's index in the array
/// WO (reads 0): [15:0] N. An engine with ENGINE_INDEX < N reads the line holding its descriptor (once no job
/// runs; before the next queued job starts), loads the 64 bytes into DESC[0..15] and submits them as SUBMIT
/// would; an engine with ENGINE_INDEX >= N ignores the write (a broadcast FETCH addresses the first N engines).
/// Refused, in this order: a fetch in flight (Busy), DESC_PTR not 64-byte aligned (BadValue), a full queue
/// (QueueFull). A fetched descriptor SUBMIT would refuse is not queued: ERR_CODE latches BadValue with offset
/// FETCH; a bus error on the read latches DescFetch (DESC unchanged). While a fetch is in flight
/// (STATUS.FETCH_BUSY), writes to DESC[] and SUBMIT answer Busy.
constexpr std::uint32_t FETCH = 0x038;
constexpr unsigned kDescBytes = 64;              ///< one descriptor in memory (kDescWords words, DescWord order)
constexpr unsigned FETCH_COUNT_WIDTH = 16, ENGINE_INDEX_WIDTH = 16;
// Completion record (this project's design, fifty-third session): the engine reports each job's end by a write
// to memory, as DMA engines write completion records or release a semaphore, so that a waiter on the GPU side
// polls memory (an L2 hit) instead of reading STATUS over the host's MMIO path. A record is one 32-byte L2
// sector (the presets' sector size but r9nano's 64 B): its write allocates the sector whole, so the waiter's read
// of it hits without a fill (a partial sector is fetched from DRAM on its first read: docs/gpu-model.md, L2Slice;
// on r9nano, with an odd number of engines, the poll does that).
/// RW reset 0: byte address of engine 0's completion record, bits 31:0; a value not 32-byte aligned is refused
/// (BadValue, register unchanged; COMPL_PTR_HI is a separate register). COMPL_PTR = 0: no record is written.
/// Change it only while the engine is idle (a job uses the value at its start).
constexpr std::uint32_t COMPL_PTR_LO = 0x040;
constexpr std::uint32_t COMPL_PTR_HI = 0x044;    ///< RW reset 0: bits 63:32
/// A job that starts while COMPL_PTR != 0 ends with one write of kComplRecordBytes at COMPL_PTR + 32 *
/// ENGINE_INDEX (both as at the job's start), issued once every other write of the job is answered. DONE_COUNT,
/// LAST_* and STATUS.BUSY change when that write is answered, so a waiter that sees the record also sees the
/// job's output; a bus error on it latches ERR_CODE ComplWrite (offset COMPL_PTR_LO) and changes nothing else.
/// Record words (u32, little-endian, ComplWord order): the job's TAG, LAST_STATUS, LAST_OUT_BYTES, LAST_CYCLES,
/// then four reserved words written 0 (LAST_CYCLES does not include the record's write: a job has the same
/// LAST_CYCLES with or without one).
constexpr unsigned kComplRecordBytes = 32;
enum ComplWord : unsigned { C_TAG = 0, C_STATUS = 1, C_OUT_BYTES = 2, C_CYCLES = 3 };
constexpr std::uint32_t DESC_BASE = 0x100;       ///< RW 16 words: staged descriptor (DescWord), reset 0
constexpr unsigned kDescWords = 16;

constexpr unsigned CTRL_ENABLE_BIT = 0;
constexpr unsigned CTRL_CLEAR_DONE_BIT = 1;
constexpr unsigned STATUS_BUSY_BIT = 0;         ///< a job is being processed
constexpr unsigned STATUS_QUEUE_FULL_BIT = 1;
constexpr unsigned STATUS_QUEUE_EMPTY_BIT = 2;
constexpr unsigned STATUS_ERR_BIT = 3;          ///< an MMIO error is latched in ERR_CODE
constexpr unsigned STATUS_JOB_ERR_BIT = 4;      ///< LAST_STATUS != Ok
constexpr unsigned STATUS_FETCH_BUSY_BIT = 5;   ///< a descriptor fetch (FETCH) is in flight
constexpr unsigned STATUS_QCOUNT_LSB = 8, STATUS_QCOUNT_WIDTH = 8;  ///< queued (not started) jobs

/// Job completion status (LAST_STATUS).
enum class JobStatus : std::uint32_t { Ok = 0, OutOverflow = 1, BusError = 2 };

/// Descriptor words (byte offset = 4 * index inside the 64-byte descriptor, and DESC_BASE + 4 * index).
enum DescWord : unsigned {
  D_SRC_LO = 0, D_SRC_HI = 1,        ///< dense matrix: byte address of element (0,0)
  D_ROWS = 2, D_COLS = 3,            ///< matrix shape (elements)
  D_ROW_PITCH = 4,                   ///< bytes between row starts
  D_CFG = 5,                         ///< [1:0] DTYPE, [7:4] FORMAT, [11:8] SAMPLE_SHIFT, [12] SIZE_RULE,
                                     ///< [31:13] CT_PITCH
  D_TILE = 6,                        ///< [15:0] TILE_ROWS, [31:16] TILE_COLS
  D_THRESHOLD = 7,                   ///< density threshold, unsigned Q16.16 (0x8000 = 0.5)
  D_CT_LO = 8, D_CT_HI = 9,          ///< count table (u32 per tile, row-major tile order, rows CT_PITCH apart)
  D_HDR_LO = 10, D_HDR_HI = 11,      ///< output: header table
  D_OUT_LO = 12, D_OUT_HI = 13,      ///< output: payload area (header offsets are relative to it)
  D_OUT_CAPACITY = 14,               ///< payload area size (bytes)
  D_TAG = 15,                        ///< job tag, copied to LAST_TAG on completion
};
constexpr unsigned D_CFG_DTYPE_LSB = 0, D_CFG_DTYPE_WIDTH = 2;
constexpr unsigned D_CFG_FORMAT_LSB = 4, D_CFG_FORMAT_WIDTH = 4;
constexpr unsigned D_CFG_SHIFT_LSB = 8, D_CFG_SHIFT_WIDTH = 4;
/// D_CFG.SIZE_RULE: a fetched tile whose sparse payload would be at least its dense bytes is written as
/// DENSE (in place, no payload) instead: format::CompactOptions::dense_if_not_smaller.
constexpr unsigned D_CFG_SIZE_RULE_BIT = 12;
/// D_CFG.CT_PITCH: u32 entries from one tile row's first count to the next row's; 0 = the job's own tiles per
/// row (a table of exactly its tiles). A nonzero pitch lets a job read its counts out of a larger table, e.g.
/// the one a single monitor region wrote for a whole activation while several engines each compact a block of
/// it (this project's design, fifty-first session: before, each block needed a monitor region of its own).
/// Valid iff 0 or >= ceil(COLS / TILE_COLS).
constexpr unsigned D_CFG_CT_PITCH_LSB = 13, D_CFG_CT_PITCH_WIDTH = 19;
constexpr std::uint32_t kMaxCountTablePitch = (1u << D_CFG_CT_PITCH_WIDTH) - 1;
/// Output-format field values (D_CFG.FORMAT). 1 = ELL and 2 = BITMAP; the byte layout they select is
/// the one of sw/format/include/spartan/format/tile_format.h.
constexpr std::uint32_t kFormatEll = 1, kFormatBitmap = 2;
}  // namespace engine

/// Tile sizes accepted by both units: powers of two from 1 to kMaxTileDim.
constexpr std::uint32_t kMaxTileDim = 256;
constexpr bool tile_dim_valid(std::uint32_t v) { return v >= 1 && v <= kMaxTileDim && (v & (v - 1)) == 0; }

/// A decoded engine descriptor. to_words()/from_words() give the byte-exact 64-byte layout.
struct Descriptor {
  std::uint64_t src = 0;
  std::uint32_t rows = 0, cols = 0, row_pitch_bytes = 0;
  ElemType dtype = ElemType::F32;
  std::uint32_t format = engine::kFormatEll;
  std::uint32_t sample_shift = 0;
  std::uint32_t tile_rows = 32, tile_cols = 32;
  std::uint32_t threshold_q16 = 0x8000;
  bool size_rule = false;  ///< D_CFG.SIZE_RULE (reset value 0: the threshold alone decides)
  /// D_CFG.CT_PITCH, u32 entries between tile rows of the count table (0 = tiles per row of this job).
  std::uint32_t count_table_pitch = 0;
  std::uint64_t count_table = 0, header_base = 0, out_base = 0;
  std::uint32_t out_capacity_bytes = 0;
  std::uint32_t tag = 0;

  std::array<std::uint32_t, engine::kDescWords> to_words() const {
    using namespace engine;
    std::array<std::uint32_t, kDescWords> w{};
    w[D_SRC_LO] = static_cast<std::uint32_t>(src);
    w[D_SRC_HI] = static_cast<std::uint32_t>(src >> 32);
    w[D_ROWS] = rows;
    w[D_COLS] = cols;
    w[D_ROW_PITCH] = row_pitch_bytes;
    w[D_CFG] = field_put(static_cast<std::uint32_t>(dtype), D_CFG_DTYPE_LSB, D_CFG_DTYPE_WIDTH) |
               field_put(format, D_CFG_FORMAT_LSB, D_CFG_FORMAT_WIDTH) |
               field_put(sample_shift, D_CFG_SHIFT_LSB, D_CFG_SHIFT_WIDTH) |
               field_put(size_rule ? 1u : 0u, D_CFG_SIZE_RULE_BIT, 1) |
               field_put(count_table_pitch, D_CFG_CT_PITCH_LSB, D_CFG_CT_PITCH_WIDTH);
    w[D_TILE] = field_put(tile_rows, 0, 16) | field_put(tile_cols, 16, 16);
    w[D_THRESHOLD] = threshold_q16;
    w[D_CT_LO] = static_cast<std::uint32_t>(count_table);
    w[D_CT_HI] = static_cast<std::uint32_t>(count_table >> 32);
    w[D_HDR_LO] = static_cast<std::uint32_t>(header_base);
    w[D_HDR_HI] = static_cast<std::uint32_t>(header_base >> 32);
    w[D_OUT_LO] = static_cast<std::uint32_t>(out_base);
    w[D_OUT_HI] = static_cast<std::uint32_t>(out_base >> 32);
    w[D_OUT_CAPACITY] = out_capacity_bytes;
    w[D_TAG] = tag;
    return w;
  }
  /// Decodes words; does not validate (see descriptor_valid()).
  static Descriptor from_words(const std::array<std::uint32_t, engine::kDescWords>& w) {
    using namespace engine;
    Descriptor d;
    d.src = w[D_SRC_LO] | (static_cast<std::uint64_t>(w[D_SRC_HI]) << 32);
    d.rows = w[D_ROWS];
    d.cols = w[D_COLS];
    d.row_pitch_bytes = w[D_ROW_PITCH];
    d.dtype = static_cast<ElemType>(field_get(w[D_CFG], D_CFG_DTYPE_LSB, D_CFG_DTYPE_WIDTH));
    d.format = field_get(w[D_CFG], D_CFG_FORMAT_LSB, D_CFG_FORMAT_WIDTH);
    d.sample_shift = field_get(w[D_CFG], D_CFG_SHIFT_LSB, D_CFG_SHIFT_WIDTH);
    d.size_rule = field_get(w[D_CFG], D_CFG_SIZE_RULE_BIT, 1) != 0;
    d.count_table_pitch = field_get(w[D_CFG], D_CFG_CT_PITCH_LSB, D_CFG_CT_PITCH_WIDTH);
    d.tile_rows = field_get(w[D_TILE], 0, 16);
    d.tile_cols = field_get(w[D_TILE], 16, 16);
    d.threshold_q16 = w[D_THRESHOLD];
    d.count_table = w[D_CT_LO] | (static_cast<std::uint64_t>(w[D_CT_HI]) << 32);
    d.header_base = w[D_HDR_LO] | (static_cast<std::uint64_t>(w[D_HDR_HI]) << 32);
    d.out_base = w[D_OUT_LO] | (static_cast<std::uint64_t>(w[D_OUT_HI]) << 32);
    d.out_capacity_bytes = w[D_OUT_CAPACITY];
    d.tag = w[D_TAG];
    return d;
  }
};

/// Tiles of a rows x cols matrix cut into tr x tc tiles (row-major tile order). In 64 bits: with 32-bit
/// arithmetic, cols + tc - 1 wrapped for cols > 2^32 - tc (the monitor's TILES register of a staged region
/// then read 0 where the RTL reads ceil(COLS / TILE_COLS)).
constexpr std::uint64_t tiles_per_row(std::uint32_t cols, std::uint32_t tc) {
  return (static_cast<std::uint64_t>(cols) + tc - 1) / tc;
}
constexpr std::uint64_t tile_count(std::uint32_t rows, std::uint32_t cols, std::uint32_t tr, std::uint32_t tc) {
  return ((static_cast<std::uint64_t>(rows) + tr - 1) / tr) * tiles_per_row(cols, tc);
}

/// Descriptor validity rule checked at SUBMIT (invalid -> BadValue, TLM_COMMAND_ERROR_RESPONSE):
/// rows, cols >= 1; DTYPE valid; FORMAT is ELL or BITMAP; tile dims valid; row pitch a multiple of the
/// element size and >= cols * element size; count table 4-byte aligned; CT_PITCH 0 or at least the tiles per
/// row, and (a Descriptor field wider than its 19 bits, which to_words() would truncate) at most
/// kMaxCountTablePitch; OUT_CAPACITY a multiple of 16 bytes
/// (payloads sit at 16-byte aligned offsets, tile_format.h kPayloadAlignBytes, and the RTL writes each payload's
/// padding up to the next one: an unaligned capacity let the RTL write past it; reliability finding 75).
inline bool descriptor_valid(const Descriptor& d) {
  const std::uint32_t dt = static_cast<std::uint32_t>(d.dtype);
  if (!elem_type_valid(dt) || d.rows == 0 || d.cols == 0) return false;
  if (d.format != engine::kFormatEll && d.format != engine::kFormatBitmap) return false;
  if (!tile_dim_valid(d.tile_rows) || !tile_dim_valid(d.tile_cols)) return false;
  const std::uint64_t eb = elem_bytes(d.dtype);
  if (d.row_pitch_bytes % eb != 0 || d.row_pitch_bytes < d.cols * eb) return false;
  if (d.count_table_pitch > engine::kMaxCountTablePitch) return false;
  if (d.count_table_pitch != 0 && d.count_table_pitch < tiles_per_row(d.cols, d.tile_cols)) return false;
  return d.count_table % 4 == 0 && d.out_capacity_bytes % 16 == 0;
}

/// The job's count-table row pitch in u32 entries: D_CFG.CT_PITCH, or its own tiles per row when that is 0.
inline std::uint64_t count_table_pitch_entries(const Descriptor& d) {
  return d.count_table_pitch != 0 ? d.count_table_pitch : tiles_per_row(d.cols, d.tile_cols);
}
/// Byte address of tile (ti, tj)'s u32 count (tile row ti, tile column tj) in the job's count table.
inline std::uint64_t count_table_entry(const Descriptor& d, std::uint64_t ti, std::uint64_t tj) {
  return d.count_table + 4 * (ti * count_table_pitch_entries(d) + tj);
}
/// u32 entries the job's count table spans, from the first tile's count to the last one's: (tile rows - 1) x
/// pitch + tiles per row, the entries of other jobs' tiles in between included (0 for an empty matrix).
inline std::uint64_t count_table_span_entries(const Descriptor& d) {
  if (d.rows == 0 || d.cols == 0 || d.tile_rows == 0 || d.tile_cols == 0) return 0;
  const std::uint64_t tiles_r = (static_cast<std::uint64_t>(d.rows) + d.tile_rows - 1) / d.tile_rows;
  return (tiles_r - 1) * count_table_pitch_entries(d) + tiles_per_row(d.cols, d.tile_cols);
}

/// True iff a tile with `nnz` non-zeros out of `elems` valid elements is at or above the threshold
/// (Q16.16): nnz * 2^16 >= threshold_q16 * elems, computed exactly in 64 bits.
constexpr bool tile_is_dense(std::uint64_t nnz, std::uint64_t elems, std::uint32_t threshold_q16) {
  return (nnz << 16) >= static_cast<std::uint64_t>(threshold_q16) * elems;
}

}  // namespace spartan::hw::regmap
