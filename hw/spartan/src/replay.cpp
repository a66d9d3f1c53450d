#include "spartan/hw/replay.h"

#include "replay_impl.h"
#include "units_settings.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <set>

#include "spartan/common/atomic_file.h"
#include "spartan/common/build_info.h"
#include "spartan/common/error.h"
#include "spartan/hw/gpu/gpu_system.h"
#include "spartan/hw/gpu/request.h"
#include "spartan/hw/mmio_bus.h"
#include "spartan/hw/run_hooks.h"
#include "spartan/trace/keys.h"
#include "spartan/trace/metadata.h"
#include "spartan/trace/sptrace.h"

namespace spartan::hw {

namespace {
/// Records the settings detail::visit_units_settings lists, as a run used them, under the units file's own
/// section and key names (so the record can be copied back into a units file). Clocks: 0 = the preset's L2
/// clock.
struct UnitsRecorder {
  nlohmann::json doc = nlohmann::json::object();
  nlohmann::json* cur = nullptr;
  void section(const char* name) { cur = &doc[name]; }
  void u32(const char* key, std::uint32_t x, std::uint64_t, std::uint64_t, const char*) { (*cur)[key] = x; }
  void u64(const char* key, std::uint64_t x, std::uint64_t, std::uint64_t, const char*) { (*cur)[key] = x; }
  void ns(const char* key, double x) { (*cur)[key] = x; }
  void mhz(const char* key, double x) { (*cur)[key] = x; }
  void flag(const char* key, bool x) { (*cur)[key] = x; }
};

nlohmann::json units_settings_json(const ReplayOptions& o) {
  UnitsRecorder r;
  detail::visit_units_settings(o, r);
  return r.doc;
}
}  // namespace

namespace fmt = spartan::format;
using json = nlohmann::json;
using sc_core::sc_time;

std::uint32_t threshold_to_q16(double threshold) {
  const double v = std::round(threshold * 65536.0);
  if (v <= 0) return 0;
  if (v >= 4294967295.0) return 0xFFFFFFFFu;
  return static_cast<std::uint32_t>(v);
}

namespace replay_detail {

void Replay::build() {
  gpu_ = gpu::GpuSystem::from_preset(opt_.gpu);
  const auto& cfg = gpu_->config();
  sms_ = static_cast<std::uint32_t>(gpu_->num_sms());
  line_ = cfg.l2.slice.line_bytes;
  bus_ = std::make_unique<MmioBus>("spartan_mmio");
  host_ = std::make_unique<MmioHost>("host");
  host_->socket.bind(bus_->target);
  for (std::size_t s = 0; s < gpu_->num_l2_slices(); ++s) {
    MonitorConfig mc = opt_.monitor;
    mc.slice_id = static_cast<std::uint32_t>(s);
    mc.clock_mhz = opt_.monitor_clock_mhz > 0 ? opt_.monitor_clock_mhz : cfg.clocks.l2_mhz;
    monitors_.push_back(std::make_unique<SparsityMonitor>(("monitor_" + std::to_string(s)).c_str(), mc));
    bus_->units.bind(monitors_.back()->mmio);
    gpu_->bind_extra_initiator(monitors_.back()->mem, "monitor[" + std::to_string(s) + "]");
    taps_.push_back(std::make_unique<MonitorTap>(*monitors_.back()));
    gpu_->add_l2_write_observer(s, *taps_.back());
  }
  EngineConfig ec = opt_.engine;
  ec.clock_mhz = opt_.engine_clock_mhz > 0 ? opt_.engine_clock_mhz : cfg.clocks.l2_mhz;
  ec.line_bytes = line_;
  if (ec.port_bytes_per_cycle == 0) ec.port_bytes_per_cycle = line_ + cfg.crossbar.header_bytes;  // a line per cycle
  // Engine e owns MMIO window S + e. One engine keeps the names "engine" (module and crossbar port) of the
  // design; several are engine_<e> / engine[<e>], as the monitors.
  const std::uint32_t n_eng = std::max<std::uint32_t>(1, opt_.engine_count);
  for (std::uint32_t e = 0; e < n_eng; ++e) {
    const std::string mod = n_eng == 1 ? "engine" : "engine_" + std::to_string(e);
    engines_.push_back(std::make_unique<CompactionEngine>(mod.c_str(), ec));
    bus_->units.bind(engines_.back()->mmio);
    gpu_->bind_extra_initiator(engines_.back()->mem, n_eng == 1 ? "engine" : "engine[" + std::to_string(e) + "]",
                               ec.port_bytes_per_cycle);
  }
  ctx_.gpu = gpu_.get();
  for (auto& m : monitors_) ctx_.monitors.push_back(m.get());
  for (auto& e : engines_) ctx_.engines.push_back(e.get());
  ctx_.engine = engines_[0].get();
  ctx_.out_dir = opt_.out_dir;
  ctx_.quiet = opt_.quiet;
  ctx_.engine_fetch = opt_.host_engine_fetch;
  ctx_.engine_record = opt_.host_engine_record;
  ctx_.monitor_completion = opt_.host_monitor_completion;
  for (RunExtension* e : opt_.extensions) e->attach(ctx_);
  // End of elaboration: socket bindings are complete before the first register access.
  if (sc_core::sc_get_status() == sc_core::SC_ELABORATION) sc_core::sc_start(sc_core::SC_ZERO_TIME);
}

Step Replay::kernel(Kernel& k, bool launch) {
  const Traffic t0 = traffic(*gpu_);
  const auto r = gpu_->run(k.sources());
  const Traffic t1 = traffic(*gpu_);
  Step s;
  s.name = k.name;
  s.mem_ns = double(r.end_ps - r.start_ps) * 1e-3;
  s.compute_ns = core_ns(k.max_compute_cycles());
  s.overhead_ns = launch ? opt_.baseline.kernel_launch_ns : 0.0;
  s.l2_bytes = t1.l2_bytes - t0.l2_bytes;
  s.dram_bytes = t1.dram_bytes - t0.dram_bytes;
  return s;
}

json Replay::run() {
  trace::check_metadata(reader_);  // the same metadata checks as `spartan-trace check`
  layers_ = trace::read_layers(reader_);
  times_ = trace::read_gemm_times(reader_);
  // Select the captured activations.
  std::vector<trace::TraceKey> keys;
  const std::set<std::int64_t> it_sel(opt_.iterations.begin(), opt_.iterations.end());
  const std::set<std::int64_t> ly_sel(opt_.layers.begin(), opt_.layers.end());
  std::set<std::int64_t> seen_it, seen_ly;
  for (const auto& k : reader_.keys()) {
    if (k.kind != trace::kinds::kAct) continue;
    seen_it.insert(k.iteration);
    seen_ly.insert(k.layer);
    if (!it_sel.empty() && !it_sel.count(k.iteration)) continue;
    if (!ly_sel.empty() && !ly_sel.count(k.layer)) continue;
    keys.push_back(k);
  }
  for (auto i : it_sel)
    if (!seen_it.count(i)) throw InputError("--iterations: iteration " + std::to_string(i) + " was not captured in " + opt_.trace_path);
  for (auto l : ly_sel)
    if (!seen_ly.count(l)) throw InputError("--layers: layer " + std::to_string(l) + " was not captured in " + opt_.trace_path);
  if (keys.empty()) throw InputError(opt_.trace_path + ": no activation tensors (it*/L*/act) to replay");
  // The CompactionEngine refuses (SUBMIT BadValue, compaction_engine.h) a tile over its read buffer or a job
  // over max_job_bytes: reject such a run here, before any layer is simulated.
  for (const auto& k : keys) {
    const trace::TensorInfo* info = reader_.find(k.name());
    if (!info) continue;
    const std::uint64_t eb = trace::dtype_size(info->dtype);
    const std::uint64_t tile_bytes = std::uint64_t(opt_.tile_rows) * opt_.tile_cols * eb;
    if (tile_bytes > opt_.engine.read_buffer_bytes)
      throw InputError("--tile " + std::to_string(opt_.tile_rows) + "x" + std::to_string(opt_.tile_cols) + ": a tile of " +
                       trace::dtype_name(info->dtype) + " elements (" + std::to_string(eb) + " bytes each, " + k.name() +
                       ") is " + std::to_string(tile_bytes) + " bytes, over the CompactionEngine read_buffer_bytes = " +
                       std::to_string(opt_.engine.read_buffer_bytes) + " (use a smaller tile or raise engine.read_buffer_bytes in --units)");
    const auto mv = trace::activation_matrix_view(info->shape);
    // The monitor's counter table must hold every tile of the layer: checked here, before the first layer
    // (an activation too large for the 32-bit grid is rejected by replay_layer's shape check instead).
    if (mv.rows <= 0xFFFFFFFFull && mv.cols <= 0xFFFFFFFFull) {
      const fmt::TileGrid g{static_cast<std::uint32_t>(mv.rows), static_cast<std::uint32_t>(mv.cols), opt_.tile_rows,
                            opt_.tile_cols};
      if (g.num_tiles() > opt_.monitor.counter_entries)
        throw InputError(k.name() + ": " + std::to_string(g.num_tiles()) + " tiles need more monitor counters than the " +
                         std::to_string(opt_.monitor.counter_entries) +
                         " configured (raise monitor.counter_entries with --units, or use larger tiles)");
    }
    if (mv.rows * mv.cols * eb > opt_.engine.max_job_bytes)
      throw InputError(k.name() + ": the activation is " + std::to_string(mv.rows * mv.cols * eb) +
                       " bytes, over the CompactionEngine max_job_bytes = " + std::to_string(opt_.engine.max_job_bytes) +
                       " (raise engine.max_job_bytes in --units)");
  }
  std::set<std::int64_t> replayed;
  for (const auto& k : keys) replayed.insert(k.layer);
  ctx_.replayed_layers.assign(replayed.begin(), replayed.end());

  build();
  json doc;
  json layer_docs = json::array();
  PathTotals sw_prof, sw_conv, hw_prof, hw_conv;
  double dense_ms = 0, sparse_ms = 0;
  bool have_times = true, times_on_gpu = true, mixed_devices = false;
  std::string gemm_device;
  // The compacted output against the dense activations (review finding F8): bytes over all layers.
  std::uint64_t out_dense = 0, out_payload = 0, out_headers = 0, out_consumer = 0, out_by_size = 0;
  for (const auto& k : keys) {
    trace::TraceKey kk = k;
    ReplayLayer rl{k.iteration, k.layer, "", 0, 0};
    for (RunExtension* e : opt_.extensions) e->layer_begin(rl);
    json L = replay_layer(kk);
    for (RunExtension* e : opt_.extensions) e->layer_end(rl, L);
    const auto& sw = L["software"];
    const auto& hw = L["hardware"];
    sw_prof.ns += sw["profile"]["time_ns"].get<double>();
    sw_conv.ns += sw["convert"]["time_ns"].get<double>();
    hw_prof.ns += hw["profile"]["time_ns"].get<double>();
    hw_conv.ns += hw["convert"]["time_ns"].get<double>();
    sw_prof.l2 += sw["profile"]["l2_bytes"].get<std::uint64_t>();
    sw_prof.dram += sw["profile"]["dram_bytes"].get<std::uint64_t>();
    sw_conv.l2 += sw["convert"]["l2_bytes"].get<std::uint64_t>();
    sw_conv.dram += sw["convert"]["dram_bytes"].get<std::uint64_t>();
    hw_prof.l2 += hw["profile"]["l2_bytes"].get<std::uint64_t>();
    hw_prof.dram += hw["profile"]["dram_bytes"].get<std::uint64_t>();
    hw_conv.l2 += hw["convert"]["l2_bytes"].get<std::uint64_t>();
    hw_conv.dram += hw["convert"]["dram_bytes"].get<std::uint64_t>();
    out_dense += L["dense_bytes"].get<std::uint64_t>();
    out_payload += hw["payload_bytes"].get<std::uint64_t>();
    out_headers += fmt::kHeaderBytes * L["tiles"].get<std::uint64_t>();
    out_consumer += static_cast<std::uint64_t>(L["consumer"]["l2_bytes"].get<double>());
    out_by_size += hw["engine_tiles"]["dense_by_size"].get<std::uint64_t>();
    // The overall GEMM ratio needs positive dense and tile-sparse times on every replayed layer (a 0 ms entry,
    // which a writer records for a pass it did not time, would keep the other time in one sum alone), all
    // measured on one device.
    if (L["gemm"].contains("dense_ms") && L["gemm"]["dense_ms"].get<double>() > 0 &&
        L["gemm"]["tile_sparse_ms"].is_number() && L["gemm"]["tile_sparse_ms"].get<double>() > 0) {
      dense_ms += L["gemm"]["dense_ms"].get<double>();
      sparse_ms += L["gemm"]["tile_sparse_ms"].get<double>();
      const std::string dev = L["gemm"]["device"].get<std::string>();
      if (gemm_device.empty()) gemm_device = dev;
      if (dev != gemm_device) mixed_devices = true;
      times_on_gpu = times_on_gpu && gemm_times_on_gpu(dev);
    } else {
      have_times = false;
    }
    if (progress_ && !opt_.quiet) progress_(L["progress"].get<std::string>());
    L.erase("progress");
    layer_docs.push_back(std::move(L));
  }
  std::uint64_t mismatches = 0;
  for (RunExtension* e : opt_.extensions) mismatches += e->mismatches();

  doc["tool"] = "spartan-sim run";
  doc["build"] = build_info_json<nlohmann::json>();
  doc["trace"] = {{"path", opt_.trace_path},
                  {"model", reader_.metadata().count(trace::keys::kModel) ? reader_.metadata().at(trace::keys::kModel) : ""},
                  {"device", reader_.metadata().count(trace::keys::kDevice) ? reader_.metadata().at(trace::keys::kDevice) : ""}};
  doc["gpu"] = {{"preset", gpu_->config().name}, {"file", gpu_->config().file}, {"sms", sms_}, {"l2_slices", gpu_->num_l2_slices()},
                {"l2_mhz", gpu_->config().clocks.l2_mhz}, {"core_mhz", gpu_->config().clocks.core_mhz},
                {"monitor_mhz", monitors_.empty() ? 0.0 : monitors_[0]->config().clock_mhz},
                {"engine_mhz", engines_[0]->config().clock_mhz},
                {"engine_port_bytes_per_cycle", engines_[0]->config().port_bytes_per_cycle},
                {"engines", engines_.size()}};
  doc["options"] = {{"format", opt_.format == fmt::TileFormat::Ell ? "ell" : "bitmap"},
                    {"tile", std::to_string(opt_.tile_rows) + "x" + std::to_string(opt_.tile_cols)},
                    {"threshold", opt_.threshold}, {"threshold_q16", threshold_to_q16(opt_.threshold)},
                    {"size_rule", opt_.size_rule},
                    {"sampling_shift", opt_.sampling},
                    {"kernel_launch_ns", opt_.baseline.kernel_launch_ns},
                    {"host_mmio_read_ns", opt_.host_mmio_read_ns}, {"host_mmio_write_ns", opt_.host_mmio_write_ns},
                    {"host_monitor_broadcast", opt_.host_monitor_broadcast},
                    {"units_file", opt_.units_file}, {"units", units_settings_json(opt_)}};
  doc["layers"] = layer_docs;
  json overall;
  overall["layers"] = layer_docs.size();
  overall["profile"] = {{"sw_ns", sw_prof.ns}, {"hw_ns", hw_prof.ns},
                        {"ratio", hw_prof.ns > 0 ? sw_prof.ns / hw_prof.ns : 0.0},
                        {"sw_l2_bytes", sw_prof.l2}, {"sw_dram_bytes", sw_prof.dram},
                        {"hw_l2_bytes", hw_prof.l2}, {"hw_dram_bytes", hw_prof.dram}};
  // The count-table memset of every layer is charged its memory time only: it depends on nothing the layer
  // computes, so the driver can issue it ahead (e.g. one memset of every layer's table per iteration), off the
  // layer's critical path, where the software kernels all wait for the producer's output. The figures with
  // one launch per memset, as if it ran in the layer's stream like the software kernels, bound that
  // assumption (review finding 102).
  {
    const double hw_launched = hw_prof.ns + double(layer_docs.size()) * opt_.baseline.kernel_launch_ns;
    overall["profile"]["memset_launched"] = {{"hw_ns", hw_launched},
                                             {"ratio", hw_launched > 0 ? sw_prof.ns / hw_launched : 0.0}};
  }
  overall["convert"] = {{"sw_ns", sw_conv.ns}, {"hw_ns", hw_conv.ns},
                        {"ratio", hw_conv.ns > 0 ? sw_conv.ns / hw_conv.ns : 0.0},
                        {"sw_l2_bytes", sw_conv.l2}, {"sw_dram_bytes", sw_conv.dram},
                        {"hw_l2_bytes", hw_conv.l2}, {"hw_dram_bytes", hw_conv.dram}};
  overall["output"] = {{"dense_bytes", out_dense}, {"payload_bytes", out_payload}, {"header_bytes", out_headers},
                       {"consumer_l2_bytes", out_consumer}, {"tiles_dense_by_size", out_by_size}};
  // Mean of the per-layer profiling ratios (the paper's "52.5x on average" is a mean over layers).
  double mean_ratio = 0, mean_relu = 0;
  std::size_t n_relu = 0;
  for (const auto& L : layer_docs) {
    mean_ratio += L["profile_ratio"].get<double>();
    if (L["relu_input"].get<bool>()) mean_relu += L["profile_ratio"].get<double>(), ++n_relu;
  }
  overall["profile"]["mean_layer_ratio"] = layer_docs.empty() ? 0.0 : mean_ratio / double(layer_docs.size());
  // The same over the layers whose input is a ReLU output (the network's input image is not; review F11).
  overall["profile"]["relu_input_layers"] = n_relu;
  // null, not 0, when there is no such layer: a mean over an empty set is not a ratio of 0.
  overall["profile"]["mean_layer_ratio_relu_inputs"] = n_relu ? json(mean_relu / double(n_relu)) : json(nullptr);
  if (have_times && mixed_devices) {
    overall["speedup_unavailable"] = "the GEMM times of the replayed layers come from different devices";
  } else if (!have_times) {
    overall["speedup_unavailable"] = "the trace lacks positive dense and tile-sparse GEMM times for some layers";
  }
  if (have_times && !mixed_devices && sparse_ms > 0) {
    // The GEMMs alone (sum of the measured times), and, only for GPU-measured times, with the simulated
    // profile and conversion added (replay_layer.cpp, review finding F1).
    overall["speedup"] = {{"device", gemm_device}, {"dense_ms", dense_ms}, {"tile_sparse_ms", sparse_ms},
                          {"gemm_measured", dense_ms / sparse_ms}};
    if (times_on_gpu) {
      overall["speedup"]["software"] = layer_speedup(dense_ms, sparse_ms, sw_prof.ns + sw_conv.ns);
      overall["speedup"]["hardware"] = layer_speedup(dense_ms, sparse_ms, hw_prof.ns + hw_conv.ns);
      overall["speedup"]["note"] =
          "the GEMM consumes im2col of the activation (k x k times larger for a k x k conv), while profile and "
          "conversion are simulated on the activation as the producer writes it";
    }
  }
  doc["overall"] = overall;
  doc["checks"] = {{"passed", all_passed_ && mismatches == 0}, {"extension_mismatches", mismatches}};
  doc["units"] = json::object();
  {
    json mon = json::array();
    for (auto& m : monitors_) {
      const auto& s = m->stats();
      mon.push_back({{"slice", m->config().slice_id}, {"lines_seen", s.lines_seen}, {"lines_matched", s.lines_matched},
                     {"lines_sampled", s.lines_sampled}, {"elements_counted", s.elements_counted},
                     {"nonzero_counted", s.nonzero_counted}, {"partial_elements", s.partial_elements},
                     {"counter_entries_used_peak", s.counter_entries_used_peak},
                     {"counter_occupancy_peak", double(s.counter_entries_used_peak) / m->config().counter_entries},
                     {"flush_count", s.flush_count}, {"flush_rmw_groups", s.flush_rmw_groups},
                     {"flush_bytes_read", s.flush_bytes_read}, {"flush_bytes_written", s.flush_bytes_written},
                     {"flush_ps", s.flush_ps},
                     {"clears", s.clears}, {"completion_adds", s.completion_adds},
                     {"busy_ps", s.busy_ps}, {"backpressure_ps", s.backpressure_ps},
                     {"arrivals_out_of_order", s.arrivals_out_of_order},
                     {"arrivals_out_of_order_ps", s.arrivals_out_of_order_ps},
                     {"flush_drain_wait_ps", s.flush_drain_wait_ps},
                     {"mmio_reads", s.mmio_reads}, {"mmio_writes", s.mmio_writes}, {"mmio_errors", s.mmio_errors}});
    }
    doc["units"]["monitors"] = mon;
    // The engines' counters summed (one engine: its own), and with several engines each one's beside them.
    const auto engine_json = [](const EngineStats& e) {
      return json{{"jobs", e.jobs}, {"job_errors", e.job_errors}, {"tiles", e.tiles},
                  {"tiles_dense", e.tiles_dense}, {"tiles_zero", e.tiles_zero},
                  {"tiles_compacted", e.tiles_compacted},
                  {"tiles_dense_by_size", e.tiles_dense_by_size}, {"reads", e.reads},
                  {"bytes_read", e.bytes_read}, {"table_bytes_read", e.table_bytes_read},
                  {"writes", e.writes}, {"payload_bytes_written", e.payload_bytes_written},
                  {"header_bytes_written", e.header_bytes_written}, {"busy_ps", e.busy_ps},
                  {"compactor_busy_ps", e.compactor_busy_ps}, {"buffer_stall_ps", e.buffer_stall_ps},
                  {"mmio_reads", e.mmio_reads}, {"mmio_writes", e.mmio_writes},
                  {"mmio_errors", e.mmio_errors}, {"descriptor_fetches", e.descriptor_fetches},
                  {"descriptor_fetch_errors", e.descriptor_fetch_errors},
                  {"completion_records", e.completion_records},
                  {"completion_record_errors", e.completion_record_errors}};
    };
    json sum = engine_json(engines_[0]->stats());
    for (std::size_t i = 1; i < engines_.size(); ++i) {
      const json one = engine_json(engines_[i]->stats());
      for (auto it = one.begin(); it != one.end(); ++it) sum[it.key()] = sum[it.key()].get<std::uint64_t>() + it->get<std::uint64_t>();
    }
    sum["count"] = engines_.size();
    if (engines_.size() > 1) {
      json each = json::array();
      for (auto& e : engines_) each.push_back(engine_json(e->stats()));
      sum["per_engine"] = each;
    }
    doc["units"]["engine"] = sum;
  }
  doc["gpu_stats"] = gpu_->stats_json();
  ensure_output_dir(opt_.out_dir);  // extensions may write their files there too
  for (RunExtension* e : opt_.extensions) e->finish(doc);
  // Both files are written and synced to temporaries first (a full disk shows in sync()), then the stale
  // files go and both are renamed, so a failure writing either leaves --out as it was, never a new
  // stats.json beside an old summary.txt.
  AtomicFile stats_file(opt_.out_dir + "/stats.json"), summary_file(opt_.out_dir + "/summary.txt");
  stats_file.write(doc.dump(1) + "\n");
  summary_file.write(replay_summary(doc));
  stats_file.sync();
  summary_file.sync();
  for (const auto& [path, note] : opt_.stale_outputs) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(path, ec) && std::filesystem::remove(path, ec) && !note.empty())
      std::fprintf(stderr, "%s\n", note.c_str());
  }
  stats_file.commit();
  summary_file.commit();
  return doc;
}

}  // namespace replay_detail

nlohmann::json run_replay(const ReplayOptions& opt, const std::function<void(const std::string&)>& progress) {
  replay_detail::Replay r(opt, progress);
  return r.run();
}

}  // namespace spartan::hw
