// Registration point for extensions of `spartan-sim run` (trace replay), so that e.g. the RTL
// co-simulation (--rtl, --wave, --wave-window; rtl/) plugs in without editing sim/src/cmd_run.cpp.
//
// An extension declares command-line options; cmd_run adds them to its parser and, when any of them is
// given, calls the extension at fixed points of the replay:
//   attach()       once, after the GPU and the units are built and before the simulation starts
//                  (SystemC elaboration: create modules, add observers to monitors/engine here);
//   layer_begin()  before a captured (iteration, layer) is replayed;
//   layer_end()    after it, with the layer's JSON record (add fields; report mismatches);
//   finish()       at the end, with the whole stats.json document (add a section).
// The replay fails (exit 1 after writing its outputs) if any extension reports mismatches > 0.
//
// Register from an object file linked DIRECTLY into spartan-sim (e.g. a sim/src/cmd_<name>.cpp): a static
// registration object inside a static library is dropped by the linker when nothing references it.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace spartan::hw {

namespace gpu {
class GpuSystem;
}
class SparsityMonitor;
class CompactionEngine;

/// What an extension sees of the replay.
struct ReplayContext {
  gpu::GpuSystem* gpu = nullptr;
  std::vector<SparsityMonitor*> monitors;  ///< index = L2 slice
  CompactionEngine* engine = nullptr;      ///< engines[0]
  std::vector<CompactionEngine*> engines;  ///< every engine (ReplayOptions::engine_count), block order
  std::string out_dir;                     ///< the run's --out directory (extensions may write files there)
  bool quiet = false;
  std::vector<std::int64_t> replayed_layers;  ///< layer indices the run replays (sorted, unique)
  /// ReplayOptions::host_engine_fetch: the engines fetch their descriptors (regmap engine::FETCH)
  bool engine_fetch = false;
  /// ReplayOptions::host_engine_record: the engines write completion records (regmap engine::COMPL_PTR)
  bool engine_record = false;
  /// ReplayOptions::host_monitor_completion: the monitors add to a completion counter (regmap monitor::COMPL_PTR)
  bool monitor_completion = false;
};

/// One captured (iteration, layer) as replayed.
struct ReplayLayer {
  std::int64_t iteration = 0, layer = 0;
  std::string name;
  std::uint32_t rows = 0, cols = 0;  ///< activation matrix view (docs/hw-units.md, "Trace replay")
};

/// A command-line option of an extension: `--name` (flag) or `--name VALUE`.
struct ExtensionOption {
  std::string name, help;
  bool takes_value = false;
  bool given = false;  ///< set by cmd_run
  std::string value;   ///< set by cmd_run when takes_value
};

class RunExtension {
 public:
  virtual ~RunExtension() = default;
  virtual std::string name() const = 0;
  /// The options this extension adds (cmd_run fills `given`/`value`).
  virtual std::vector<ExtensionOption>& options() = 0;
  /// Active iff any of its options was given.
  bool active() {
    for (auto& o : options())
      if (o.given) return true;
    return false;
  }
  virtual void attach(ReplayContext& ctx) = 0;
  virtual void layer_begin(const ReplayLayer&) {}
  virtual void layer_end(const ReplayLayer&, nlohmann::json& layer_record) { (void)layer_record; }
  virtual void finish(nlohmann::json& stats) { (void)stats; }
  /// Mismatches found so far (a non-zero value makes the run fail).
  virtual std::uint64_t mismatches() const { return 0; }
  /// Files this extension writes into --out (names relative to it). When the extension is not active, a
  /// run removes them from --out, so that no output of an earlier run is mistaken for this run's.
  virtual std::vector<std::string> output_files() const { return {}; }
  /// Output files named by this extension's options as given (option, path), e.g. {"--wave", FILE}; cmd_run
  /// checks them against the run's inputs before anything is read or written.
  virtual std::vector<std::pair<std::string, std::string>> output_options() const { return {}; }
};

using RunExtensionFactory = std::function<std::unique_ptr<RunExtension>()>;

/// The registered extension factories (in registration order).
std::vector<RunExtensionFactory>& run_extensions();

struct RunExtensionRegistration {
  explicit RunExtensionRegistration(RunExtensionFactory f) { run_extensions().push_back(std::move(f)); }
};

}  // namespace spartan::hw
