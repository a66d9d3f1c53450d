// bench-sdnn-partition: communication volume (connectivity-1) and per-layer load imbalance of the block,
// random, hypergraph (Zoltan PHG) and graph (METIS) partitioners, and a MODELLED strong-scaling table.
// usage: bench-sdnn-partition volume --weights DIR --layers L | --neurons N --layers L  [--parts 4,8,16] [--methods ...]
//        bench-sdnn-partition scaling --neurons N --layers L [--parts 64,128,256,512,1024] [--mac-rate R]
//                             [--latency-us A] [--bandwidth-gbs B] [--batch IMAGES] [--model-layers LM]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cmath>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include <boost/program_options.hpp>

#include "spartan/common/cli.h"
#include "spartan/common/cli_checks.h"
#include "spartan/common/error.h"
#include "spartan/sdnn/generate.h"
#include "spartan/sdnn/infer.h"
#include "spartan/sdnn/partition.h"

using namespace spartan::sdnn;

namespace {

std::vector<int> ints(const std::string& s) {
  std::vector<int> v;
  std::stringstream ss(s);
  std::string t;
  while (std::getline(ss, t, ',')) {
    std::size_t used = 0;
    int n = 0;
    try {
      n = std::stoi(t, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != t.size() || n < 1) throw spartan::InputError("--parts: '" + t + "' is not a positive integer");
    v.push_back(n);
  }
  if (v.empty()) throw spartan::InputError("--parts: empty list");
  return v;
}
std::vector<std::string> strs(const std::string& s) {
  std::vector<std::string> v;
  std::stringstream ss(s);
  std::string t;
  while (std::getline(ss, t, ',')) v.push_back(t);
  return v;
}

/// Per layer, the busiest rank's sent entries and messages (distinct destinations) per image, and its work.
struct RankLoad {
  std::vector<std::int64_t> max_send, max_msgs, max_work;
};
RankLoad rank_load(const std::vector<Csr>& w, const Partition& p) {
  RankLoad r;
  for (std::size_t k = 0; k < w.size(); ++k) {
    std::vector<std::int64_t> send(static_cast<std::size_t>(p.parts), 0), work(static_cast<std::size_t>(p.parts), 0);
    std::set<std::pair<int, int>> msgs;
    const auto vw = vertex_weights(w[k]);
    for (std::size_t c = 0; c < vw.size(); ++c) work[p.part[k][c]] += vw[c];
    if (k > 0) {
      std::vector<std::int64_t> stamp(static_cast<std::size_t>(p.parts), -1);
      for (std::int64_t j = 0; j < w[k].rows; ++j) {
        const int src = p.part[k - 1][j];
        stamp[src] = j;
        for (auto q = w[k].row_ptr[j]; q < w[k].row_ptr[j + 1]; ++q) {
          const int d = p.part[k][w[k].col_idx[q]];
          if (stamp[d] != j) {
            stamp[d] = j;
            ++send[src];
            msgs.insert({src, d});
          }
        }
      }
    }
    std::vector<std::int64_t> m(static_cast<std::size_t>(p.parts), 0);
    for (auto& pr : msgs) ++m[pr.first];
    r.max_send.push_back(*std::max_element(send.begin(), send.end()));
    r.max_msgs.push_back(*std::max_element(m.begin(), m.end()));
    r.max_work.push_back(*std::max_element(work.begin(), work.end()));
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  return spartan::run_cli("bench-sdnn-partition", [&]() -> int {
    namespace po = boost::program_options;
    const std::string mode = argc >= 2 ? argv[1] : "";
    std::string weights, parts_s = mode == "volume" ? "4,8,16" : "64,128,256,512,1024", methods_s = "block,random,hypergraph,graph";
    std::int64_t neurons = 0;
    int layers = 30, model_layers = 120, batch = 60000;
    double mac_rate = 1.0e9, latency_us = 1.0, bandwidth_gbs = 12.5;
    po::options_description opts(
        "bench-sdnn-partition volume|scaling [options]: communication volume (connectivity-1) and load imbalance of\n"
        "the partitioners (volume), or a MODELLED strong-scaling table (scaling)\nOptions");
    opts.add_options()("help,h", "this help")("weights", po::value(&weights), "Graph Challenge weights directory (volume)")(
        "neurons", po::value(&neurons), "generate a RadiX-Net of N neurons per layer instead (seed 1)")(
        "layers", po::value(&layers)->default_value(layers), "layers (>= 1)")(
        "parts", po::value(&parts_s), "comma-separated part counts (volume: 4,8,16; scaling: 64,...,1024)")(
        "methods", po::value(&methods_s)->default_value(methods_s), "comma-separated partitioners")(
        "mac-rate", po::value(&mac_rate)->default_value(mac_rate), "scaling: modelled MAC/s per rank")(
        "latency-us", po::value(&latency_us)->default_value(latency_us), "scaling: modelled message latency (us)")(
        "bandwidth-gbs", po::value(&bandwidth_gbs)->default_value(bandwidth_gbs), "scaling: modelled link bandwidth (GB/s)")(
        "batch", po::value(&batch)->default_value(batch), "scaling: images per epoch")(
        "model-layers", po::value(&model_layers)->default_value(model_layers), "scaling: layers of the modelled network");
    if (mode == "--help" || mode == "-h") {
      std::cout << opts << "\n";
      return 0;
    }
    if (mode != "volume" && mode != "scaling")
      throw spartan::InputError(mode.empty() ? "give a mode: volume or scaling (see --help)" : "unknown mode '" + mode + "' (volume or scaling; see --help)");
    po::variables_map vm;
    if (!spartan::parse_options_or_help(argc - 1, argv + 1, opts, vm)) return 0;
    if (layers < 1) throw spartan::InputError("--layers must be >= 1");
    if (batch < 1 || model_layers < 1) throw spartan::InputError("--batch and --model-layers must be >= 1");
    if (!(mac_rate > 0) || !(latency_us >= 0) || !(bandwidth_gbs > 0) || !std::isfinite(mac_rate) || !std::isfinite(latency_us) || !std::isfinite(bandwidth_gbs))
      throw spartan::InputError("--mac-rate and --bandwidth-gbs must be finite and > 0, --latency-us finite and >= 0");
    std::vector<Csr> w;
    std::string name;
    if (!weights.empty()) {
      w = load_weights(weights, layers);
      name = weights;
    } else {
      if (neurons <= 0) throw spartan::InputError("give --weights DIR or --neurons N");
      RadixNetSpec spec;
      spec.neurons = neurons;
      spec.layers = layers;
      spec.seed = 1;
      w = generate_radixnet(spec);
      name = "generated RadiX-Net";
    }
    const auto parts = ints(parts_s);
    const auto methods = strs(methods_s);
    std::printf("network: %s, %lld neurons x %d layers, %lld edges\n", name.c_str(), static_cast<long long>(w[0].rows), layers,
                static_cast<long long>(total_edges(w)));
    if (mode == "volume") {
      std::printf("| P | method | volume (entries/image) | vs random | vs block | max layer imbalance | time_s |\n|---|---|---|---|---|---|---|\n");
      for (int P : parts) {
        std::map<std::string, std::int64_t> vol;
        std::map<std::string, double> imb, secs;
        for (const auto& m : methods) {
          auto partitioner = make_partitioner(m, 1, 0.05);
          partitioner->initialize();  // one-time MPI/Zoltan start-up, not part of time_s
          const auto t0 = std::chrono::steady_clock::now();
          const Partition p = partitioner->run(w, P);
          secs[m] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          for (auto v : expand_volume(w, p)) vol[m] += v;
          const auto im = layer_imbalance(w, p);
          imb[m] = *std::max_element(im.begin(), im.end());
        }
        // "-" where the baseline was not run (not in --methods) or has volume 0 (e.g. one layer): no ratio.
        const auto ratio = [&](const std::string& m, const char* base) -> std::string {
          const auto it = vol.find(base);
          if (it == vol.end() || it->second == 0) return "-";
          char buf[32];
          std::snprintf(buf, sizeof buf, "%.2fx", static_cast<double>(vol[m]) / static_cast<double>(it->second));
          return buf;
        };
        for (const auto& m : methods) {
          std::printf("| %d | %s | %lld | %s | %s | %.2f%% | %.1f |\n", P, m.c_str(), static_cast<long long>(vol[m]), ratio(m, "random").c_str(),
                      ratio(m, "block").c_str(), 100 * imb[m], secs[m]);
          std::fflush(stdout);
        }
      }
      return 0;
    }
    // MODELLED strong scaling: per layer, time = max-rank work x images / mac_rate
    //                                     + max-rank messages x latency + max-rank bytes / bandwidth,
    // using the per-layer averages measured on the generated layers, scaled to model_layers layers.
    const double work1 = static_cast<double>(total_edges(w) + kVectorWork * w[0].cols * layers) / layers;
    const double t1 = work1 * batch / mac_rate;
    std::printf("MODEL (not measured): %d images, %d layers, mac_rate %.3g MAC/s per rank, latency %.2f us, bandwidth %.1f GB/s, 4-byte entries\n", batch,
                model_layers, mac_rate, latency_us, bandwidth_gbs);
    std::printf("one rank: %.3f s per layer, %.1f s for %d layers\n", t1, t1 * model_layers, model_layers);
    std::printf("| P | method | max sent/layer (entries/image) | max msgs/layer | modelled s/layer (compute + comm) | modelled speed-up | efficiency |\n|---|---|---|---|---|---|---|\n");
    for (int P : parts) {
      for (const auto& m : methods) {
        const Partition p = make_partitioner(m, 1, 0.05)->run(w, P);
        const RankLoad r = rank_load(w, p);
        double send = 0, msgs = 0, work = 0;
        for (int k = 1; k < layers; ++k) {
          send += static_cast<double>(r.max_send[k]);
          msgs += static_cast<double>(r.max_msgs[k]);
        }
        for (int k = 0; k < layers; ++k) work += static_cast<double>(r.max_work[k]);
        send /= std::max(1, layers - 1);
        msgs /= std::max(1, layers - 1);
        work /= layers;
        const double tc = work * batch / mac_rate, tm = msgs * latency_us * 1e-6 + send * 4.0 * batch / (bandwidth_gbs * 1e9);
        std::printf("| %d | %s | %.0f | %.1f | %.4f (%.4f + %.4f) | %.1fx | %.0f%% |\n", P, m.c_str(), send, msgs, tc + tm, tc, tm, t1 / (tc + tm),
                    100.0 * t1 / (tc + tm) / P);
        std::fflush(stdout);
      }
    }
    return 0;
  });
}
