// Test block for spartan-area: registered popcount of a W-bit non-zero mask (one lane group).
module popcount #(parameter W = 16) (
  input  wire                   clk,
  input  wire                   rst,
  input  wire                   in_valid,
  input  wire [W-1:0]           in_mask,
  output reg                    out_valid,
  output reg  [$clog2(W+1)-1:0] out_count
);
  integer i;
  reg [$clog2(W+1)-1:0] sum;
  always @* begin
    sum = 0;
    for (i = 0; i < W; i = i + 1) sum = sum + in_mask[i];
  end
  always @(posedge clk) begin
    if (rst) begin
      out_valid <= 1'b0;
      out_count <= 0;
    end else begin
      out_valid <= in_valid;
      if (in_valid) out_count <= sum;
    end
  end
endmodule
