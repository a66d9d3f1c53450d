// Trace replay (`spartan-sim run`): drives the GPU memory model (hw/gpu), one SparsityMonitor per L2
// slice and a CompactionEngine with the real activations of a .sptrace file, and compares the hardware
// path with the software baselines on the same memory hierarchy.
//
// Per captured (iteration, layer) (docs/hw-units.md, "Trace replay"):
//   A (software): producer writes the activation; profiling kernel (nnz per tile, and for ELL the widest
//                 row); conversion = scan, scatter (reusing the profile's counts).
//   B (hardware): count table zeroed; producer writes the activation again while the monitors count;
//                 monitor flush + status read(s) (one with host_monitor_broadcast, else one per monitor);
//                 engine descriptor + job + one MMIO read.
//   then the consumer GEMM reads the tile-sparse operand (traffic only; GEMM times come from the trace).
// Functional checks: monitor counts == exact counts (with sampling: estimate error reported), software
// profile counts == exact, engine and software outputs byte-identical to tile_format.h's compact()
// (exact counts), expand(engine output) == the dense activation bit for bit.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "spartan/format/tile_format.h"
#include "spartan/hw/compaction_engine.h"
#include "spartan/hw/sparsity_monitor.h"
#include "spartan/hw/sw_baselines.h"

namespace spartan::hw {

class RunExtension;

struct ReplayOptions {
  std::string trace_path;
  std::string gpu = "v100";              ///< preset name or YAML path
  std::string out_dir;                   ///< stats.json and summary.txt go here
  format::TileFormat format = format::TileFormat::Ell;
  std::uint32_t tile_rows = 32, tile_cols = 32;
  double threshold = 0.5;                ///< density at or above which a tile stays DENSE (Q16.16 in hardware)
  /// A tile whose sparse payload would not be smaller than its dense bytes stays DENSE too
  /// (format::CompactOptions::dense_if_not_smaller; the engine's D_CFG.SIZE_RULE; review finding F8).
  bool size_rule = true;
  std::uint32_t sampling = 0;            ///< monitor SAMPLE_SHIFT
  std::vector<std::int64_t> iterations;  ///< empty: every captured iteration
  std::vector<std::int64_t> layers;      ///< empty: every captured layer
  bool quiet = false;
  MonitorConfig monitor;                 ///< slice_id and clock are set per instance from the preset
  EngineConfig engine;                   ///< every engine's configuration (clock and line from the preset)
  /// Compaction engines on the GPU (`engine.count`, 1 .. kMaxEngineCount; default 1, the design of
  /// ARCHITECTURE.md: one engine near L2). With E > 1 each engine has its own MMIO window and crossbar port,
  /// and a layer's T_r x T_c tiles are cut into nr x nc blocks of whole tiles (nr * nc <= E as large as
  /// possible, then the most block rows; fewer blocks than engines when the grid has fewer tiles:
  /// replay_impl.h engine_blocks), one descriptor per block. The monitors keep one region for the whole
  /// activation; each engine reads its block's counts out of that row-major table (D_CFG.CT_PITCH). Each
  /// block is a tile-sparse matrix of its own (own payload area; its header offsets are relative to it), which
  /// the consumer reads block by block. A design-space knob of this framework, not a configuration of the paper.
  std::uint32_t engine_count = 1;
  /// This framework's bound on engine_count (each engine is one more crossbar port and MMIO window).
  static constexpr std::uint32_t kMaxEngineCount = 16;
  /// Clocks of the units, MHz; 0 (the default): the preset's L2 clock. The synthesised datapaths do not
  /// all reach the L2 clock (spartan-area's fmax, review finding F6): set these to time them at their fmax.
  double monitor_clock_mhz = 0, engine_clock_mhz = 0;
  BaselineConfig baseline;
  double host_mmio_read_ns = 1000;       ///< one uncached MMIO read from the host (PCIe round trip), assumption
  double host_mmio_write_ns = 100;       ///< one posted MMIO write from the host, assumption
  /// true (default, ASSUMPTION): a monitor register write reaches all S monitors as one posted write to a
  /// broadcast window, and one read of an aggregated status (the register hub ANDs the monitors' FLUSH_DONE)
  /// observes the flush, as GPUs program their L2 slices through broadcast register ranges (NVIDIA's
  /// "LTCS" broadcast registers of the L2 slices in its open GPU driver headers). false: every write and
  /// the status read are charged once per monitor (S x 16 writes, S reads per layer).
  bool host_monitor_broadcast = true;
  /// true (default, ASSUMPTION, as host_monitor_broadcast): with several engines, a descriptor word (or
  /// CTRL / SUBMIT) whose value is the same for every engine is one posted write to a broadcast window,
  /// charged once, when every engine of the GPU takes part in the layer; the words that differ (source,
  /// rows, count table, outputs, capacity) are charged per engine; completion is one read of an
  /// aggregated status. false (or fewer blocks than engines): every write per engine in use, one status
  /// read per engine in use. With one engine both rules charge the same.
  bool host_engine_broadcast = true;
  /// false (default): the host writes each engine's descriptor into its staging registers and SUBMITs it
  /// (CTRL, 16 words, SUBMIT per engine, common values once with host_engine_broadcast). true: the layer's
  /// descriptors lie in device memory, written there by the driver ahead of the layer (not charged: they do
  /// not depend on the layer's data; the replay writes them functionally), and the engines fetch them (regmap FETCH): per layer CTRL,
  /// DESC_PTR_LO/HI and one FETCH, written once to every engine with host_engine_broadcast (4 writes
  /// whatever the engine count), else to each engine in use; ENGINE_INDEX is programmed once per run (not
  /// charged). The conversion then includes each engine's descriptor read (a cold L2 line: the L2 is
  /// flushed before every layer's paths). This project's design, fifty-second session.
  bool host_engine_fetch = false;
  /// false (default): completion is observed by a status read over the host's MMIO path (host_mmio_read_ns,
  /// one aggregated read with host_engine_broadcast, else one per engine in use). true: each engine writes a
  /// completion record (regmap engine::COMPL_PTR; COMPL_PTR and ENGINE_INDEX programmed once per run, not
  /// charged) and the wait is a GPU-side poll of the records: one read of the records' lines by one SM,
  /// issued once every record is written, simulated on the GPU model (a lower bound on a poller: one that
  /// issues its read right then; a real one adds up to its poll interval). The records' writes are in the
  /// engines' jobs. This project's design, fifty-third session.
  bool host_engine_record = false;
  /// false (default): the profile observes the flushes' end by a status read over the host's MMIO path (one
  /// aggregated read with host_monitor_broadcast, else one per monitor). true: the monitors add 1 to a
  /// completion counter in memory at each flush's end (regmap monitor::COMPL_PTR, programmed once per run, not
  /// charged); the driver zeroes the counter with the count table (one 32 B sector more in that memset) and the
  /// wait is a GPU-side poll of the counter's sector by one SM, issued once every monitor's flush has ended,
  /// simulated on the GPU model (a lower bound on a poller, as host_engine_record's). This project's design,
  /// fifty-fourth session.
  bool host_monitor_completion = false;
  /// The GPU-side poller of host_engine_record / host_monitor_completion (ASSUMPTION). 0 (default): one read
  /// issued the moment the last record or flush is done (the lower bound on any poller). P > 0: the poller reads
  /// every P ns from the write that starts the wait (FLUSH, SUBMIT or FETCH) and sees completion with the first
  /// read issued at or after it; the wait until that read is charged beside its simulated round trip (the earlier
  /// reads' L2 traffic is not simulated). This project's model, fifty-fourth session.
  double host_poll_interval_ns = 0;
  /// The --units file applied to this run ("" = none); recorded in stats.json with the settings it gave.
  std::string units_file;
  std::vector<RunExtension*> extensions; ///< active extensions (run_hooks.h)
  /// Files in out_dir left by an earlier run that this run does not write (an inactive extension's, e.g.
  /// rtl_cycles.json without --rtl): removed only after the replay succeeded, right before this run's
  /// outputs are committed, so a rejected run leaves the directory as it was. Each entry: path, and a
  /// note printed on stderr when it is removed (empty: none).
  std::vector<std::pair<std::string, std::string>> stale_outputs;
};

/// Applies a units YAML file (`monitor:`, `engine:`, `baseline:`, `host:` mappings; unknown keys are
/// errors) to `opt`. Throws spartan::ConfigError naming the file and key.
void load_units_config(const std::string& file, ReplayOptions& opt);

/// The Q16.16 threshold register value for a density threshold (round to nearest; clamped to u32).
std::uint32_t threshold_to_q16(double threshold);

/// Runs the replay; returns the stats.json document (also written, atomically, to out_dir/stats.json with
/// a readable out_dir/summary.txt). `progress` receives one line per layer (unless opt.quiet).
/// Throws spartan::InputError on a bad trace or options. Functional-check failures are recorded in the
/// document ("checks.passed": false) and do not throw.
nlohmann::json run_replay(const ReplayOptions& opt, const std::function<void(const std::string&)>& progress);

/// The readable summary of a stats.json document.
std::string replay_summary(const nlohmann::json& doc);
/// The checks column of one layer (an element of stats.json "layers"): "ok" or "FAILED", and with
/// --sampling S > 0 the DENSE decisions the sampled counts changed and their relative count error.
std::string layer_check_text(const nlohmann::json& layer);

}  // namespace spartan::hw
