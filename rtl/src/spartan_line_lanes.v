// Lanes of one 128 B line that belong to a row segment and are non-zero (the compaction engine's per-lane
// zero detect + segment mask). The segment covers bytes [lo, hi] of the line (element-aligned); dtype 0 = F32
// (32 lanes), else F16/BF16 (64 lanes). lane_m[i]: element lane i is in the segment and non-zero; gran_m[g]:
// the same per 16-bit granule (both granules of an F32 lane); count: set bits of lane_m.
module spartan_line_lanes #(
  parameter WITH_GRAN = 1   // 0: gran_m is 0 (the counting side needs only lane_m and count)
) (
  input  wire [1023:0] data,
  input  wire [1:0]    dtype,
  input  wire [6:0]    lo,
  input  wire [6:0]    hi,
  output reg  [63:0]   lane_m,
  output reg  [63:0]   gran_m,
  output wire [6:0]    count
);
  wire [63:0] nz_elem, nz_gran;
  spartan_zero_detect #(.LINE_BYTES(128)) u_zd (.data(data), .dtype(dtype), .nz_elem(nz_elem), .nz_gran(nz_gran));
  integer g;
  reg [63:0] gin;   // granule g starts inside [lo, hi]
  always @* begin
    for (g = 0; g < 64; g = g + 1) gin[g] = ({g[5:0], 1'b0} >= lo) && ({g[5:0], 1'b0} <= hi);
    lane_m = 64'd0;
    gran_m = 64'd0;
    for (g = 0; g < 64; g = g + 1) begin
      if (dtype == 2'd0) begin
        if (g < 32) lane_m[g] = nz_elem[g] && gin[2*g];
        gran_m[g] = (WITH_GRAN != 0) && nz_gran[g] && gin[g & ~1];
      end else begin
        lane_m[g] = nz_elem[g] && gin[g];
        gran_m[g] = (WITH_GRAN != 0) && nz_gran[g] && gin[g];
      end
    end
  end
  spartan_popcount #(.W(64), .CW(7)) u_pc (.bits(lane_m), .count(count));
endmodule
