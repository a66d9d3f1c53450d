// Internal: the trace-replay driver class shared by replay.cpp (setup, totals) and replay_layer.cpp.
#pragma once
#include <algorithm>
#include <array>
#include <initializer_list>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "spartan/common/error.h"
#include "spartan/hw/gpu/backing_store.h"
#include "spartan/hw/gpu/gpu_system.h"
#include "spartan/hw/gpu/request.h"
#include "spartan/hw/mmio_bus.h"
#include "spartan/hw/replay.h"
#include "spartan/hw/run_hooks.h"
#include "spartan/trace/keys.h"
#include "spartan/trace/metadata.h"
#include "spartan/trace/sptrace.h"

namespace spartan::hw::replay_detail {

namespace fmt = spartan::format;
using json = nlohmann::json;
using sc_core::sc_time;


/// Adapter: the L2 slice's write-path hook -> the slice's monitor.
class MonitorTap : public gpu::L2WriteObserver {
 public:
  explicit MonitorTap(SparsityMonitor& m) : m_(m) {}
  void on_l2_write(const gpu::L2WriteEvent& ev) override {
    m_.observe_write(ev.addr, ev.data, ev.bytes, sc_time::from_value(ev.time_ps));
  }

 private:
  SparsityMonitor& m_;
};

struct Traffic {
  std::uint64_t l2_bytes = 0, dram_bytes = 0;
};
inline Traffic traffic(gpu::GpuSystem& g) {
  auto& s = g.stats();
  return {s.total("l2_slice", "bytes_read") + s.total("l2_slice", "bytes_written"),
          s.total("memory_controller", "read_bytes") + s.total("memory_controller", "write_bytes")};
}

/// One timed step of a path: a kernel or hardware action takes max(memory, compute) + overhead (launch or
/// MMIO). A sequence of steps run back to back (sequence()) keeps each component summed over its parts
/// and takes the sum of the parts' times (`serial_ns`), so a reported total always equals the sum of its
/// steps, component by component (memory_ns, compute_ns, overhead_ns, time_ns, l2_bytes, dram_bytes).
struct Step {
  std::string name;
  double mem_ns = 0, compute_ns = 0, overhead_ns = 0;
  std::uint64_t l2_bytes = 0, dram_bytes = 0;
  double serial_ns = -1;  // >= 0 for a sequence: sum of the parts' total_ns()
  double total_ns() const { return serial_ns >= 0 ? serial_ns : std::max(mem_ns, compute_ns) + overhead_ns; }
  static Step sequence(const std::string& name, std::initializer_list<const Step*> parts) {
    Step t{name, 0, 0, 0, 0, 0, 0};  // serial_ns starts at 0: a sequence
    for (const Step* p : parts) {
      t.mem_ns += p->mem_ns;
      t.compute_ns += p->compute_ns;
      t.overhead_ns += p->overhead_ns;
      t.l2_bytes += p->l2_bytes;
      t.dram_bytes += p->dram_bytes;
      t.serial_ns += p->total_ns();
    }
    return t;
  }
  json to_json() const {
    return {{"name", name}, {"time_ns", total_ns()}, {"memory_ns", mem_ns}, {"compute_ns", compute_ns},
            {"overhead_ns", overhead_ns}, {"l2_bytes", l2_bytes}, {"dram_bytes", dram_bytes}};
  }
};

struct PathTotals {
  double ns = 0;
  std::uint64_t l2 = 0, dram = 0;
  void add(const Step& s) {
    ns += s.total_ns();
    l2 += s.l2_bytes;
    dram += s.dram_bytes;
  }
};

/// True when a trace's GEMM times were measured on a GPU (`device` "cuda: ...", docs/trace-format.md): only
/// then are they added to the simulated profile and conversion times into a layer speedup.
inline bool gemm_times_on_gpu(const std::string& device) { return device.rfind("cuda", 0) == 0; }
/// Layer speedup T_dense / (T_tile_sparse + T_profile + T_convert): GEMM times in ms, the path's simulated
/// profile + conversion time in ns.
inline double layer_speedup(double dense_ms, double tile_sparse_ms, double profile_convert_ns) {
  return dense_ms / (tile_sparse_ms + profile_convert_ns * 1e-6);
}

inline constexpr std::uint64_t kAlign = 1 << 16;
inline std::uint64_t align64k(std::uint64_t x) { return (x + kAlign - 1) / kAlign * kAlign; }

/// Upper bound of the payload bytes of any compaction of the grid.
inline std::uint64_t payload_bound(const fmt::TileGrid& g, unsigned eb) {
  const std::uint64_t per_tile = std::uint64_t(g.tile_rows) * g.tile_cols * (eb + 2) +
                                 fmt::bitmap_bytes(g.tile_rows, g.tile_cols) + 2 * fmt::kPayloadAlignBytes;
  // a multiple of 16: the engine's OUT_CAPACITY must be (regmap::descriptor_valid)
  return fmt::align_up(per_tile * g.num_tiles(), fmt::kPayloadAlignBytes);
}

/// One engine's share of a layer's activation (ReplayOptions::engine_count): the tiles of tile rows
/// [tile_row0, tile_row0 + tile_rows) and tile columns [tile_col0, tile_col0 + tile_cols), i.e. the matrix
/// rows [row0, row0 + rows) and columns [col0, col0 + cols); first_tile = its first tile in block-major
/// order (blocks in row-major order, each block's tiles row-major), where its slot of the header table starts
/// (its counts are read out of the layer's row-major count table, with D_CFG.CT_PITCH).
struct EngineBlock {
  std::uint32_t tile_row0 = 0, tile_rows = 0, tile_col0 = 0, tile_cols = 0;
  std::uint32_t row0 = 0, rows = 0, col0 = 0, cols = 0;
  std::uint64_t first_tile = 0;
  std::uint64_t tiles() const { return std::uint64_t(tile_rows) * tile_cols; }
};
/// The blocks of `engines` engines (>= 1) over a grid of T_r x T_c tiles: nr x nc blocks, nr <= T_r,
/// nc <= T_c, with nr * nc <= engines as large as possible and, among those, the most block rows (whole
/// tile rows keep an engine's reads in long row segments); block (i, j) has tile rows [i*T_r/nr,
/// (i+1)*T_r/nr) and tile columns [j*T_c/nc, (j+1)*T_c/nc). One engine: one block, the whole grid.
/// The engines read their counts out of the one monitor region's row-major table with D_CFG.CT_PITCH = T_c, so
/// with T_c above the field's maximum (regmap::engine::kMaxCountTablePitch) the blocks are whole tile rows
/// (nc = 1, where the block's own tiles per row are T_c and no pitch is needed).
inline std::vector<EngineBlock> engine_blocks(const fmt::TileGrid& g, std::uint32_t engines) {
  const std::uint64_t tr = g.tiles_r(), tc = g.tiles_c(), e = std::max<std::uint32_t>(1, engines);
  const std::uint64_t nc_max = tc <= regmap::engine::kMaxCountTablePitch ? tc : 1;
  std::uint64_t nr = 1, nc = 1;
  for (std::uint64_t r = std::min(e, tr); r >= 1; --r) {
    const std::uint64_t c = std::min(e / r, nc_max);
    if (r * c > nr * nc) nr = r, nc = c;
  }
  std::vector<EngineBlock> v;
  std::uint64_t first = 0;
  for (std::uint64_t i = 0; i < nr; ++i)
    for (std::uint64_t j = 0; j < nc; ++j) {
      EngineBlock k;
      k.tile_row0 = static_cast<std::uint32_t>(i * tr / nr);
      k.tile_rows = static_cast<std::uint32_t>((i + 1) * tr / nr - k.tile_row0);
      k.tile_col0 = static_cast<std::uint32_t>(j * tc / nc);
      k.tile_cols = static_cast<std::uint32_t>((j + 1) * tc / nc - k.tile_col0);
      k.row0 = g.row0(k.tile_row0);
      k.col0 = g.col0(k.tile_col0);
      k.rows = static_cast<std::uint32_t>(
          std::min<std::uint64_t>(std::uint64_t(k.row0) + std::uint64_t(k.tile_rows) * g.tile_rows, g.rows) - k.row0);
      k.cols = static_cast<std::uint32_t>(
          std::min<std::uint64_t>(std::uint64_t(k.col0) + std::uint64_t(k.tile_cols) * g.tile_cols, g.cols) - k.col0);
      k.first_tile = first;
      first += k.tiles();
      v.push_back(k);
    }
  return v;
}

inline regmap::ElemType elem_of(trace::DType d, const std::string& name) {
  switch (d) {
    case trace::DType::F32: return regmap::ElemType::F32;
    case trace::DType::F16: return regmap::ElemType::F16;
    case trace::DType::BF16: return regmap::ElemType::BF16;
    default: throw InputError(name + ": activation dtype " + trace::dtype_name(d) + " is not F32, F16 or BF16");
  }
}

class Replay {
 public:
  Replay(const ReplayOptions& opt, const std::function<void(const std::string&)>& progress)
      : opt_(opt), progress_(progress), reader_(opt.trace_path) {}

  json run();

 private:
  void build();
  json replay_layer(const trace::TraceKey& key);
  Step kernel(Kernel& k, bool launch);
  double core_ns(double cycles) const { return cycles * 1e3 / gpu_->config().clocks.core_mhz; }
  void mmio_w(std::size_t unit, std::uint32_t off, std::uint32_t v, const char* what) {
    host_->must_write(MmioBus::window_base(unit) + off, v, what);
  }

  ReplayOptions opt_;
  std::function<void(const std::string&)> progress_;
  trace::TraceReader reader_;
  std::vector<trace::LayerInfo> layers_;
  std::vector<trace::GemmTimes> times_;
  std::unique_ptr<gpu::GpuSystem> gpu_;
  std::vector<std::unique_ptr<SparsityMonitor>> monitors_;
  std::vector<std::unique_ptr<MonitorTap>> taps_;
  std::vector<std::unique_ptr<CompactionEngine>> engines_;  ///< ReplayOptions::engine_count; windows after the monitors'
  std::unique_ptr<MmioBus> bus_;
  std::unique_ptr<MmioHost> host_;
  ReplayContext ctx_;
  std::uint32_t sms_ = 0, line_ = 128;
  bool all_passed_ = true;
  /// host_engine_fetch / host_engine_record: ENGINE_INDEX (and with records COMPL_PTR) programmed, once per run
  bool engine_index_set_ = false;
  /// host_monitor_completion: the monitors' COMPL_PTR programmed, once per run (not charged)
  bool monitor_completion_set_ = false;
};

}  // namespace spartan::hw::replay_detail
