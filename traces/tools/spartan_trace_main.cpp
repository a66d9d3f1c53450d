// spartan-trace: inspect and validate .sptrace files (docs/trace-format.md).
//   spartan-trace info FILE [--tensors]   summary: tensors, dtypes, shapes, density of `act`, metadata
//   spartan-trace check FILE              validate; prints "ok" (exit 0) or one error line (exit 2)
#include <cstdio>
#include <cmath>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "spartan/common/cli.h"
#include "spartan/common/error.h"
#include "spartan/trace/keys.h"
#include "spartan/trace/metadata.h"
#include "spartan/trace/sptrace.h"

namespace {
using namespace spartan::trace;

const char* kUsage =
    "usage: spartan-trace <command> FILE [options]\n"
    "Inspect and validate .sptrace trace files (safetensors layout; see docs/trace-format.md).\n"
    "\n"
    "commands:\n"
    "  info FILE [--tensors]  print a summary: tensor count, per (layer, kind) dtype and shape, the\n"
    "                         density (fraction of non-zero elements) of every `act` tensor per\n"
    "                         iteration and layer, and the metadata keys; --tensors lists every tensor\n"
    "  check FILE             validate the container and the structured metadata; prints \"ok\" and\n"
    "                         exits 0, or prints one line naming file, tensor and byte offset, exit 2\n"
    "\n"
    "options:\n"
    "  -h, --help             this help\n"
    "  --version              print the version and the trace format version\n";

// Fraction of elements that are not +-0 (NaN, Inf and denormals count as non-zero); NaN for an empty tensor
// (0 / 0: printed "empty", not a density of 0).
double density(const TensorView& v) {
  const std::size_t es = dtype_size(v.info->dtype);
  const std::size_t n = es ? v.bytes / es : 0;
  if (n == 0) return std::nan("");
  std::size_t nz = 0;
  const bool is_float = v.info->dtype == DType::F32 || v.info->dtype == DType::F16 ||
                        v.info->dtype == DType::BF16 || v.info->dtype == DType::F64;
  for (std::size_t i = 0; i < n; ++i) {
    std::uint64_t bits = 0;
    std::memcpy(&bits, v.data + i * es, es);  // little-endian host
    if (is_float) bits &= ~(std::uint64_t{1} << (8 * es - 1));  // ignore the sign bit: -0 == 0
    nz += bits != 0;
  }
  return static_cast<double>(nz) / static_cast<double>(n);
}

int cmd_check(const std::string& file) {
  TraceReader r(file);
  check_metadata(r);
  std::printf("ok\n");
  return 0;
}

int cmd_info(const std::string& file, bool list_tensors) {
  TraceReader r(file);
  check_metadata(r);
  std::uint64_t data_bytes = 0;
  for (const auto& t : r.tensors()) data_bytes += t.end - t.begin;
  std::printf("file: %s\n", file.c_str());
  std::printf("tensors: %zu, data: %llu bytes\n", r.tensors().size(), static_cast<unsigned long long>(data_bytes));

  std::printf("metadata (%zu keys):\n", r.metadata().size());
  for (const auto& [k, v] : r.metadata()) {
    std::string shown = v.size() <= 60 ? v : v.substr(0, 57) + "... (" + std::to_string(v.size()) + " chars)";
    for (char& c : shown)
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';  // keep the terminal sane
    std::printf("  %-16s %s\n", spartan::one_line(k).c_str(), shown.c_str());
  }

  const auto layers = read_layers(r);
  if (!layers.empty()) {
    std::printf("layers (GEMM M x N x K; A = activation operand):\n");
    std::printf("  %-6s %-12s %-5s %-18s %-24s %-24s %s\n", "layer", "name", "type", "input", "fwd", "bwd_data",
                "bwd_weight");
    auto mnk = [](const GemmShape& g) {
      return std::to_string(g.M) + "x" + std::to_string(g.N) + "x" + std::to_string(g.K);
    };
    for (const auto& l : layers)
      std::printf("  L%-5lld %-12s %-5s %-18s %-24s %-24s %s\n", static_cast<long long>(l.index),
                  spartan::one_line(l.name).c_str(), spartan::one_line(l.type).c_str(), shape_text(l.input).c_str(),
                  mnk(l.fwd).c_str(), mnk(l.bwd_data).c_str(), mnk(l.bwd_weight).c_str());
  }

  // Per (layer, kind): dtype, shape set and number of iterations.
  struct Group {
    std::set<std::string> dtypes, shapes;
    std::size_t count = 0;
  };
  std::map<std::pair<std::int64_t, std::string>, Group> groups;
  std::set<std::int64_t> iterations, act_iterations, act_layers;
  std::size_t other = 0;
  for (const auto& t : r.tensors()) {
    const auto k = parse_key(t.name);
    if (!k) {
      ++other;
      continue;
    }
    Group& g = groups[{k->layer, k->kind}];
    g.dtypes.insert(dtype_name(t.dtype));
    g.shapes.insert(shape_text(t.shape));
    ++g.count;
    iterations.insert(k->iteration);
    if (k->kind == kinds::kAct) {
      act_layers.insert(k->layer);
      act_iterations.insert(k->iteration);
    }
  }
  std::printf("trace tensors (it{i}/L{l}/{kind}): %zu iterations, other tensors: %zu\n", iterations.size(), other);
  std::printf("  %-6s %-10s %-6s %-8s %s\n", "layer", "kind", "dtype", "count", "shape");
  for (const auto& [key, g] : groups) {
    std::string dt, sh;
    for (const auto& d : g.dtypes) dt += (dt.empty() ? "" : ",") + d;
    for (const auto& s : g.shapes) sh += (sh.empty() ? "" : " ") + s;
    std::printf("  L%-5lld %-10s %-6s %-8zu %s\n", static_cast<long long>(key.first),
                spartan::one_line(key.second).c_str(), dt.c_str(), g.count, sh.c_str());
  }

  if (!act_layers.empty()) {
    std::printf("density of act (fraction of non-zero elements), rows = iteration, columns = layer:\n");
    std::printf("  %10s", "iteration");
    for (auto l : act_layers) std::printf("  L%-5lld", static_cast<long long>(l));
    std::printf("\n");
    for (auto it : act_iterations) {
      std::printf("  %10lld", static_cast<long long>(it));
      for (auto l : act_layers) {
        const std::string name = TraceKey{it, l, kinds::kAct}.name();
        if (r.find(name)) {
          const double d = density(r.view(name));
          if (std::isnan(d)) std::printf("  %6s", "empty");
          else std::printf("  %6.4f", d);
        }
        else std::printf("  %6s", "-");
      }
      std::printf("\n");
    }
  }

  if (list_tensors) {
    std::printf("all tensors (data-offset order):\n");
    for (const auto& t : r.tensors())
      std::printf("  %-32s %-5s %-20s [%llu, %llu)\n", spartan::one_line(t.name).c_str(), dtype_name(t.dtype),
                  shape_text(t.shape).c_str(), static_cast<unsigned long long>(t.begin),
                  static_cast<unsigned long long>(t.end));
  }
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  return spartan::run_cli("spartan-trace", [&]() -> int {
    std::vector<std::string> pos;
    bool list_tensors = false;
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "-h" || a == "--help") {
        std::fputs(kUsage, stdout);
        return 0;
      }
      if (a == "--version") {
        std::printf("spartan-trace 0.1.0 (trace format %s)\n", kFormatVersion);
        return 0;
      }
      if (a == "--tensors") list_tensors = true;
      else if (a.size() > 1 && a[0] == '-') throw spartan::InputError("unknown option '" + a + "' (see --help)");
      else pos.push_back(a);
    }
    if (pos.empty()) throw spartan::InputError("missing command: info or check (see --help)");
    if (pos.size() != 2)
      throw spartan::InputError("'" + pos[0] + "' takes exactly one FILE argument (see --help)");
    if (pos[0] == "info") return cmd_info(pos[1], list_tensors);
    if (pos[0] == "check") {
      if (list_tensors) throw spartan::InputError("--tensors applies to 'info' only");
      return cmd_check(pos[1]);
    }
    throw spartan::InputError("unknown command '" + pos[0] + "': expected info or check (see --help)");
  });
}
