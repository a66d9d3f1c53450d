// Request sources for calibration and for software-baseline kernels: grid-stride streams, copy, pointer
// chase. All line-granular and deterministic.
#pragma once
#include <cstdint>
#include <vector>

#include "spartan/hw/gpu/request.h"

namespace spartan::hw::gpu {

/// SM `sm` of `sms` touches lines sm, sm + sms, sm + 2*sms, ... of [base, base + bytes) (a grid-stride
/// loop with one line per step), `passes` times. Writes store `pattern(addr)`-filled lines: byte k of the
/// line at address a is uint8_t(a + k) ^ seed (so a test can check what it reads back).
class StreamSource : public RequestSource {
 public:
  /// `base`: byte address (line-aligned for line-sized requests that stay inside one L2 line); `bytes`: the
  /// region, of which the whole lines are used (floor(bytes / line_bytes)); `line_bytes` > 0: request size
  /// (the preset's l2.line_bytes); `sm` < `sms`; `passes`: passes over the region (0 behaves as 1). Reads
  /// land in one internal line buffer, overwritten by the next. No checks: bad arguments give an empty or odd stream.
  StreamSource(std::uint64_t base, std::uint64_t bytes, std::uint32_t line_bytes, std::uint32_t sm, std::uint32_t sms,
               bool write, std::uint32_t passes = 1, std::uint8_t seed = 0);
  /// Next line-sized request (independent, `dependent` false); false when all passes are done.
  bool next(MemRequest& r) override;
  /// The byte a write stream stores at `addr`.
  static std::uint8_t pattern(std::uint64_t addr, std::uint8_t seed) { return std::uint8_t(addr) ^ seed; }

 private:
  std::uint64_t base_, lines_, line_, sms_, next_line_, pass_ = 0, passes_;
  std::uint32_t line_bytes_;
  bool write_;
  std::uint8_t seed_;
  std::vector<std::uint8_t> buf_, ramp_;
};

/// Copy [src, src+bytes) -> [dst, ...): per SM, batches of `batch` line reads (independent), then the same
/// lines written from the data read, the first write of a batch waiting for the batch's last read.
class CopySource : public RequestSource {
 public:
  /// `src`, `dst`: byte addresses (line-aligned, regions not overlapping); `bytes`: copied in whole lines
  /// (floor(bytes / line_bytes)); SM `sm` of `sms` copies lines sm, sm + sms, ... (grid stride); `batch`:
  /// lines read before they are written (0 behaves as 1; buffer of batch * line_bytes bytes per source).
  CopySource(std::uint64_t src, std::uint64_t dst, std::uint64_t bytes, std::uint32_t line_bytes, std::uint32_t sm,
             std::uint32_t sms, std::uint32_t batch);
  /// Next request: a batch's reads, then its writes (the first one `dependent`: it issues after the previous
  /// request of the SM, the batch's last-issued read, completed); false when done.
  bool next(MemRequest& r) override;

 private:
  std::uint64_t src_, dst_, lines_, sms_, line_bytes_, cursor_;
  std::uint32_t batch_, phase_ = 0, in_batch_ = 0, batch_size_ = 0;
  std::vector<std::uint64_t> batch_lines_;
  std::vector<std::uint8_t> buf_;
};

/// Random reads: `requests` independent reads of `request_bytes` each, at addresses drawn uniformly from the
/// `request_bytes`-aligned slots of [base, base + bytes) (a gather / GUPS-like access: nearly every one opens a
/// DRAM row, so the channel's ACT constraints, tRRD / tFAW / tRC, bound it). Deterministic in (seed, sm).
class RandomReadSource : public RequestSource {
 public:
  /// `request_bytes` > 0 and a divisor of the L2 line (the preset's sector, so that no read crosses a line);
  /// `bytes` >= request_bytes; `base` request_bytes-aligned.
  RandomReadSource(std::uint64_t base, std::uint64_t bytes, std::uint32_t request_bytes, std::uint64_t requests,
                   std::uint32_t sm, std::uint64_t seed);
  /// Next read (independent); false after `requests`.
  bool next(MemRequest& r) override;

 private:
  std::uint64_t base_, slots_, left_, state_;
  std::uint32_t request_bytes_;
};

/// Pointer chase: reads the 8-byte little-endian pointer at `start`, then the pointer at the address it
/// holds, ... `steps` dependent reads. The chain must have been written into memory beforehand.
class PointerChaseSource : public RequestSource {
 public:
  /// `start`: byte address of the first pointer (8-byte aligned, so that no read crosses an L2 line; every
  /// pointer in the chain must be too); `steps`: reads issued.
  PointerChaseSource(std::uint64_t start, std::uint64_t steps) : addr_(start), steps_(steps) {}
  /// Next 8-byte read, `dependent` (issued after the previous one completed; its address is the value
  /// that read loaded); false after `steps` reads.
  bool next(MemRequest& r) override;

 private:
  std::uint64_t addr_, steps_, done_ = 0;
  std::uint8_t buf_[8] = {};
  bool first_ = true;
};

/// Lays out a random cyclic pointer chain over `count` slots of `stride_bytes` (one per L2 line, say)
/// starting at `base`; returns {address, value} pairs to write (8-byte pointers). Deterministic in `seed`.
/// `count` pairs (empty for count 0); the chain starts at `base` (slot 0) and visits every slot once before
/// returning to it, so a PointerChaseSource(base, n) touches min(n, count) distinct slots first.
std::vector<std::pair<std::uint64_t, std::uint64_t>> make_pointer_chain(std::uint64_t base, std::uint64_t count,
                                                                        std::uint64_t stride_bytes,
                                                                        std::uint64_t seed);

}  // namespace spartan::hw::gpu
