// Prefix-sum compactor: moves the GW-bit granules whose mask bit is set to the low end of the output, in
// order (granule i goes to position pos[i] = set mask bits below i); unused output granules are 0.
// Combinational, one line per cycle (the Spartan engine compacts one line per cycle).
//
// Network: granule i must move down by d[i] = i - pos[i] (the zero granules below it). log2(G) stages; stage
// s moves a granule down by 2^s when bit s of its d is set. Processing the bits LSB first is conflict-free
// (two kept granules i < j never share a position after any stage, since 0 <= (d[j] mod 2^s) - (d[i] mod 2^s)
// <= d[j] - d[i] < j - i, or the difference is negative), so each stage output is an OR of two inputs:
// G*log2(G) 2:1 selections instead of the G^2 comparators of a direct scatter.
module spartan_compactor #(
  parameter G  = 64,
  parameter GW = 16,
  parameter CW = $clog2(G + 1)
) (
  input  wire [G*GW-1:0] data,
  input  wire [G-1:0]    mask,
  output wire [G*GW-1:0] packed_data,
  output wire [CW-1:0]   count
);
  localparam S = $clog2(G);
  localparam DW = (S < 1) ? 1 : S;   // shift-amount bits carried per granule
  wire [G*CW-1:0] pos;
  spartan_prefix_sum #(.W(G), .CW(CW)) u_scan (.mask(mask), .pos(pos), .total(count));
  // per-stage state (flat vectors, stage k at [k*...]): data, valid, shift amount
  localparam SDW = G * GW, SAW = G * DW;
  reg [(S+1)*SDW-1:0] sd;
  reg [(S+1)*G-1:0]   sv;
  reg [(S+1)*SAW-1:0] sa;
  integer i, s, j;
  // d < G: its top bit (d == G is impossible) is not carried
  /* verilator lint_off UNUSEDSIGNAL */
  reg [CW-1:0] dd;
  /* verilator lint_on UNUSEDSIGNAL */
  reg          stay, come;
  always @* begin
    sd = {(S+1)*SDW{1'b0}};
    sv = {(S+1)*G{1'b0}};
    sa = {(S+1)*SAW{1'b0}};
    for (i = 0; i < G; i = i + 1) begin
      dd = i[CW-1:0] - pos[i*CW +: CW];
      sd[i*GW +: GW] = mask[i] ? data[i*GW +: GW] : {GW{1'b0}};
      sv[i] = mask[i];
      sa[i*DW +: DW] = dd[DW-1:0];
    end
    for (s = 0; s < S; s = s + 1) begin
      for (i = 0; i < G; i = i + 1) begin
        // stays: valid at i with bit s clear; comes: valid at i + 2^s with bit s set
        j = i + (1 << s);
        stay = sv[s*G + i] && !sa[s*SAW + i*DW + s];
        come = (j < G) ? (sv[s*G + j] && sa[s*SAW + j*DW + s]) : 1'b0;
        if (come) begin
          sd[(s+1)*SDW + i*GW +: GW] = sd[s*SDW + j*GW +: GW];
          sv[(s+1)*G + i] = 1'b1;
          sa[(s+1)*SAW + i*DW +: DW] = sa[s*SAW + j*DW +: DW];
        end else if (stay) begin
          sd[(s+1)*SDW + i*GW +: GW] = sd[s*SDW + i*GW +: GW];
          sv[(s+1)*G + i] = 1'b1;
          sa[(s+1)*SAW + i*DW +: DW] = sa[s*SAW + i*DW +: DW];
        end
      end
    end
  end
  assign packed_data = sd[S*SDW +: SDW];
endmodule
