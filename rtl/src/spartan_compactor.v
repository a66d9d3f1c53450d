// Prefix-sum compactor: moves the 16-bit granules whose mask bit is set to the low end of the output,
// in order (granule i goes to position pos[i]); unused output granules are 0. Combinational, one line
// per cycle (the Spartan engine compacts one line per cycle).
module spartan_compactor #(
  parameter G  = 64,
  parameter CW = $clog2(G + 1)
) (
  input  wire [G*16-1:0] data,
  input  wire [G-1:0]    mask,
  output reg  [G*16-1:0] packed_data,
  output wire [CW-1:0]   count
);
  wire [G*CW-1:0] pos;
  spartan_prefix_sum #(.W(G), .CW(CW)) u_scan (.mask(mask), .pos(pos), .total(count));
  integer i, j;
  // Output-side selection: out[j] = OR of data[i] where mask[i] and pos[i] == j (one-hot by construction).
  always @* begin
    packed_data = {G*16{1'b0}};
    for (j = 0; j < G; j = j + 1)
      for (i = j; i < G; i = i + 1)
        if (mask[i] && pos[i*CW +: CW] == j[CW-1:0])
          packed_data[j*16 +: 16] = packed_data[j*16 +: 16] | data[i*16 +: 16];
  end
endmodule
