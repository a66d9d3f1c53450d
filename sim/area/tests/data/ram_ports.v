// Two 64 x 16 RAMs for spartan-area's port test: `ram_1p` reads and writes through one address (a single-port
// array), `ram_2p` has separate read and write addresses (a two-port array). Each has a little logic besides.
module ram_1p(input clk, input we, input [5:0] addr, input [15:0] d, input [15:0] mask, output [15:0] q);
  reg [15:0] m [0:63];
  reg [15:0] r;
  always @(posedge clk) begin
    if (we) m[addr] <= d;
    r <= m[addr];
  end
  assign q = r & mask;
endmodule

module ram_2p(input clk, input we, input [5:0] wa, input [5:0] ra, input [15:0] d, input [15:0] mask, output [15:0] q);
  reg [15:0] m [0:63];
  reg [15:0] r;
  always @(posedge clk) begin
    if (we) m[wa] <= d;
    r <= m[ra];
  end
  assign q = r & mask;
endmodule

// Nothing but a 64 x 16 single-port RAM (its read register absorbed into the read port): no logic cell.
module ram_only(input clk, input we, input [5:0] addr, input [15:0] d, output reg [15:0] q);
  reg [15:0] m [0:63];
  always @(posedge clk) begin
    if (we) m[addr] <= d;
    q <= m[addr];
  end
endmodule
