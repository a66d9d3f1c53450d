// Exclusive prefix sum of a W-bit mask: pos[i] = number of set bits below bit i (CW bits per lane),
// plus the total. Used by the compactor to give each non-zero granule its packed position.
module spartan_prefix_sum #(
  parameter W  = 64,
  parameter CW = $clog2(W + 1)
) (
  input  wire [W-1:0]    mask,
  output reg  [W*CW-1:0] pos,
  output reg  [CW-1:0]   total
);
  integer i;
  reg [CW-1:0] acc;
  always @* begin
    acc = {CW{1'b0}};
    pos = {W*CW{1'b0}};
    for (i = 0; i < W; i = i + 1) begin
      pos[i*CW +: CW] = acc;
      acc = acc + {{(CW-1){1'b0}}, mask[i]};
    end
    total = acc;
  end
endmodule
