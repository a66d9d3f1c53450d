// Tile address generation, part 1: where a write request lands inside a monitored region.
// Inputs are line-relative: the request covers bytes [req_lo, req_hi) of the 128 B line at line_addr.
// Outputs: the element lanes [lo, hi) fully inside both the request and [base, base + size), and the
// (row, col0) of lane lo. row = off / PITCH, col0 = (off % PITCH) / element size are computed with the
// region's reciprocal RECIP = ceil(2^36 / PITCH) — no divider: q = (off * RECIP) >> 36 is row or row + 1 for
// off < 2^32 (error < off/2^36 < 1/16), and one subtract/compare corrects it. Requires BASE element-aligned and size < 2^32.
module spartan_line_geom #(
  parameter LINE_BYTES = 128,
  parameter LW         = $clog2(LINE_BYTES / 2 + 1),
  parameter BW         = $clog2(LINE_BYTES + 1)
) (
  input  wire [63:0]   line_addr,
  input  wire [BW-1:0] req_lo,
  input  wire [BW-1:0] req_hi,
  input  wire [63:0]   base,
  input  wire [31:0]   size,
  input  wire [23:0]   pitch,
  input  wire [35:0]   recip,   // ceil(2^36 / pitch), pitch >= 2
  input  wire [1:0]    dtype,
  output reg  [23:0]   row,
  output reg  [23:0]   col0,
  output reg  [LW-1:0] lo,
  output reg  [LW-1:0] hi
);
  localparam [63:0] LB = LINE_BYTES;
  wire        f32     = dtype == 2'd0;
  wire [63:0] lim     = base + {32'd0, size};
  // region bounds relative to the line, clamped to [0, LINE_BYTES]
  wire [63:0] d_base  = base - line_addr;
  wire [63:0] d_lim   = lim - line_addr;
  wire [BW-1:0] b_lo  = (base > line_addr) ? d_base[BW-1:0] : {BW{1'b0}};
  wire [BW-1:0] b_hi  = (lim < line_addr + LB) ? d_lim[BW-1:0] : LB[BW-1:0];
  wire [BW-1:0] rl    = (b_lo > req_lo) ? b_lo : req_lo;
  wire [BW-1:0] rh    = (b_hi < req_hi) ? b_hi : req_hi;
  // first whole element at or after rl; elements end at or before rh
  wire [BW:0]   rl_up = f32 ? ({1'b0, rl} + 3) : ({1'b0, rl} + 1);
  wire [LW-1:0] e_lo  = f32 ? rl_up[LW+1:2] : rl_up[LW:1];
  wire [LW-1:0] e_hi  = f32 ? {1'b0, rh[BW-1:2]} : rh[BW-1:1];
  wire [BW:0]   lo_b  = f32 ? {e_lo, 2'b00} : {1'b0, e_lo, 1'b0};
  wire [63:0]   off_w = line_addr + {{(63-BW){1'b0}}, lo_b} - base;
  wire [31:0]   off   = off_w[31:0];
  wire [67:0]   prod  = {36'd0, off} * {32'd0, recip};
  wire [31:0]   q_est = prod[67:36];
  wire [55:0]   qp    = {24'd0, q_est} * {32'd0, pitch};
  wire [56:0]   r_est = {25'd0, off} - {1'b0, qp};
  wire          neg   = r_est[56];
  wire [56:0]   r_fix = r_est + {33'd0, pitch};
  wire [23:0]   rem   = neg ? r_fix[23:0] : r_est[23:0];
  always @* begin
    row  = neg ? (q_est[23:0] - 24'd1) : q_est[23:0];
    col0 = f32 ? {2'b0, rem[23:2]} : {1'b0, rem[23:1]};
    lo   = e_lo;
    hi   = (e_hi > e_lo) ? e_hi : e_lo;
  end
endmodule
