// Configuration of the GPU memory-hierarchy model (SMs -> crossbar -> L2 slices -> memory controllers
// -> HBM/GDDR). One struct per component, defaults here, all values read from ONE YAML preset by
// load_gpu_config() (sim/configs/gpu/<name>.yaml). No component reads YAML itself.
//
// Units: clocks in MHz; `_cycles` in the named clock domain (core for SM latency, the crossbar clock for
// crossbar latency, l2 for the L2 slice, dram for DRAM timing, which is given in DRAM command-clock cycles as in the datasheets and
// Accel-Sim's gpgpusim.config); sizes in bytes. Errors: spartan::ConfigError(file, key, what).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "spartan/hw/clock.h"

namespace spartan::hw {

struct ClocksConfig {
  double core_mhz = 1000;      ///< SM clock; microbenchmark latencies are reported in these cycles
  double crossbar_mhz = 1000;  ///< interconnect clock
  double l2_mhz = 1000;        ///< L2 clock
  double dram_mhz = 1000;      ///< DRAM command clock (data moves data_rate times per cycle)
};

/// Traffic generator standing for one SM.
struct SmConfig {
  std::uint32_t count = 1;                  ///< number of SMs (one generator each)
  std::uint32_t max_outstanding_lines = 64; ///< memory-level parallelism per SM (outstanding L2 requests)
  std::uint32_t issue_interval_cycles = 1;  ///< core cycles between two requests of one SM
};

/// Crossbar between SMs and L2 slices: per-port bandwidth and a fixed pipeline latency each way.
struct CrossbarConfig {
  std::uint32_t latency_cycles = 8;        ///< one-way latency, crossbar cycles
  std::uint32_t port_bytes_per_cycle = 32; ///< flit width: bytes per cycle per port and direction
  std::uint32_t header_bytes = 8;          ///< bytes of a request/response header (address, command)
};

/// One L2 slice (set-associative, write-back, write-allocate, sectored, LRU).
struct L2SliceConfig {
  std::uint32_t sets = 32;                  ///< power of two
  std::uint32_t ways = 24;
  std::uint32_t line_bytes = 128;           ///< power of two, multiple of sector_bytes
  std::uint32_t sector_bytes = 32;          ///< power of two; the fill/writeback unit
  std::uint32_t hit_latency_cycles = 100;   ///< tag+data pipeline latency, L2 cycles
  std::uint32_t bytes_per_cycle = 64;       ///< data-array bandwidth, L2 cycles
  std::uint32_t mshr_entries = 64;          ///< outstanding line fills per slice
  std::uint32_t writeback_entries = 32;     ///< write-back buffer: dirty evictions in flight to DRAM
  std::uint64_t size_bytes() const { return std::uint64_t(sets) * ways * line_bytes; }
};

struct L2Config {
  std::uint32_t slices = 1;
  std::uint32_t interleave_bytes = 256;  ///< address-slice interleave granularity (multiple of line_bytes)
  std::string hash = "rotate_xor";       ///< "rotate_xor" or "modulo" (see address_map.h)
  L2SliceConfig slice;
  /// The preset's optional `size_bytes`: validate_gpu_config checks it against size_bytes() after the
  /// geometry itself (so `sets: 96` is reported as a non-power-of-two set count, not as a size mismatch).
  std::optional<std::uint64_t> declared_size_bytes;
  std::uint64_t size_bytes() const { return slice.size_bytes() * slices; }
};

/// DRAM timing in DRAM command-clock cycles (JEDEC names). The initialisers serve C++ construction only (tests):
/// a preset file must give every key (cycle counts mean nothing at another DRAM clock), except tRFC when
/// tREFI is 0 (refresh off).
struct DramTiming {
  std::uint32_t tRCD = 12, tRP = 12, tRAS = 28, tRC = 40, CL = 12, WL = 2;
  std::uint32_t tCCDL = 2, tCCDS = 1, tRRD = 3, tWR = 10, tRTP = 3, tWTR = 4, tRTW = 4;
  /// Four-activate window: at most four ACTs per pseudo-channel in any tFAW (JESD235 / JESD79-4; the model: four
  /// per tFAW calendar bin); 0 = not modelled.
  std::uint32_t tFAW = 0;
  std::uint32_t tBURST = 1;     ///< data-bus cycles per burst (burst_length / data_rate)
  std::uint32_t tREFI = 3315;   ///< refresh interval (0 disables refresh)
  std::uint32_t tRFC = 221;     ///< all-bank refresh time
};

struct DramConfig {
  std::string kind = "HBM2";
  std::uint32_t channels = 1;          ///< independent channels (each with one controller)
  std::uint32_t bank_groups = 4;
  std::uint32_t banks_per_group = 4;
  std::uint32_t bus_bytes = 16;        ///< channel data width in bytes
  std::uint32_t burst_length = 2;      ///< beats per burst
  std::uint32_t data_rate = 2;         ///< beats per DRAM clock (2 = DDR)
  std::uint32_t row_bytes = 1024;      ///< row (page) size per bank
  std::uint32_t controller_latency_cycles = 0;  ///< fixed controller/PHY pipeline latency, DRAM cycles
  /// Writes drained per write-mode episode of the controller's write queue (watermark drain, as in
  /// Ramulator/DRAMSim3 controllers): one read->write + write->read bus turnaround (tRTW + tWTR + CL idle
  /// bus cycles: tWTR runs to the next read command, its data come CL later) is paid per this many write
  /// bursts when reads are also being served. ASSUMPTION-level parameter (presets: docs/gpu-model.md).
  std::uint32_t write_drain_bursts = 32;
  /// ACT-constraint domains per channel: tRRD and tFAW apply within each (JESD235 HBM2: "counted individually
  /// per pseudo channel"; or several physical channels behind one modelled controller). Bank k belongs to
  /// domain k % pseudo_channels. Must divide banks(). Optional key, default 1 (the whole channel).
  std::uint32_t pseudo_channels = 1;
  std::uint64_t capacity_bytes = 0;    ///< informational (backing store is sparse)
  DramTiming timing;
  std::uint32_t burst_bytes() const { return bus_bytes * burst_length; }
  std::uint32_t banks() const { return bank_groups * banks_per_group; }
};

struct SimulationConfig {
  double quantum_ns = 200;  ///< tlm_quantumkeeper global quantum
};

struct GpuConfig {
  std::string name;
  std::string file;        ///< where it was loaded from: load_gpu_config makes it absolute (recorded in outputs); parse_gpu_config keeps the given name (messages)
  double die_area_mm2 = 0; ///< for spartan-area's share-of-die figures
  double node_nm = 0;
  ClocksConfig clocks;
  SmConfig sm;
  CrossbarConfig crossbar;
  L2Config l2;
  DramConfig dram;
  SimulationConfig simulation;

  ClockDomain core_clock() const { return {"core", clocks.core_mhz}; }
  ClockDomain crossbar_clock() const { return {"crossbar", clocks.crossbar_mhz}; }
  ClockDomain l2_clock() const { return {"l2", clocks.l2_mhz}; }
  ClockDomain dram_clock() const { return {"dram", clocks.dram_mhz}; }
  /// Peak DRAM bandwidth in bytes/s: channels * bus_bytes * data_rate * dram clock.
  double peak_dram_bytes_per_s() const {
    return double(dram.channels) * dram.bus_bytes * dram.data_rate * clocks.dram_mhz * 1e6;
  }
};

/// Resolves `name_or_path`: a string containing '/' or ending in .yaml/.yml is a path, returned as given
/// (relative to the current directory); anything else is a preset name, looked up as DIR/<name>.yaml where
/// DIR is $SPARTAN_GPU_CONFIG_DIR if set and non-empty, else the source tree's sim/configs/gpu compiled in
/// (hw/common/CMakeLists.txt). No fallback from one directory to the other. Throws ConfigError if no such
/// preset/file exists (naming the presets found in DIR; `option`, the command-line option or argument that
/// gave it, is the error's key). Key reference: docs/gpu-model.md.
std::string resolve_gpu_preset(const std::string& name_or_path, const std::string& option = "--gpu");
/// Names (file stems) of the *.yaml files in the preset directory, as resolve_gpu_preset chooses it (sorted;
/// empty if the directory cannot be read).
std::vector<std::string> list_gpu_presets();
/// Reads, parses and validates a preset. ConfigError on unknown/missing keys or impossible geometry.
GpuConfig load_gpu_config(const std::string& name_or_path, const std::string& option = "--gpu");
/// Same, from YAML text; `file` labels errors.
GpuConfig parse_gpu_config(const std::string& yaml_text, const std::string& file);
/// Geometry/timing checks (sets/line/sector powers of two, line multiple of sector, non-zero banks and
/// channels, slices a multiple of channels, tRC >= tRAS + tRP, ...). ConfigError naming the key.
void validate_gpu_config(const GpuConfig& cfg);

}  // namespace spartan::hw
