// Test block for spartan-area: per-tile non-zero counter table (read-modify-write, registered read),
// built from popcount; two-module hierarchy to exercise flattening.
module counter_table #(parameter TILES_LOG2 = 4, parameter CW = 12, parameter W = 16) (
  input  wire                  clk,
  input  wire                  rst,
  input  wire                  in_valid,
  input  wire [TILES_LOG2-1:0] in_tile,
  input  wire [W-1:0]          in_mask,
  input  wire [TILES_LOG2-1:0] rd_tile,
  output reg  [CW-1:0]         rd_count
);
  reg [CW-1:0] table_q [0:(1<<TILES_LOG2)-1];
  wire pc_valid;
  wire [$clog2(W+1)-1:0] pc_count;
  reg [TILES_LOG2-1:0] tile_d;
  popcount #(.W(W)) u_pc (.clk(clk), .rst(rst), .in_valid(in_valid), .in_mask(in_mask),
                          .out_valid(pc_valid), .out_count(pc_count));
  always @(posedge clk) begin
    tile_d <= in_tile;
    if (pc_valid) table_q[tile_d] <= table_q[tile_d] + pc_count;
    rd_count <= table_q[rd_tile];
  end
endmodule
