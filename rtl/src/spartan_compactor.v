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
  // Stage state per granule as separate wires (generate): one 2:1 selection per granule and stage, which
  // also keeps the Verilated model cheap (no wide-vector bit-select arithmetic).
  genvar gs, gi;
  generate
    for (gs = 0; gs <= S; gs = gs + 1) begin : st
      for (gi = 0; gi < G; gi = gi + 1) begin : ln
        wire [GW-1:0] d;   // granule at position gi after stage gs
        // the last stage's valid and shift amount are not needed
        /* verilator lint_off UNUSEDSIGNAL */
        wire          v;   // valid
        wire [DW-1:0] a;   // remaining shift amount (bits >= gs are still to be applied)
        /* verilator lint_on UNUSEDSIGNAL */
      end
    end
    for (gi = 0; gi < G; gi = gi + 1) begin : init
      // d < G: the top bit of the CW-bit difference (d == G is impossible) is not carried
      /* verilator lint_off UNUSEDSIGNAL */
      wire [CW-1:0] dd = gi[CW-1:0] - pos[gi*CW +: CW];
      /* verilator lint_on UNUSEDSIGNAL */
      assign st[0].ln[gi].d = mask[gi] ? data[gi*GW +: GW] : {GW{1'b0}};
      assign st[0].ln[gi].v = mask[gi];
      assign st[0].ln[gi].a = dd[DW-1:0];
    end
    for (gs = 0; gs < S; gs = gs + 1) begin : net
      for (gi = 0; gi < G; gi = gi + 1) begin : mv
        // stays: valid at gi with bit gs clear; comes: valid at gi + 2^gs with bit gs set (never both)
        wire stay = st[gs].ln[gi].v && !st[gs].ln[gi].a[gs];
        if (gi + (1 << gs) < G) begin : up
          wire come = st[gs].ln[gi + (1 << gs)].v && st[gs].ln[gi + (1 << gs)].a[gs];
          assign st[gs+1].ln[gi].d = come ? st[gs].ln[gi + (1 << gs)].d : (stay ? st[gs].ln[gi].d : {GW{1'b0}});
          assign st[gs+1].ln[gi].v = come || stay;
          assign st[gs+1].ln[gi].a = come ? st[gs].ln[gi + (1 << gs)].a : st[gs].ln[gi].a;
        end else begin : top
          assign st[gs+1].ln[gi].d = stay ? st[gs].ln[gi].d : {GW{1'b0}};
          assign st[gs+1].ln[gi].v = stay;
          assign st[gs+1].ln[gi].a = st[gs].ln[gi].a;
        end
      end
    end
    for (gi = 0; gi < G; gi = gi + 1) begin : outp
      assign packed_data[gi*GW +: GW] = st[S].ln[gi].d;
    end
  endgenerate
endmodule
