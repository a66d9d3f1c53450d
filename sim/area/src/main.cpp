// spartan-area: area, timing and latency of the Spartan units from their RTL.
//   spartan-area --gpu v100 --out DIR [--rtl-dir rtl] [--manifest FILE] [--liberty FILE] [--clock-ns 10]
//                [--cycles FILE] [--memory-model sram|ff] [--gpu-config-dir DIR]
// Writes DIR/area.json, DIR/area.md and DIR/netlists/<unit>.v, all or nothing (atomic, after every unit
// succeeded). Bad input (missing tool or liberty, Yosys error, bad config) -> one line, exit 2.
#include <boost/program_options.hpp>
#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <iostream>
#include <sstream>

#include "spartan/area/cleanup.h"
#include "spartan/area/flow.h"
#include "spartan/area/report.h"
#include "spartan/area/scaling.h"
#include "spartan/common/atomic_file.h"
#include "spartan/common/cli.h"
#include "spartan/common/cli_checks.h"
#include "spartan/common/error.h"

namespace po = boost::program_options;
namespace fs = std::filesystem;
using namespace spartan;
using namespace spartan::area;

namespace {

/// Marks a unit directory that spartan-area --keep-work wrote; only such a directory is replaced by a later run.
constexpr const char* kKeepMarker = ".spartan-area-work";

/// Throws IoError if DIR/name exists and is not an earlier --keep-work copy (no kKeepMarker in it).
void check_keep_entry(const std::string& dir, const std::string& name) {
  const fs::path p = fs::path(dir) / name;
  std::error_code ec;
  if (fs::exists(fs::symlink_status(p, ec)) && !fs::exists(p / kKeepMarker, ec))
    throw spartan::IoError("--keep-work: " + p.string() +
                           " exists and is not an earlier spartan-area copy; remove it or choose another directory");
}


// --nodes: a comma-separated list of supported nodes in nm (parse_decimal_list: digits only, no empty item,
// no node twice; "16," and " 16" used to pass, and 4294967312 wrapped to 16). 180, the synthesis node, is
// always reported first; naming it is allowed.
std::vector<int> parse_nodes(const std::string& s) {
  std::vector<int> out{180};
  if (s.empty()) throw InputError("--nodes: empty list (give target nodes in nm, e.g. 45,16,7,5)");
  for (const std::uint64_t v : spartan::parse_decimal_list(s, "--nodes")) {
    if (v == 0 || v > 1000) throw InputError("--nodes: bad node '" + std::to_string(v) + "' (nm)");
    tech_node(static_cast<int>(v));  // validates
    if (v != 180) out.push_back(static_cast<int>(v));
  }
  return out;
}

int run(int argc, char** argv) {
  // Before any thread starts: an interrupt removes the scratch directory and ends the running tools.
  install_interrupt_cleanup();
  std::string gpu, out, rtl_dir = "rtl", manifest, cycles_file, gpu_dir, mem_model = "sram",
                         nodes = "45,16,7,5", keep_work;
  ToolConfig tools;
  unsigned engines = 0, jobs = 0;
  bool no_buffering = false;
  po::options_description desc("spartan-area options");
  desc.add_options()("help,h", "this help")("gpu", po::value(&gpu)->required(), "GPU preset name or YAML path")(
      "out", po::value(&out)->required(), "output directory (area.json, area.md, netlists/)")(
      "rtl-dir", po::value(&rtl_dir)->default_value(rtl_dir), "RTL directory (uses <rtl-dir>/units.txt or manifest.yaml)")(
      "manifest", po::value(&manifest), "unit manifest (YAML/JSON; see docs/area.md)")(
      "liberty", po::value(&tools.liberty)->default_value(tools.liberty),
      "standard-cell liberty: a 180 nm library (the scaling tables start at 180 nm) with time_unit 1ns (checked)")(
      "clock-ns", po::value(&tools.clock_ns)->default_value(tools.clock_ns), "STA clock period, ns (0.01..1000)")(
      "cycles", po::value(&cycles_file), "RTL co-simulation cycle counts (JSON; see docs/area.md)")(
      "memory-model", po::value(&mem_model)->default_value(mem_model), "memories in the totals: sram | ff")(
      "nodes", po::value(&nodes)->default_value(nodes), "target nodes, nm (from 180 130 90 65 45 32 20 16 14 10 7 5; with --memory-model sram: 180 45 32 16 7 5)")(
      "engines", po::value(&engines), "compaction engines per GPU, 1..1024 (default 1, as spartan-sim run's default --units engine.count)")(
      "jobs,j", po::value(&jobs), "units synthesised in parallel, 1..1024 (default or 0: the number of CPUs)")(
      "gpu-config-dir", po::value(&gpu_dir),
      "directory of GPU presets (default: the simulator's, as spartan-sim --gpu; must exist)")(      "yosys", po::value(&tools.yosys)->default_value(tools.yosys), "Yosys binary")(
      "sta", po::value(&tools.sta)->default_value(tools.sta), "OpenSTA binary")(
      "ff-memory-limit-bits", po::value(&tools.ff_memory_limit_bits)->default_value(tools.ff_memory_limit_bits),
      "largest SRAM-eligible memory (bits per unit, 0..2^30) also synthesised as flip-flops")(
      "no-buffering", po::bool_switch(&no_buffering), "plain `abc -liberty` (no buffering or gate sizing)")(
      "buffer-cell", po::value(&tools.buffer_cell)->default_value(tools.buffer_cell),
      "liberty buffer 'CELL IN OUT' used to remove assigns from the STA netlist")(
      "keep-work", po::value(&keep_work), "copy the scratch directory (scripts, logs) here for inspection");
  po::variables_map vm;
  const auto parsed = po::parse_command_line(argc, argv, desc);
  spartan::check_parsed_options(parsed);
  po::store(parsed, vm);
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  po::notify(vm);
  tools.abc_buffering = !no_buffering;
  // --buffer-cell goes into the Yosys script: three names (cell, input pin, output pin).
  std::vector<std::string> buffer;
  {
    std::istringstream bc(tools.buffer_cell);
    for (std::string x; bc >> x;) buffer.push_back(x);
    if (buffer.size() != 3 || !std::all_of(buffer.begin(), buffer.end(), is_verilog_identifier))
      throw InputError("--buffer-cell must be 'CELL IN OUT' (three liberty names), not '" + tools.buffer_cell + "'");
    tools.buffer_cell = buffer[0] + " " + buffer[1] + " " + buffer[2];
  }
  // Absolute, so that the scripts kept by --keep-work run from anywhere.
  if (!tools.liberty.empty()) tools.liberty = fs::absolute(tools.liberty).lexically_normal().string();
  // A non-finite or non-positive period would make OpenSTA loop or divide by zero.
  // Outside 0.01..1000 ns (100 GHz..1 MHz) the period is a unit mistake, and Yosys/OpenSTA fail unclearly.
  if (!std::isfinite(tools.clock_ns) || tools.clock_ns < 0.01 || tools.clock_ns > 1000.0)
    throw InputError("--clock-ns must be a finite period from 0.01 to 1000 ns, not " + spartan::format_g(tools.clock_ns));
  if (tools.ff_memory_limit_bits > (std::uint64_t(1) << 30))
    throw InputError("--ff-memory-limit-bits must be 0..2^30, not " + std::to_string(tools.ff_memory_limit_bits));
  if (vm.count("engines") && (engines < 1 || engines > 1024))
    throw InputError("--engines must be 1..1024, not " + std::to_string(engines));
  if (jobs > spartan::kMaxThreads) throw InputError("--jobs must be 1..1024 (0 = the number of CPUs), not " + std::to_string(jobs));
  ReportOptions ropt;
  if (mem_model == "sram") ropt.memory_model = MemoryModel::kSram;
  else if (mem_model == "ff") ropt.memory_model = MemoryModel::kFlipFlops;
  else throw InputError("--memory-model must be 'sram' or 'ff', not '" + mem_model + "'");
  ropt.nodes_nm = parse_nodes(nodes);
  ropt.clock_ns = tools.clock_ns;
  ropt.liberty = tools.liberty;
  ropt.abc_buffering = tools.abc_buffering;

  // Everything that can be checked before the (slow) tools run.
  const ToolVersions versions = check_tools(tools);
  ropt.yosys_version = versions.yosys;
  ropt.sta_version = versions.sta;
  const std::string liberty_text = read_file(tools.liberty);  // readable: check_tools read it
  ropt.nand2 = find_nand2_cell(liberty_text);
  if (!liberty_has_buffer(liberty_text, buffer[0], buffer[1], buffer[2]))
    throw InputError("--buffer-cell '" + tools.buffer_cell + "': the liberty " + tools.liberty + " has no cell " + buffer[0] +
                     " whose pin " + buffer[2] + " is a buffer of pin " + buffer[1]);
  GpuInfo g = load_gpu(gpu, gpu_dir);
  // Every node the report scales to needs its SRAM bit cell when memories count as SRAM (the GPU's node too,
  // for its share of the die): a missing figure used to fail after the whole synthesis.
  if (ropt.memory_model == MemoryModel::kSram) {
    std::vector<int> need = ropt.nodes_nm;
    if (g.process_node_nm != 0) need.push_back(g.process_node_nm);
    for (int nm : need)
      if (sram_bitcell_source(nm).empty())
        throw InputError("no SRAM bit-cell figure for " + std::to_string(nm) + " nm" +
                         (nm == g.process_node_nm && std::find(ropt.nodes_nm.begin(), ropt.nodes_nm.end(), nm) == ropt.nodes_nm.end()
                              ? " (the node of --gpu " + gpu + ")" : std::string(" (--nodes)")) +
                         ": with --memory-model sram the nodes are 180, 45, 32, 16, 7 and 5 (or use --memory-model ff)");
  }
  if (vm.count("engines")) {
    if (engines == 0) throw InputError("--engines must be at least 1");
    g.engines = engines;
    g.engines_assumed = false;
    g.source += "; engines from --engines";
  }
  std::optional<CycleCounts> cycles;
  if (!cycles_file.empty()) cycles = parse_cycle_counts(read_file(cycles_file), cycles_file);
  for (const char* m : {"units.txt", "manifest.yaml"})
    if (manifest.empty() && fs::exists(fs::path(rtl_dir) / m)) manifest = (fs::path(rtl_dir) / m).string();
  const std::vector<UnitSpec> specs = manifest.empty() ? default_units(rtl_dir) : load_manifest(manifest);
  if (fs::exists(out) && !fs::is_directory(out)) throw InputError("--out exists and is not a directory: " + out);
  check_output_dir(out);  // before the slow synthesis; created only when the results exist
  // The files it will hold: an existing directory in their place would fail only after the synthesis, with
  // some of the results already written.
  for (const char* f : {"area.json", "area.md"}) check_output_not_directory("--out", (fs::path(out) / f).string());
  {
    std::error_code ec;  // (a dangling link in its place failed only after the synthesis)
    const fs::path nl = fs::path(out) / "netlists";
    if (fs::exists(fs::symlink_status(nl, ec)) && !fs::is_directory(nl, ec))
      throw InputError("--out: " + nl.string() + " exists and is not a directory");
  }
  for (const auto& s : specs)  // (a directory in a netlist's place failed after the synthesis, other netlists replaced)
    check_output_not_directory("--out", (fs::path(out) / "netlists" / (s.name + ".v")).string());
  if (!keep_work.empty()) {
    if (fs::exists(keep_work) && !fs::is_directory(keep_work))
      throw InputError("--keep-work exists and is not a directory: " + keep_work);
    try {
      check_output_dir(keep_work);
    } catch (const spartan::IoError& e) {
      throw spartan::IoError(std::string("--keep-work: ") + e.what());
    }
  }
  if (!keep_work.empty()) {
    // The unit directories go into --keep-work after the outputs are written, replacing what has a unit's name:
    // with --keep-work = --out a unit named area.json or netlists replaced the outputs, and a --out inside
    // KEEP/<unit> was deleted (exit 0 both times; fortieth session's new-user review). Refused before the run.
    auto within = [](const fs::path& inner, const fs::path& outer) {  // inner == outer or below it
      const fs::path rel = inner.lexically_relative(outer);
      return !rel.empty() && *rel.begin() != "..";
    };
    const fs::path co = spartan::comparable_path(out), ck = spartan::comparable_path(keep_work);
    if (ck == co || ck == co / "netlists")
      throw InputError("--keep-work " + keep_work + " is the output directory (--out " + out +
                       "): its unit directories would replace the outputs; choose another directory");
    for (const auto& s : specs)
      if (within(co, ck / s.name))
        throw InputError("--out " + out + " lies in " + (fs::path(keep_work) / s.name).string() + ", where --keep-work puts unit '" +
                         s.name + "' (replacing what is there); choose another --out or --keep-work");
  }
  spartan::check_outputs_not_inputs({{"--out", (fs::path(out) / "area.json").string()}, {"--out", (fs::path(out) / "area.md").string()}},
                                    {{"--cycles", cycles_file}, {"--manifest", manifest}, {"--gpu", gpu}});

  // --keep-work is created now, with the staging directory the copy goes to (so that an unusable DIR, e.g.
  // under /sys, fails here and not after the synthesis). Both are removed again if the run fails.
  std::optional<TempDir> keep_created, keep_stage;
  if (!keep_work.empty()) {
    std::error_code ec;
    fs::path first_missing;
    for (fs::path p = fs::absolute(keep_work, ec); !ec && !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
      first_missing = p;
      if (p == p.parent_path()) break;
    }
    fs::create_directories(keep_work, ec);
    if (!first_missing.empty() && fs::exists(first_missing)) keep_created.emplace(first_missing.string());
    if (ec || !fs::is_directory(keep_work))
      throw spartan::IoError("--keep-work: cannot create " + keep_work + (ec ? ": " + ec.message() : std::string()));
    keep_stage.emplace(keep_work, ".spartan-area-keep.", "--keep-work");
    // A unit's directory replaces only an earlier run's copy (it carries kKeepMarker): --keep-work . must not
    // delete a user's directory that happens to have a unit's name.
    for (const auto& s : specs) check_keep_entry(keep_work, s.name);
  }
  std::error_code tmp_ec;
  const fs::path tmp_root = fs::temp_directory_path(tmp_ec);  // TMPDIR, else /tmp
  if (tmp_ec) throw spartan::IoError("cannot find a directory for temporary files: " + tmp_ec.message());
  const TempDir scratch(tmp_root.string(), "spartan-area.", "scratch directory");
  // Units are independent (own work directory, own Yosys/OpenSTA processes): run up to --jobs at once.
  // Results keep the manifest order; the first failing unit (in manifest order) is the error reported.
  const std::size_t n_jobs = std::max<std::size_t>(
      1, std::min<std::size_t>(specs.size(), jobs ? jobs : std::max(1u, std::thread::hardware_concurrency())));
  std::vector<std::optional<UnitResult>> done(specs.size());
  std::vector<std::exception_ptr> failed(specs.size());
  std::atomic<std::size_t> next{0};
  std::atomic<bool> stop{false};
  std::mutex out_mu;
  auto worker = [&] {
    for (std::size_t i; !stop && (i = next++) < specs.size();) {
      const auto& s = specs[i];
      {
        // Progress on stdout: stderr carries only the one error line of a failed run.
        std::lock_guard<std::mutex> lk(out_mu);
        std::cout << "spartan-area: " << s.name << " (top " << s.top << ", " << s.files.size() << " file(s))" << std::endl;
      }
      try {
        done[i] = run_unit(s, tools, scratch.path());
      } catch (...) {
        failed[i] = std::current_exception();
        stop = true;
      }
    }
  };
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < n_jobs; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  for (const auto& e : failed)
    if (e) std::rethrow_exception(e);
  std::vector<UnitResult> results;
  for (auto& r : done) results.push_back(std::move(*r));
  nlohmann::json rep = build_report(results, g, cycles, ropt);
  // Which units were synthesised: the manifest's absolute path, or the RTL directory's Verilog files.
  rep["manifest"] = manifest.empty() ? "none: every Verilog file of " + fs::absolute(rtl_dir).lexically_normal().string()
                                     : fs::absolute(manifest).lexically_normal().string();
  const std::string md = render_markdown(rep);

  // The --keep-work copy, before any output is published: a copy that fails leaves no output. Same-named
  // entries of an earlier run in DIR are replaced (after the outputs: renames within DIR).
  std::vector<fs::path> kept;
  if (keep_stage) {
    try {
      fs::copy(scratch.path(), keep_stage->path(), fs::copy_options::recursive);
      // The copied Yosys and OpenSTA scripts name files in the scratch directory, which is removed: they are
      // rewritten to name the copies, so that they can be rerun from KEEP/<unit> (when KEEP's absolute path
      // can stand unquoted in both scripts).
      const std::string keep_abs = fs::absolute(keep_work).lexically_normal().string();
      const std::string keep_root = keep_abs.size() > 1 && keep_abs.back() == '/' ? keep_abs.substr(0, keep_abs.size() - 1) : keep_abs;
      bool plain = true;  // (check_script_path refuses blanks too)
      try {
        check_script_path(keep_root, "--keep-work");
      } catch (const InputError&) {
        plain = false;
      }
      for (const auto& e : fs::recursive_directory_iterator(keep_stage->path())) {
        const auto ext = e.path().extension();
        if (!plain || !e.is_regular_file() || (ext != ".ys" && ext != ".tcl")) continue;
        std::string text = read_file(e.path().string());
        for (auto at = text.find(scratch.path()); at != std::string::npos; at = text.find(scratch.path(), at + keep_root.size()))
          text.replace(at, scratch.path().size(), keep_root);
        write_file_atomic(e.path().string(), text);
      }
      for (const auto& e : fs::directory_iterator(keep_stage->path())) {
        kept.push_back(e.path().filename());
        check_keep_entry(keep_work, kept.back().string());
        if (e.is_directory()) std::ofstream(e.path() / kKeepMarker) << "spartan-area --keep-work copy\n";
      }
    } catch (const fs::filesystem_error& e) {
      throw spartan::IoError("--keep-work: cannot copy the scratch directory to " + keep_work + ": " + e.code().message());
    }
  }
  // All results exist: publish them (each file atomically). Filesystem errors left after the checks above
  // (e.g. a directory that refuses new entries although writable) name the option.
  try {
    fs::create_directories(fs::path(out) / "netlists");
  } catch (const fs::filesystem_error& e) {
    throw spartan::IoError("--out: cannot create " + (fs::path(out) / "netlists").string() + ": " + e.code().message());
  }
  // Every file is written and synced to its temporary first, then all are renamed: a file that cannot be
  // written leaves the earlier outputs as they were (not some netlists new and area.json old).
  {
    std::vector<std::unique_ptr<AtomicFile>> staged;
    auto stage = [&](const fs::path& path, const std::string& text) {
      staged.push_back(std::make_unique<AtomicFile>(path.string()));
      staged.back()->write(text);
      staged.back()->sync();
    };
    for (const auto& r : results) stage(fs::path(out) / "netlists" / (r.spec.name + ".v"), r.netlist);
    stage(fs::path(out) / "area.md", md);
    stage(fs::path(out) / "area.json", rep.dump(2) + "\n");
    for (auto& f : staged) f->commit();
  }
  if (keep_stage) {
    try {
      for (const auto& name : kept) {
        fs::remove_all(fs::path(keep_work) / name);
        fs::rename(fs::path(keep_stage->path()) / name, fs::path(keep_work) / name);
      }
    } catch (const fs::filesystem_error& e) {
      throw spartan::IoError("--keep-work: cannot move the copy into " + keep_work + ": " + e.code().message());
    }
    keep_stage.reset();  // the staging directory, empty now
    if (keep_created) keep_created->release();
  }
  std::cout << md;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return run_cli("spartan-area", [&] { return run(argc, argv); });
}
