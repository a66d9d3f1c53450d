// Scaling factors and SRAM figures (sources in scaling.h and docs/area.md).
#include "spartan/area/scaling.h"

#include <cmath>
#include <map>

#include "spartan/common/error.h"

namespace spartan::area {
namespace {

struct Poly {
  double a, b, c, d, vdd;
};

// Stillmaker & Baas (2017) delay fit coefficients (HP flavour from 45 nm down) and the nominal supply
// at which we evaluate them (180 nm: 1.8 V ... 7 nm: 0.7 V; PTM/ITRS nominal voltages).
const std::map<int, Poly>& delay_polys() {
  static const std::map<int, Poly> p = {
      {180, {0.0, 97.09, -356.7, 406.5, 1.8}},      {130, {-76.65, 334.9, -493.4, 275.8, 1.3}},
      {90, {-60.34, 262.5, -384.2, 210.9, 1.2}},    {65, {-53.3, 230.4, -333.9, 178.6, 1.1}},
      {45, {-501.6, 1567.0, -1619.0, 566.1, 1.0}},  {32, {-1047.0, 2982.0, -2797.0, 873.5, 0.9}},
      {20, {0.0, 34.63, -66.37, 41.15, 0.9}},       {16, {0.0, 24.8, -47.52, 28.87, 0.85}},
      {14, {-40.66, 109.2, -100.6, 35.92, 0.8}},    {10, {-34.95, 93.65, -85.99, 30.4, 0.75}},
      {7, {-28.58, 76.6, -70.26, 24.69, 0.7}},
  };
  return p;
}

// Area of 180 nm divided by area at the node (Stillmaker & Baas 2017, area scaling table).
const std::map<int, double>& area_divisors() {
  static const std::map<int, double> a = {{180, 1.0}, {130, 2.9}, {90, 6.6}, {65, 12.0}, {45, 19.0}, {32, 40.0},
                                          {20, 88.0}, {16, 99.0}, {14, 110.0}, {10, 180.0}, {7, 320.0}};
  return a;
}

// TSMC N5 vs N7 (Yeap et al., IEDM 2019): 1.84x logic density, +15% speed at iso-power.
constexpr double kN5DensityGain = 1.84;
constexpr double kN5SpeedGain = 1.15;

struct Bitcell {
  double um2;
  const char* source;
};

const std::map<int, Bitcell>& bitcells() {
  static const std::map<int, Bitcell> b = {
      {180, {5.59, "Intel 180 nm logic technology, 5.59 um^2 6T cell (Yang et al., IEDM 1998)"}},
      {45, {0.346, "Intel 45 nm high-k/metal-gate, 0.346 um^2 6T cell (Mistry et al., IEDM 2007)"}},
      {32, {0.171, "Intel 32 nm, 0.171 um^2 6T cell (Natarajan et al., IEDM 2008)"}},
      {16, {0.07, "TSMC 16 nm FinFET, 0.07 um^2 high-density 6T cell (Wu et al., IEDM 2013)"}},
      {7, {0.027, "TSMC 7 nm FinFET, 0.027 um^2 high-density 6T cell (Wu et al., IEDM 2016)"}},
      {5, {0.021, "TSMC 5 nm, 0.021 um^2 high-density 6T cell (Yeap et al., IEDM 2019)"}},
  };
  return b;
}

std::vector<TechNode> build_nodes() {
  std::vector<TechNode> out;
  const double d180 = stillmaker_delay_poly(180, 1.8);
  for (auto it = area_divisors().rbegin(); it != area_divisors().rend(); ++it) {
    TechNode n;
    n.nm = it->first;
    n.area_factor = 1.0 / it->second;
    const Poly& p = delay_polys().at(n.nm);
    n.vdd_v = p.vdd;
    n.delay_factor = stillmaker_delay_poly(n.nm, p.vdd) / d180;
    n.source = "Stillmaker & Baas, Integration 58 (2017)";
    const auto b = bitcells().find(n.nm);
    n.sram_bitcell_um2 = b == bitcells().end() ? 0.0 : b->second.um2;
    out.push_back(n);
  }
  const TechNode n7 = out.back();
  TechNode n5;
  n5.nm = 5;
  n5.area_factor = n7.area_factor / kN5DensityGain;
  n5.delay_factor = n7.delay_factor / kN5SpeedGain;
  n5.vdd_v = n7.vdd_v;
  n5.sram_bitcell_um2 = bitcells().at(5).um2;
  n5.extrapolated = true;
  n5.source = "extrapolated from 7 nm (Stillmaker & Baas 2017) with TSMC N5/N7 gains (Yeap et al., IEDM 2019)";
  out.push_back(n5);
  return out;
}

}  // namespace

double stillmaker_delay_poly(int nm, double v) {
  const auto it = delay_polys().find(nm);
  if (it == delay_polys().end()) throw InputError("no Stillmaker-Baas delay coefficients for " + std::to_string(nm) + " nm");
  const Poly& p = it->second;
  return ((p.a * v + p.b) * v + p.c) * v + p.d;
}

const std::vector<TechNode>& tech_nodes() {
  static const std::vector<TechNode> nodes = build_nodes();
  return nodes;
}

const TechNode& tech_node(int nm) {
  for (const auto& n : tech_nodes())
    if (n.nm == nm) return n;
  throw InputError("unsupported technology node " + std::to_string(nm) +
                   " nm (supported: 180 130 90 65 45 32 20 16 14 10 7 5)");
}

std::string sram_bitcell_source(int nm) {
  const auto it = bitcells().find(nm);
  return it == bitcells().end() ? std::string() : std::string(it->second.source);
}

double sram_area_um2(double bits, int nm) {
  const auto it = bitcells().find(nm);
  if (it == bitcells().end()) throw InputError("no SRAM bit-cell figure for " + std::to_string(nm) + " nm");
  return bits * it->second.um2 / kSramArrayEfficiency;
}

namespace {
/// GPU process name (lower case, no spaces, no "nm") -> tabulated logic node.
const std::map<std::string, int>& gpu_processes() {
  static const std::map<std::string, int> map = {{"12", 16}, {"12ffn", 16}, {"16", 16}, {"7", 7},   {"n7", 7},
                                                 {"4n", 5},  {"n4", 5},  {"4", 5},     {"5", 5},   {"n5", 5},  {"28", 32},
                                                 {"32", 32}, {"45", 45},    {"14", 14}, {"10", 10}, {"20", 20}};
  return map;
}
}  // namespace

int gpu_process_node_nm(const std::string& process) {
  std::string p;
  for (char c : process)
    if (c != ' ') p += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (p.size() > 2 && p.substr(p.size() - 2) == "nm") p.resize(p.size() - 2);
  const auto it = gpu_processes().find(p);
  return it == gpu_processes().end() ? 0 : it->second;
}

std::string gpu_process_names() {
  std::string s;
  for (const auto& [name, nm] : gpu_processes()) s += (s.empty() ? "" : ", ") + name;
  return s;
}

}  // namespace spartan::area
