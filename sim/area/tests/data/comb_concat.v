// Test block for spartan-area: combinational (no clock port; STA uses a virtual clock) with constant and
// concatenated output bits, which Yosys writes as `assign {..} = {..}` unless the flow removes assigns.
module comb_concat (
  input  wire [7:0]  a,
  input  wire [7:0]  b,
  output wire [19:0] y
);
  wire [8:0] s = a + b;
  assign y = {s, 2'b00, a[3:0], b[4:0]};
endmodule
