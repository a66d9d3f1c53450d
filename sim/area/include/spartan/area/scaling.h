// Technology scaling of area and delay from the OSU 0.18 um synthesis node to modern nodes, and the
// SRAM density figures used for memories.
//
// Logic area and gate delay: Stillmaker & Baas, "Scaling equations for the accurate prediction of CMOS
// device performance from 180 nm to 7 nm", Integration, the VLSI Journal 58 (2017) 74-81,
// doi:10.1016/j.vlsi.2017.02.002. Area: the paper's area scaling factors from 180 nm (Table "area");
// delay: the paper's fitted cubic delay polynomials d(V) = a V^3 + b V^2 + c V + d evaluated at each
// node's nominal supply (HP flavour for 45 nm and below), ratio against 180 nm at 1.8 V.
// The paper stops at 7 nm: 5 nm is EXTRAPOLATED from 7 nm with TSMC's published N5-vs-N7 figures
// (1.84x logic density, 15% speed at iso-power; Yeap et al., IEDM 2019) and is flagged as such.
//
// SRAM: published high-density 6T bit-cell areas per node (sources in sram_bitcell_source()), divided
// by an array efficiency (bit cells / macro area) that is this project's assumption (kSramArrayEfficiency).
#pragma once
#include <string>
#include <vector>

namespace spartan::area {

/// Synthesis node of the OSU 0.18 um library.
inline constexpr int kBaseNodeNm = 180;

/// Fraction of an SRAM macro's area taken by bit cells. Assumption of this project: small macros
/// (a few kbit, as in these units) are periphery-heavy; compiler macros of that size are typically
/// 40-70% efficient, we take 0.5. Documented in docs/area.md.
inline constexpr double kSramArrayEfficiency = 0.5;

struct TechNode {
  int nm = 0;
  double area_factor = 1.0;   ///< area(node) = area(180 nm) * area_factor
  double delay_factor = 1.0;  ///< delay(node) = delay(180 nm) * delay_factor
  double vdd_v = 1.8;         ///< nominal supply used for the delay polynomial
  double sram_bitcell_um2 = 0.0;  ///< published 6T bit-cell area; 0 when none is tabulated
  bool extrapolated = false;  ///< true for 5 nm (beyond the paper's range)
  std::string source;         ///< short citation of the factors
};

/// Nodes with factors: 180, 130, 90, 65, 45, 32, 20, 16, 14, 10, 7 (Stillmaker & Baas) and 5 (extrapolated).
const std::vector<TechNode>& tech_nodes();

/// The node with this feature size. Throws InputError for a node not in tech_nodes().
const TechNode& tech_node(int nm);

/// Stillmaker & Baas delay polynomial value at (node, vdd), arbitrary units (ratios only are meaningful).
/// Throws InputError for a node without coefficients (5 nm).
double stillmaker_delay_poly(int nm, double vdd_v);

/// Citation of the SRAM bit-cell figure of a node ("" when none).
std::string sram_bitcell_source(int nm);

/// SRAM macro area estimate in um^2 at `nm`: bits * bitcell / kSramArrayEfficiency.
/// Throws InputError when the node has no bit-cell figure.
double sram_area_um2(double bits, int nm);

/// The logic node used for a GPU's process ("12" -> 16 (TSMC 12FFN is a 16 nm-family process),
/// "4N" -> 5, "28" -> 32 (nearest tabulated node, conservative)). Returns 0 if unknown.
int gpu_process_node_nm(const std::string& process);
/// The process names gpu_process_node_nm() knows, comma-separated (for error messages).
std::string gpu_process_names();

}  // namespace spartan::area
