// spartan-sim run: trace-driven co-simulation of the SparsityMonitor and CompactionEngine against the
// software baselines on the GPU memory model (docs/hw-units.md, "Trace replay"). Extensions registered
// through spartan/hw/run_hooks.h (e.g. --rtl) add their options here without editing this file.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "spartan/common/atomic_file.h"
#include "spartan/common/cli_checks.h"
#include "spartan/common/error.h"
#include "spartan/format/tile_format.h"
#include "spartan/sim/command.h"

#if defined(SPARTAN_HAVE_REPLAY)
#include "spartan/hw/replay.h"
#include "spartan/hw/run_hooks.h"
#endif

namespace po = boost::program_options;

namespace {

#if defined(SPARTAN_HAVE_REPLAY)

// Iteration / layer lists: the one strict parser (spartan-sim rtl-check and run --rtl-layers use it too).
std::vector<std::int64_t> parse_list(const std::string& opt, const std::string& text) {
  std::vector<std::int64_t> v;
  for (std::uint64_t x : spartan::parse_decimal_list(text, opt)) {
    if (x > std::uint64_t(INT64_MAX)) throw spartan::InputError(opt + ": " + std::to_string(x) + " is beyond 2^63 - 1");
    v.push_back(std::int64_t(x));
  }
  return v;
}

int run_main(const std::vector<std::string>& args) {
  spartan::hw::ReplayOptions opt;
  std::string format = "ell", tile = "32x32", iterations, layers, units;
  bool no_size_rule = false;
  po::options_description desc(
      "spartan-sim run --trace FILE --out DIR [options]\n"
      "Replays the captured activations of a .sptrace through the GPU memory model with one SparsityMonitor per\n"
      "L2 slice and a CompactionEngine, beside the software profiling/conversion kernels; writes DIR/stats.json\n"
      "and DIR/summary.txt. Exit 0: all functional checks passed; 1: a check failed; 2: bad input.\n\noptions");
  desc.add_options()("help,h", "show this help")(
      "trace", po::value(&opt.trace_path), "input trace (.sptrace from spartan-train)")(
      "gpu", po::value(&opt.gpu)->default_value("v100"), "GPU preset name (<name>.yaml in $SPARTAN_GPU_CONFIG_DIR, else in the source tree's sim/configs/gpu) or YAML path")(
      "format", po::value(&format)->default_value("ell"), "sparse tile format: ell or bitmap")(
      "tile", po::value(&tile)->default_value("32x32"), "tile size ROWSxCOLS (powers of two, 1..256); ROWS*COLS*element bytes must fit the engine's read_buffer_bytes "
      "(--units engine.read_buffer_bytes, default 16384: at most 64x64 F32 or 64x128 F16)")(
      "threshold", po::value(&opt.threshold)->default_value(0.5), "density at or above which a tile stays DENSE (0 to 65536; above 1 none does)")(
      "no-size-rule", po::bool_switch(&no_size_rule),
      "let a sparse tile be larger than its dense bytes (default: such a tile stays DENSE, docs/tile-format.md)")(
      "sampling", po::value(&opt.sampling)->default_value(0), "monitor sampling shift s: count 1 of 2^s lines (0..15)")(
      "iterations", po::value(&iterations), "comma-separated iterations to replay (default: all captured)")(
      "layers", po::value(&layers), "comma-separated layer indices to replay (default: all captured)")(
      "units", po::value(&units), "YAML with monitor/engine/baseline/host parameters (docs/hw-units.md)")(
      "quiet,q", po::bool_switch(&opt.quiet), "no progress lines, no summary on stdout")(
      "out", po::value(&opt.out_dir), "output directory (created if missing)");
  // Extensions (run_hooks.h).
  std::vector<std::unique_ptr<spartan::hw::RunExtension>> exts;
  for (auto& make : spartan::hw::run_extensions()) exts.push_back(make());
  for (auto& e : exts)
    for (auto& o : e->options()) {
      if (o.takes_value)
        desc.add_options()(o.name.c_str(), po::value<std::string>(), o.help.c_str());
      else
        desc.add_options()(o.name.c_str(), po::bool_switch(), o.help.c_str());
    }
  po::variables_map vm;
  if (!spartan::parse_options_or_help(args, desc, vm)) return 0;
  for (auto& e : exts)
    for (auto& o : e->options()) {
      if (!vm.count(o.name)) continue;
      if (o.takes_value) {
        o.given = true;
        o.value = vm[o.name].as<std::string>();
      } else {
        o.given = vm[o.name].as<bool>();
      }
    }
  if (opt.trace_path.empty()) throw spartan::InputError("--trace is required (see --help)");
  if (opt.out_dir.empty()) throw spartan::InputError("--out is required (see --help)");
  if (format == "ell")
    opt.format = spartan::format::TileFormat::Ell;
  else if (format == "bitmap")
    opt.format = spartan::format::TileFormat::Bitmap;
  else
    throw spartan::InputError("--format: expected ell or bitmap, got '" + format + "'");
  {
    const auto ts = spartan::format::parse_tile_size(tile, "--tile");  // the one RxC parser (rtl-check, bench-gemm)
    if (!spartan::hw::regmap::tile_dim_valid(ts.rows) || !spartan::hw::regmap::tile_dim_valid(ts.cols))
      throw spartan::InputError("--tile: expected ROWSxCOLS with powers of two from 1 to 256, got '" + tile + "'");
    opt.tile_rows = ts.rows;
    opt.tile_cols = ts.cols;
  }
  opt.size_rule = !no_size_rule;
  // Above 1 no tile is dense enough to stay DENSE; 65536 is the range of the engine's 32-bit Q16.16 threshold register.
  if (!(opt.threshold >= 0.0) || opt.threshold > 65536.0)
    throw spartan::InputError("--threshold: expected a density from 0 to 65536 (above 1: no tile is kept dense), got " +
                              spartan::format_g(opt.threshold));
  if (opt.sampling > 15) throw spartan::InputError("--sampling: expected 0..15, got " + std::to_string(opt.sampling));
  // (An empty list or path is refused by check_parsed_options, like every empty value.)
  if (!iterations.empty()) opt.iterations = parse_list("--iterations", iterations);
  if (!layers.empty()) opt.layers = parse_list("--layers", layers);
  if (!units.empty()) spartan::hw::load_units_config(units, opt);
  if (!std::filesystem::exists(opt.trace_path)) throw spartan::IoError("--trace: cannot open '" + opt.trace_path + "'");
  // Checked now, created only when the results are written (a rejected input leaves no empty --out).
  spartan::check_output_dir(opt.out_dir);
  {
    // Every file this run writes: none may be a directory (checked before the replay, so that a failure
    // cannot come after stats.json was written) or one of the run's inputs (it would be replaced while read).
    std::vector<std::pair<std::string, std::string>> outs;
    // (Inactive extensions' files are removed below as stale outputs: they may not be inputs either.)
    std::vector<std::string> names = {"stats.json", "summary.txt"};
    for (const auto& e : exts)
      for (const auto& f : e->output_files()) names.push_back(f);
    for (const auto& f : names) {
      const std::string p = (std::filesystem::path(opt.out_dir) / f).string();
      spartan::check_output_not_directory("--out", p);
      outs.emplace_back("--out", p);
    }
    for (const auto& e : exts)
      if (e->active())
        for (const auto& o : e->output_options()) outs.push_back(o);
    spartan::check_distinct_outputs(outs);
    // --gpu: a preset name is no file here (skipped); a YAML path is.
    spartan::check_outputs_not_inputs(outs, {{"--trace", opt.trace_path}, {"--units", units}, {"--gpu", opt.gpu}});
  }
  for (auto& e : exts) {
    if (e->active()) {
      opt.extensions.push_back(e.get());
      continue;
    }
    // A stale output of an inactive extension (e.g. rtl_cycles.json of an earlier --rtl run) would be read
    // by later steps (spartan-area --cycles) as if this run had produced it.
    // Removed by the replay only once it succeeded (a rejected run must leave --out as it was).
    for (const auto& f : e->output_files()) {
      const std::filesystem::path p = std::filesystem::path(opt.out_dir) / f;
      opt.stale_outputs.emplace_back(p.string(), opt.quiet ? std::string()
                                                           : "spartan-sim run: removed " + p.string() +
                                                                 " of an earlier run (no --" + e->name() + " this time)");
    }
  }

  const auto doc = spartan::hw::run_replay(opt, [](const std::string& line) {
    std::fprintf(stderr, "%s\n", line.c_str());
    std::fflush(stderr);
  });
  if (!opt.quiet) std::printf("%s", spartan::hw::replay_summary(doc).c_str());
  return doc["checks"]["passed"].get<bool>() ? 0 : 1;
}

spartan::sim::CommandRegistration reg(
    "run", {"replay a training trace: SparsityMonitor + CompactionEngine vs software baselines", run_main});

#else

spartan::sim::CommandRegistration reg(
    "run", {"(unavailable: built without the GPU model or the trace library)", [](const std::vector<std::string>&) -> int {
              throw spartan::Error("spartan-sim run: this build lacks hw/gpu or the trace library", 1);
            }});

#endif

}  // namespace
