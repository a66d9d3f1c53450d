// A transparent latch beside a register (test data): the area flow's dfflibmap does not map latches to the OSU
// 0.18 um library, so spartan-area must refuse the unit instead of reporting it without them (reliability
// finding 77).
module latch_unit (
  input  wire       clk,
  input  wire       en,
  input  wire [3:0] d,
  output reg  [3:0] q,
  output reg  [3:0] r
);
  always @* if (en) q = d;
  always @(posedge clk) r <= d + 4'd1;
endmodule
