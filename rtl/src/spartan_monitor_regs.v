// MMIO register block of the sparsity monitor. Register map, error codes and rules: docs/hw-units.md and
// hw/spartan/include/spartan/hw/regmap.h (namespace monitor) — this block implements that map at pin level.
// Request: mmio_valid/mmio_ready (ready is low only while a reciprocal is computed) with we/addr (window offset)/wdata; response one
// cycle later: mmio_rvalid with rdata and err (regmap MmioError code, 0 = ok). A bad access changes nothing
// and latches ERR_CODE (first error wins). Byte-enable and size errors are decided by the TLM transactor
// (pins carry only 4-byte accesses).
// RTL limits beyond the TLM rules (BadValue here): ROW_PITCH < 2^24, ROWS < 2^24, ROWS*ROW_PITCH < 2^32,
// BASE element-aligned.
// Enabling a region (CFG.EN 0->1) starts a 36-cycle division RECIP = ceil(2^36 / ROW_PITCH) used by the
// address generator; div_busy is high meanwhile (the write stream stalls).
module spartan_monitor_regs #(
  parameter NREG      = 16,
  parameter CAW       = 13,          // log2(CAPACITY)
  parameter CAPACITY  = 8192
) (
  input  wire                 clk,
  input  wire                 rst,
  input  wire [31:0]          slice_id,
  input  wire                 mmio_valid,
  output wire                 mmio_ready,
  input  wire                 mmio_we,
  input  wire [11:0]          mmio_addr,
  input  wire [31:0]          mmio_wdata,
  output reg                  mmio_rvalid,
  output reg  [31:0]          mmio_rdata,
  output reg  [3:0]           mmio_err,
  // configuration out (flattened per region)
  output reg                  enable,
  output reg  [3:0]           sample_shift,
  output wire [NREG-1:0]      r_en,
  output wire [NREG*64-1:0]   r_base,
  output wire [NREG*32-1:0]   r_size,
  output wire [NREG*24-1:0]   r_pitch,
  output wire [NREG*36-1:0]   r_recip,
  output wire [NREG*32-1:0]   r_cols,
  output wire [NREG*2-1:0]    r_dtype,
  output wire [NREG*4-1:0]    r_trl,
  output wire [NREG*4-1:0]    r_tcl,
  output wire [NREG*32-1:0]   r_tpr,
  output wire [NREG*32-1:0]   r_tiles,
  output wire [NREG*CAW-1:0]  r_ctr_off,
  output wire [NREG*64-1:0]   r_ct_base,
  output reg  [63:0]          compl_ptr,      // COMPL_PTR: flush completion counter (0: none; 4-byte aligned)
  // commands and status
  output reg                  flush_start,
  output reg  [NREG-1:0]      flush_mask,
  output reg                  clear_start,
  output wire                 div_busy,
  input  wire                 flush_busy,
  input  wire                 flush_done,     // pulse: flush finished
  input  wire [31:0]          flush_cycles,
  input  wire                 st_seen,
  input  wire                 st_matched,
  input  wire                 st_sampled,
  input  wire [NREG-1:0]      st_region_hits
);
  localparam RW = $clog2(NREG);
  // error codes (regmap MmioError)
  localparam [3:0] E_OK = 4'd0, E_UNMAPPED = 4'd1, E_MISALIGNED = 4'd2, E_READONLY = 4'd5,
                   E_BADVALUE = 4'd6, E_BUSY = 4'd7;

  reg [31:0] cfg   [0:NREG-1];
  reg [31:0] tile  [0:NREG-1];
  reg [63:0] base  [0:NREG-1];
  reg [31:0] rows  [0:NREG-1];
  reg [31:0] cols  [0:NREG-1];
  reg [31:0] pitch [0:NREG-1];
  reg [31:0] coff  [0:NREG-1];
  reg [63:0] ctb   [0:NREG-1];
  reg [31:0] matched [0:NREG-1];
  reg [35:0] recip [0:NREG-1];
  reg [3:0]  trl   [0:NREG-1];
  reg [3:0]  tcl   [0:NREG-1];
  reg [31:0] tpr   [0:NREG-1];
  reg [31:0] tiles [0:NREG-1];
  reg [NREG-1:0] en;
  reg [31:0] lines_seen, lines_matched, lines_sampled, flush_cyc;
  reg        flush_done_flag, err_flag;
  reg [31:0] err_code;

  // reciprocal divider
  reg          dv_busy;
  reg [5:0]    dv_i;
  reg [23:0]   dv_rem;
  reg [35:0]   dv_q;
  reg [RW-1:0] dv_r;
  // Waiver: bit 24 of the difference is the borrow of a subtraction that is only taken when it is 0.
  /* verilator lint_off UNUSEDSIGNAL */
  wire [24:0]  dv_sub = {dv_rem, 1'b1} - {1'b0, pitch[dv_r][23:0]};
  /* verilator lint_on UNUSEDSIGNAL */
  assign div_busy   = dv_busy;
  assign mmio_ready = !dv_busy;   // accesses wait while a reciprocal is computed (<= 37 cycles)

  genvar g;
  generate
    for (g = 0; g < NREG; g = g + 1) begin : g_out
      assign r_en[g]                   = en[g];
      assign r_base [g*64 +: 64]       = base[g];
      assign r_size [g*32 +: 32]       = rows[g] * pitch[g];
      assign r_pitch[g*24 +: 24]       = pitch[g][23:0];
      assign r_recip[g*36 +: 36]       = recip[g];
      assign r_cols [g*32 +: 32]       = cols[g];
      assign r_dtype[g*2 +: 2]         = cfg[g][5:4];
      assign r_trl  [g*4 +: 4]         = trl[g];
      assign r_tcl  [g*4 +: 4]         = tcl[g];
      assign r_tpr  [g*32 +: 32]       = tpr[g];
      assign r_tiles[g*32 +: 32]       = tiles[g];
      assign r_ctr_off[g*CAW +: CAW]   = coff[g][CAW-1:0];
      assign r_ct_base[g*64 +: 64]     = ctb[g];
    end
  endgenerate

  // ---- decode ----
  wire        is_region = mmio_addr[11:8] != 4'h0;
  wire [5:0]  rslot     = mmio_addr[11:6] - 6'd4;          // 0x100 -> region 0
  wire [RW-1:0] ri      = rslot[RW-1:0];
  wire [3:0]  roff      = mmio_addr[5:2];
  wire        rmapped   = is_region && ({26'd0, rslot} < NREG) && roff <= 4'hD;
  wire        gmapped   = !is_region && mmio_addr[7:0] <= 8'h34;

  // ---- validation of CFG writes (uses the staged registers of region ri and the new CFG value) ----
  function is_pow2_256(input [15:0] v);
    is_pow2_256 = v != 16'd0 && v <= 16'd256 && (v & (v - 16'd1)) == 16'd0;
  endfunction
  function [3:0] log2_256(input [15:0] v);
    integer b;
    begin
      log2_256 = 4'd0;
      for (b = 0; b < 9; b = b + 1)
        if (v[b]) log2_256 = b[3:0];
    end
  endfunction
  wire [1:0]  w_dt    = mmio_wdata[5:4];
  wire [2:0]  w_eb    = (w_dt == 2'd0) ? 3'd4 : 3'd2;
  wire [15:0] v_tr    = tile[ri][15:0];
  wire [15:0] v_tc    = tile[ri][31:16];
  wire [3:0]  v_trl   = log2_256(v_tr);
  wire [3:0]  v_tcl   = log2_256(v_tc);
  wire [31:0] v_tpr   = (cols[ri] >> v_tcl) + {31'd0, (cols[ri] & ((32'd1 << v_tcl) - 32'd1)) != 32'd0};
  wire [31:0] v_tpc   = (rows[ri] >> v_trl) + {31'd0, (rows[ri] & ((32'd1 << v_trl) - 32'd1)) != 32'd0};
  wire [63:0] v_tiles = {32'd0, v_tpr} * {32'd0, v_tpc};
  wire [63:0] v_size  = {32'd0, rows[ri]} * {32'd0, pitch[ri]};
  wire [34:0] v_rowb  = {3'd0, cols[ri]} * {32'd0, w_eb};
  wire [64:0] v_end   = {1'b0, v_tiles} + {33'd0, coff[ri]};
  // the counter range [CNT_OFFSET, CNT_OFFSET + TILES) must not overlap that of another enabled region
  reg         v_overlap;
  integer     q;
  always @* begin
    v_overlap = 1'b0;
    for (q = 0; q < NREG; q = q + 1)
      if (en[q] && q[RW-1:0] != ri && {33'd0, coff[ri]} < {33'd0, coff[q]} + {33'd0, tiles[q]}
          && {33'd0, coff[q]} < v_end)
        v_overlap = 1'b1;
  end
  wire        v_ok    = (w_dt != 2'd3) && !v_overlap && is_pow2_256(v_tr) && is_pow2_256(v_tc)
                     && rows[ri] != 32'd0 && cols[ri] != 32'd0
                     && (w_dt == 2'd0 ? pitch[ri][1:0] == 2'd0 : pitch[ri][0] == 1'b0)
                     && {3'd0, pitch[ri]} >= v_rowb && ctb[ri][1:0] == 2'd0
                     && v_end <= CAPACITY
                     // RTL limits
                     && pitch[ri][31:24] == 8'd0 && rows[ri][31:24] == 8'd0 && v_size[63:32] == 32'd0
                     && (w_dt == 2'd0 ? base[ri][1:0] == 2'd0 : base[ri][0] == 1'b0);

  // ---- access check ----
  // A flush is busy from the cycle after its FLUSH write (flush_start), before the monitor's state shows it.
  wire fbusy = flush_busy || flush_start;
  reg [3:0] acc_err;
  always @* begin
    acc_err = E_OK;
    if (mmio_addr[1:0] != 2'b00)            acc_err = E_MISALIGNED;
    else if (!gmapped && !rmapped)          acc_err = E_UNMAPPED;
    else if (mmio_we) begin
      if (!is_region) begin
        case (mmio_addr[7:0])
          8'h04:   acc_err = (mmio_wdata[1] && fbusy) ? E_BUSY : E_OK;   // CLEAR during a flush
          8'h0C, 8'h10: acc_err = E_OK;
          8'h14:   acc_err = fbusy ? E_BUSY : E_OK;
          // COMPL_PTR_LO / HI: the flush uses the value at its end (regmap.h)
          8'h30:   acc_err = (mmio_wdata[1:0] != 2'b00) ? E_BADVALUE : fbusy ? E_BUSY : E_OK;
          8'h34:   acc_err = fbusy ? E_BUSY : E_OK;
          default: acc_err = E_READONLY;
        endcase
      end else begin
        if (roff >= 4'hA) acc_err = E_READONLY;
        else if (fbusy) acc_err = E_BUSY;            // the flush reads the region registers
        else if (roff == 4'h0) acc_err = (mmio_wdata[0] ? !v_ok : (w_dt == 2'd3)) ? E_BADVALUE : E_OK;
        else if (en[ri]) acc_err = E_BUSY;
      end
    end
  end

  integer k;
  always @(posedge clk) begin
    flush_start <= 1'b0;
    clear_start <= 1'b0;
    mmio_rvalid <= 1'b0;
    if (rst) begin
      enable <= 1'b0; sample_shift <= 4'd0; en <= {NREG{1'b0}};
      lines_seen <= 32'd0; lines_matched <= 32'd0; lines_sampled <= 32'd0; flush_cyc <= 32'd0;
      flush_done_flag <= 1'b0; err_flag <= 1'b0; err_code <= 32'd0;
      flush_mask <= {NREG{1'b0}}; compl_ptr <= 64'd0;
      dv_busy <= 1'b0; dv_i <= 6'd0; dv_rem <= 24'd0; dv_q <= 36'd0; dv_r <= {RW{1'b0}};
      mmio_rdata <= 32'd0; mmio_err <= 4'd0;
      for (k = 0; k < NREG; k = k + 1) begin
        cfg[k] <= 32'd0; tile[k] <= 32'd0; base[k] <= 64'd0; rows[k] <= 32'd0; cols[k] <= 32'd0;
        pitch[k] <= 32'd0; coff[k] <= 32'd0; ctb[k] <= 64'd0; matched[k] <= 32'd0; recip[k] <= 36'd0;
        trl[k] <= 4'd0; tcl[k] <= 4'd0; tpr[k] <= 32'd0; tiles[k] <= 32'd0;
      end
    end else begin
      // statistics from the datapath
      if (st_seen)    lines_seen    <= lines_seen + 32'd1;
      if (st_matched) lines_matched <= lines_matched + 32'd1;
      if (st_sampled) lines_sampled <= lines_sampled + 32'd1;
      for (k = 0; k < NREG; k = k + 1)
        if (st_region_hits[k]) matched[k] <= matched[k] + 32'd1;
      if (flush_done) begin
        flush_done_flag <= 1'b1;
        flush_cyc       <= flush_cycles;
      end
      // restoring division of (2^36 - 1) by the pitch, one bit per cycle; then RECIP = q + 1
      if (dv_busy) begin
        if (dv_i != 6'd0) begin
          dv_rem <= dv_sub[24] ? {dv_rem[22:0], 1'b1} : dv_sub[23:0];
          dv_q   <= {dv_q[34:0], !dv_sub[24]};
          dv_i   <= dv_i - 6'd1;
        end else begin
          recip[dv_r] <= dv_q + 36'd1;
          dv_busy     <= 1'b0;
        end
      end
      if (mmio_valid && mmio_ready) begin
        mmio_rvalid <= 1'b1;
        mmio_err    <= acc_err;
        mmio_rdata  <= 32'd0;
        if (acc_err != E_OK) begin
          if (!err_flag) begin
            err_flag <= 1'b1;
            err_code <= {mmio_we, 3'd0, mmio_addr, 8'd0, 4'd0, acc_err};
          end
        end else if (mmio_we) begin
          if (!is_region) begin
            case (mmio_addr[7:0])
              8'h04: begin
                enable <= mmio_wdata[0];
                if (mmio_wdata[1]) begin
                  clear_start <= 1'b1;
                  lines_seen <= 32'd0; lines_matched <= 32'd0; lines_sampled <= 32'd0;
                  flush_done_flag <= 1'b0;
                  for (k = 0; k < NREG; k = k + 1) matched[k] <= 32'd0;
                end
              end
              8'h0C: begin err_flag <= 1'b0; err_code <= 32'd0; end
              8'h10: sample_shift <= mmio_wdata[3:0];
              8'h30: compl_ptr[31:0]  <= mmio_wdata;
              8'h34: compl_ptr[63:32] <= mmio_wdata;
              8'h14: begin
                flush_start <= 1'b1;
                flush_mask  <= mmio_wdata[NREG-1:0] & en;
                flush_done_flag <= 1'b0;
              end
              default: ;
            endcase
          end else begin
            case (roff)
              4'h0: begin
                cfg[ri] <= {26'd0, mmio_wdata[5:4], 3'd0, mmio_wdata[0]};
                en[ri]  <= mmio_wdata[0];
                if (mmio_wdata[0]) begin
                  trl[ri]   <= v_trl;
                  tcl[ri]   <= v_tcl;
                  tpr[ri]   <= v_tpr;
                  tiles[ri] <= v_tiles[31:0];
                  if (!en[ri]) begin
                    dv_busy <= 1'b1; dv_i <= 6'd36; dv_rem <= 24'd0; dv_q <= 36'd0; dv_r <= ri;
                  end
                end
              end
              4'h1: tile[ri]  <= mmio_wdata;
              4'h2: base[ri][31:0]  <= mmio_wdata;
              4'h3: base[ri][63:32] <= mmio_wdata;
              4'h4: rows[ri]  <= mmio_wdata;
              4'h5: cols[ri]  <= mmio_wdata;
              4'h6: pitch[ri] <= mmio_wdata;
              4'h7: coff[ri]  <= mmio_wdata;
              4'h8: ctb[ri][31:0]  <= mmio_wdata;
              4'h9: ctb[ri][63:32] <= mmio_wdata;
              default: ;
            endcase
          end
        end else begin
          if (!is_region) begin
            case (mmio_addr[7:0])
              8'h00: mmio_rdata <= 32'h53504D31;   // "SPM1"
              8'h04: mmio_rdata <= {31'd0, enable};
              8'h08: mmio_rdata <= {29'd0, err_flag, flush_done_flag, fbusy};   // busy from the FLUSH write on
              8'h0C: mmio_rdata <= err_code;
              8'h10: mmio_rdata <= {28'd0, sample_shift};
              8'h18: mmio_rdata <= lines_seen;
              8'h1C: mmio_rdata <= lines_matched;
              8'h20: mmio_rdata <= lines_sampled;
              8'h24: mmio_rdata <= CAPACITY;
              8'h28: mmio_rdata <= flush_cyc;
              8'h2C: mmio_rdata <= slice_id;
              8'h30: mmio_rdata <= compl_ptr[31:0];
              8'h34: mmio_rdata <= compl_ptr[63:32];
              default: ;
            endcase
          end else begin
            case (roff)
              4'h0: mmio_rdata <= cfg[ri];
              4'h1: mmio_rdata <= tile[ri];
              4'h2: mmio_rdata <= base[ri][31:0];
              4'h3: mmio_rdata <= base[ri][63:32];
              4'h4: mmio_rdata <= rows[ri];
              4'h5: mmio_rdata <= cols[ri];
              4'h6: mmio_rdata <= pitch[ri];
              4'h7: mmio_rdata <= coff[ri];
              4'h8: mmio_rdata <= ctb[ri][31:0];
              4'h9: mmio_rdata <= ctb[ri][63:32];
              4'hA: mmio_rdata <= v_size[31:0];
              4'hB: mmio_rdata <= v_size[63:32];
              4'hC: mmio_rdata <= tiles_now;
              4'hD: mmio_rdata <= matched[ri];
              default: ;
            endcase
          end
        end
      end
    end
  end
  // TILES (RO) is 0 while TILE_ROWS or TILE_COLS is not a power of two in 1..256 (as the TLM model).
  wire [31:0] tiles_now = (is_pow2_256(v_tr) && is_pow2_256(v_tc)) ? v_tiles[31:0] : 32'd0;
endmodule
