// What the SM-side traffic generators issue, and the hook the L2 slices call on writes.
// Plain structs, no SystemC, so that sources and observers can be written without the kernel headers.
#pragma once
#include <cstdint>

#include "spartan/hw/clock.h"

namespace spartan::hw::gpu {

/// One memory request of an SM, normally inside one L2 line. A request from a RequestSource that crosses lines
/// is issued as consecutive line requests, each taking an in-flight slot and an issue interval (and counted
/// as a request in KernelResult); the direct calls TrafficGenerator::read/write split a larger access into line
/// payloads issued together. `data`: for a write, the bytes written (real data: the functional backing store keeps them);
/// for a read, where the bytes read are put (nullptr: discarded).
struct MemRequest {
  std::uint64_t addr = 0;
  std::uint32_t bytes = 0;
  bool write = false;
  std::uint8_t* data = nullptr;
  /// true: this request issues only after the previous one of the same SM completed (pointer chase,
  /// a read whose address depends on loaded data); false: it may overlap (up to max_outstanding_lines).
  bool dependent = false;
  /// true: this request issues only after every read the same SM issued since the previous such request
  /// (or since the kernel began) completed: an epilogue whose stores (or a phase whose loads) use the data of
  /// all the loads before it, e.g. a tile's count computed from all of its lines. `dependent` waits only for
  /// the last request, which may complete before earlier reads still in flight.
  bool after_reads = false;
};

/// A per-SM stream of requests (a "kernel" as seen by the memory system). next() is called when the
/// generator is ready to issue the next request; by then every earlier read's data has been delivered,
/// so a dependent request may compute its address from loaded data. Return false when done.
class RequestSource {
 public:
  virtual ~RequestSource() = default;
  virtual bool next(MemRequest& req) = 0;
};

/// A write that reached an L2 slice (global address, real data). Called synchronously from the slice's
/// b_transport; `time_ps` is the (decoupled, annotated) simulated time the write is processed at.
struct L2WriteEvent {
  std::uint32_t slice = 0;
  std::uint64_t addr = 0;
  const std::uint8_t* data = nullptr;
  std::uint32_t bytes = 0;
  ps_t time_ps = 0;
};

/// Observer on the write path of an L2 slice (the SparsityMonitor attaches here, tracing could too).
/// The model calls every attached observer for every write; with none attached nothing is done.
class L2WriteObserver {
 public:
  virtual ~L2WriteObserver() = default;
  virtual void on_l2_write(const L2WriteEvent& ev) = 0;
};

}  // namespace spartan::hw::gpu
