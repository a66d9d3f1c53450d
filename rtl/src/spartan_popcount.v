// Population count of a W-bit vector (adder tree inferred by synthesis).
module spartan_popcount #(
  parameter W  = 64,
  parameter CW = $clog2(W + 1)
) (
  input  wire [W-1:0]  bits,
  output reg  [CW-1:0] count
);
  integer i;
  always @* begin
    count = {CW{1'b0}};
    for (i = 0; i < W; i = i + 1)
      count = count + {{(CW-1){1'b0}}, bits[i]};
  end
endmodule
