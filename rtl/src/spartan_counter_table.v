// Per-tile non-zero counter table: an inferable simple dual-port RAM (one synchronous read port,
// one write port, read-before-write), DEPTH x 32-bit. Synthesis maps it to SRAM/BRAM or flops.
module spartan_counter_table #(
  parameter DEPTH = 1024,
  parameter AW    = $clog2(DEPTH)
) (
  input  wire          clk,
  input  wire          rd_en,
  input  wire [AW-1:0] rd_addr,
  output reg  [31:0]   rd_data,
  input  wire          wr_en,
  input  wire [AW-1:0] wr_addr,
  input  wire [31:0]   wr_data
);
  reg [31:0] mem [0:DEPTH-1];
  always @(posedge clk) begin
    if (rd_en)
      rd_data <= mem[rd_addr];
    if (wr_en)
      mem[wr_addr] <= wr_data;
  end
endmodule
