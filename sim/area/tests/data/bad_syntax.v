// Deliberately broken Verilog for spartan-area's bad-input test.
module bad_syntax (input wire clk, output reg q)
  always @(posedge clk) q <= ~q
endmodule
