// Tile address generation, part 2: tile index and validity of every element lane of one row segment.
// Lane l (seg_lo <= l < seg_hi) holds element (row, col0 + l - seg_lo) of the region; elements in the row
// padding (col >= COLS) are not valid. Tiles are 2^trl x 2^tcl, row-major:
// tile = (row >> trl) * tiles_per_row + (col >> tcl)   (docs/hw-units.md, "Common conventions").
module spartan_lane_tiles #(
  parameter LANES = 64,
  parameter LW    = $clog2(LANES + 1),
  parameter TW    = 32
) (
  input  wire [23:0]        row,
  input  wire [23:0]        col0,
  input  wire [LW-1:0]      seg_lo,
  input  wire [LW-1:0]      seg_hi,
  input  wire [31:0]        cols,
  input  wire [31:0]        tiles_per_row,
  input  wire [3:0]         trl,
  input  wire [3:0]         tcl,
  output reg  [LANES-1:0]   lane_valid,
  output reg  [LANES*TW-1:0] lane_tile
);
  wire [55:0] tb = {32'd0, row >> trl} * {24'd0, tiles_per_row};
  integer l;
  reg [31:0] c;
  reg [55:0] t;
  always @* begin
    lane_valid = {LANES{1'b0}};
    lane_tile  = {LANES*TW{1'b0}};
    for (l = 0; l < LANES; l = l + 1) begin
      c = {8'd0, col0} + l - {{(32-LW){1'b0}}, seg_lo};
      t = tb + {24'd0, c >> tcl};
      lane_valid[l] = (l >= seg_lo) && (l < seg_hi) && (c < cols);
      lane_tile[l*TW +: TW] = t[TW-1:0];
    end
  end
endmodule
