// Spartan sparsity monitor, RTL (one per L2 slice, on the write path). Function, register map and counting
// semantics: docs/hw-units.md / regmap.h (this project's design; the Spartan paper, Dong et al., TPDS 2021,
// gives the function only). For every write request into an enabled region it counts the non-zero elements
// (F32/F16/BF16; zero = +/-0.0) per tile in an on-chip counter table; FLUSH atomically adds each region's
// counts to its count table in memory (32 B groups, all-zero groups skipped) and zeroes them.
//
// Pipeline:
//   A  accept, region match, sampling counter, statistics
//   B  (one cycle per matching region) zero detect + line geometry (reciprocal multiply, no divider)
//   C  one cycle per (row segment x distinct tile) of the request: lane tiles, bucket select, popcount
//   D  counter read-modify-write (sync-read RAM, forwarding for back-to-back updates, saturating add)
// Interfaces (one clock, synchronous active-high reset, valid/ready):
//   s_*      write request: byte address, length (1..LINE_BYTES, inside one line), line-aligned data
//   mmio_*   register block (spartan_monitor_regs.v)
//   m_*      flush requests: 32 B atomic add of up to 8 u32 words (m_wmask) at a 32 B-aligned address;
//            posted, up to FLUSH_OUTSTANDING in flight, m_done pulses once per completed add
// Completion counter: with COMPL_PTR != 0 a flush ends with one more atomic add, of 1 to the u32 at COMPL_PTR
// (one word enabled), issued once every count-table add has completed; FLUSH_DONE follows its completion.
module sparsity_monitor #(
  parameter LINE_BYTES = 128,
  parameter NREG       = 16,
  parameter CAPACITY   = 8192,
  parameter FLUSH_OUTSTANDING = 32,      // atomic adds in flight during a flush (Little's law: docs/hw-units.md)
  parameter CAW        = $clog2(CAPACITY)
) (
  input  wire                    clk,
  input  wire                    rst,
  input  wire [31:0]             slice_id,
  // write requests seen by the L2 slice
  input  wire                    s_valid,
  output wire                    s_ready,
  input  wire [63:0]             s_addr,
  input  wire [$clog2(LINE_BYTES+1)-1:0] s_len,
  input  wire [LINE_BYTES*8-1:0] s_data,
  // MMIO
  input  wire                    mmio_valid,
  output wire                    mmio_ready,
  input  wire                    mmio_we,
  input  wire [11:0]             mmio_addr,
  input  wire [31:0]             mmio_wdata,
  output wire                    mmio_rvalid,
  output wire [31:0]             mmio_rdata,
  output wire [3:0]              mmio_err,
  // flush: atomic-add requests into the L2
  output wire                    m_valid,
  input  wire                    m_ready,
  input  wire                    m_done,     // one atomic add completed (pulse, one per cycle at most)
  output reg  [63:0]             m_addr,
  output reg  [255:0]            m_data,
  output reg  [7:0]              m_wmask,
  output wire                    busy
);
  localparam LANES = LINE_BYTES / 2;
  localparam LW    = $clog2(LANES + 1);
  localparam BW    = $clog2(LINE_BYTES + 1);
  localparam LBL   = $clog2(LINE_BYTES);
  localparam RW    = $clog2(NREG);
  localparam TW    = 32;

  // ---------------- register block ----------------
  wire               enable, div_busy, flush_start, clear_start;
  wire [3:0]         sample_shift;
  wire [NREG-1:0]    r_en, flush_mask;
  wire [NREG*64-1:0] r_base, r_ct_base;
  wire [63:0]        compl_ptr;
  wire [NREG*32-1:0] r_size, r_cols, r_tpr, r_tiles;
  wire [NREG*24-1:0] r_pitch;
  wire [NREG*36-1:0] r_recip;
  wire [NREG*2-1:0]  r_dtype;
  wire [NREG*4-1:0]  r_trl, r_tcl;
  wire [NREG*CAW-1:0] r_ctr_off;
  reg                st_seen, st_matched, st_sampled, fl_done_pulse;
  reg [NREG-1:0]     st_hits;
  reg [31:0]         fl_cycles;
  reg [2:0]          state;

  spartan_monitor_regs #(.NREG(NREG), .CAW(CAW), .CAPACITY(CAPACITY)) u_regs (
    .clk(clk), .rst(rst), .slice_id(slice_id),
    .mmio_valid(mmio_valid), .mmio_ready(mmio_ready), .mmio_we(mmio_we), .mmio_addr(mmio_addr),
    .mmio_wdata(mmio_wdata), .mmio_rvalid(mmio_rvalid), .mmio_rdata(mmio_rdata), .mmio_err(mmio_err),
    .enable(enable), .sample_shift(sample_shift), .r_en(r_en), .r_base(r_base), .r_size(r_size),
    .r_pitch(r_pitch), .r_recip(r_recip), .r_cols(r_cols), .r_dtype(r_dtype), .r_trl(r_trl),
    .r_tcl(r_tcl), .r_tpr(r_tpr), .r_tiles(r_tiles), .r_ctr_off(r_ctr_off), .r_ct_base(r_ct_base), .compl_ptr(compl_ptr),
    .flush_start(flush_start), .flush_mask(flush_mask), .clear_start(clear_start), .div_busy(div_busy),
    .flush_busy((state != S_RUN && state != S_CLEAR) || fl_queued || fl_done_pulse), .flush_done(fl_done_pulse), .flush_cycles(fl_cycles),
    .st_seen(st_seen), .st_matched(st_matched), .st_sampled(st_sampled), .st_region_hits(st_hits));

  localparam [2:0] S_CLEAR = 3'd0, S_RUN = 3'd1, S_DRAIN = 3'd2, S_FL_NEXT = 3'd3, S_FL_SCAN = 3'd4,
                   S_FL_WRITE = 3'd5, S_FL_WAIT = 3'd6;
  localparam OW = $clog2(FLUSH_OUTSTANDING + 1);
  reg [OW-1:0] fl_out;         // atomic adds in flight

  // ---------------- stage A: accept, match, sample ----------------
  reg                    a_valid;
  reg [63:0]             a_line;
  reg [BW-1:0]           a_lo, a_hi;
  reg [LINE_BYTES*8-1:0] a_data;
  reg [NREG-1:0]         a_hits;
  reg [31:0]             sample_k;
  reg                    clr_pending;
  // A FLUSH accepted while a CLEAR is pending or sweeping the table waits for the sweep (the TLM's CLEAR is
  // instantaneous, so there the flush sees cleared counters too); FLUSH_CYCLES counts the wait.
  reg                    fl_queued;

  reg [NREG-1:0] s_hits;
  integer r;
  wire [63:0] s_end = s_addr + {{(64-BW){1'b0}}, s_len};
  always @* begin
    for (r = 0; r < NREG; r = r + 1)
      s_hits[r] = r_en[r] && (s_addr < r_base[r*64 +: 64] + {32'd0, r_size[r*32 +: 32]})
                          && (s_end > r_base[r*64 +: 64]);
  end
  wire s_any     = enable && (s_hits != {NREG{1'b0}});
  wire s_sampled = (sample_k & ((32'd1 << sample_shift) - 32'd1)) == 32'd0;

  reg [RW-1:0] a_r;
  reg          a_last;
  always @* begin
    a_r = {RW{1'b0}};
    for (r = NREG - 1; r >= 0; r = r - 1)
      if (a_hits[r]) a_r = r[RW-1:0];
    a_last = (a_hits & (a_hits - {{(NREG-1){1'b0}}, 1'b1})) == {NREG{1'b0}};
  end
  wire b_ready;
  wire a_emit  = a_valid && b_ready;
  wire a_free  = !a_valid || (a_emit && a_last);
  assign s_ready = (state == S_RUN) && !div_busy && !clr_pending && !fl_queued && !flush_start && !clear_start && a_free;
  wire s_fire  = s_valid && s_ready;

  always @(posedge clk) begin
    st_seen    <= s_fire && enable;
    st_matched <= s_fire && s_any;
    st_sampled <= s_fire && s_any && s_sampled;
    st_hits    <= (s_fire && s_any) ? s_hits : {NREG{1'b0}};
    if (rst || clear_start) sample_k <= 32'd0;
    else if (s_fire && s_any) sample_k <= sample_k + 32'd1;
    if (rst) begin
      a_valid <= 1'b0;
      a_hits  <= {NREG{1'b0}};
    end else begin
      if (a_emit)
        a_hits <= a_hits & ~({{(NREG-1){1'b0}}, 1'b1} << a_r);
      if (a_emit && a_last)
        a_valid <= 1'b0;
      if (s_fire && s_any && s_sampled) begin
        a_valid <= 1'b1;
        a_line  <= {s_addr[63:LBL], {LBL{1'b0}}};
        a_lo    <= {1'b0, s_addr[LBL-1:0]};
        a_hi    <= {1'b0, s_addr[LBL-1:0]} + s_len;
        a_data  <= s_data;
        a_hits  <= s_hits;
      end
    end
  end

  // ---------------- stage B: zero detect + geometry ----------------
  reg                    b_valid;
  reg [63:0]             b_line;
  reg [BW-1:0]           b_lo, b_hi;
  reg [LINE_BYTES*8-1:0] b_data;
  reg [RW-1:0]           b_r;
  wire c_ready;
  assign b_ready = !b_valid || c_ready;
  always @(posedge clk) begin
    if (rst) b_valid <= 1'b0;
    else if (b_ready) begin
      b_valid <= a_emit;
      b_line  <= a_line;
      b_lo    <= a_lo;
      b_hi    <= a_hi;
      b_data  <= a_data;
      b_r     <= a_r;
    end
  end
  wire [1:0]       b_dtype = r_dtype[b_r*2 +: 2];
  wire [LANES-1:0] b_nz, b_nz_gran_unused;
  spartan_zero_detect #(.LINE_BYTES(LINE_BYTES)) u_zd (
    .data(b_data), .dtype(b_dtype), .nz_elem(b_nz), .nz_gran(b_nz_gran_unused));
  wire [23:0]   g_row, g_col0;
  wire [LW-1:0] g_lo, g_hi;
  spartan_line_geom #(.LINE_BYTES(LINE_BYTES)) u_geom (
    .line_addr(b_line), .req_lo(b_lo), .req_hi(b_hi), .base(r_base[b_r*64 +: 64]),
    .size(r_size[b_r*32 +: 32]), .pitch(r_pitch[b_r*24 +: 24]), .recip(r_recip[b_r*36 +: 36]),
    .dtype(b_dtype), .row(g_row), .col0(g_col0), .lo(g_lo), .hi(g_hi));

  // ---------------- stage C: row segments x tile buckets ----------------
  reg                c_valid, c_first;
  reg [23:0]         c_row, c_col0;
  reg [LW-1:0]       c_lo, c_hi;
  reg [RW-1:0]       c_r;
  reg [LANES-1:0]    c_nz, c_pend;
  wire [1:0]  c_dtype = r_dtype[c_r*2 +: 2];
  wire [23:0] c_pitch = r_pitch[c_r*24 +: 24];
  wire [23:0] c_pe    = (c_dtype == 2'd0) ? {2'b0, c_pitch[23:2]} : {1'b0, c_pitch[23:1]};
  wire [23:0] c_room  = c_pe - c_col0;                        // lanes left in this row (>= 1)
  wire [24:0] c_segend = {{(25-LW){1'b0}}, c_lo} + {1'b0, c_room};
  wire [LW-1:0] c_seg_hi = (c_segend < {{(25-LW){1'b0}}, c_hi}) ? c_segend[LW-1:0] : c_hi;
  wire [LANES-1:0]    lt_valid;
  wire [LANES*TW-1:0] lt_tile;
  spartan_lane_tiles #(.LANES(LANES), .TW(TW)) u_tiles (
    .row(c_row), .col0(c_col0), .seg_lo(c_lo), .seg_hi(c_seg_hi), .cols(r_cols[c_r*32 +: 32]),
    .tiles_per_row(r_tpr[c_r*32 +: 32]), .trl(r_trl[c_r*4 +: 4]), .tcl(r_tcl[c_r*4 +: 4]),
    .lane_valid(lt_valid), .lane_tile(lt_tile));
  wire [LANES-1:0] pend = c_first ? (lt_valid & c_nz) : c_pend;
  reg  [TW-1:0]    sel_tile;
  reg  [LANES-1:0] sel_mask;
  integer l;
  always @* begin
    sel_tile = {TW{1'b0}};
    for (l = LANES - 1; l >= 0; l = l - 1)
      if (pend[l]) sel_tile = lt_tile[l*TW +: TW];
    for (l = 0; l < LANES; l = l + 1)
      sel_mask[l] = pend[l] && (lt_tile[l*TW +: TW] == sel_tile);
  end
  wire [LW-1:0] sel_cnt;
  spartan_popcount #(.W(LANES), .CW(LW)) u_pop (.bits(sel_mask), .count(sel_cnt));
  wire [LANES-1:0] pend_next = pend & ~sel_mask;
  wire seg_done  = pend_next == {LANES{1'b0}};
  wire last_seg  = c_seg_hi == c_hi;
  wire c_done    = c_valid && seg_done && last_seg;
  assign c_ready = !c_valid || c_done;
  wire           u_valid = c_valid && (pend != {LANES{1'b0}});
  wire [CAW-1:0] u_addr  = r_ctr_off[c_r*CAW +: CAW] + sel_tile[CAW-1:0];
  always @(posedge clk) begin
    if (rst) begin
      c_valid <= 1'b0;
      c_first <= 1'b0;
    end else if (c_ready) begin
      c_valid <= b_valid;
      c_first <= 1'b1;
      c_row   <= g_row;
      c_col0  <= g_col0;
      c_lo    <= g_lo;
      c_hi    <= g_hi;
      c_r     <= b_r;
      c_nz    <= b_nz;
    end else if (seg_done) begin        // next row segment of the same request
      c_first <= 1'b1;
      c_row   <= c_row + 24'd1;
      c_col0  <= 24'd0;
      c_lo    <= c_seg_hi;
    end else begin
      c_first <= 1'b0;
      c_pend  <= pend_next;
    end
  end

  // ---------------- stage D: counter RMW; flush/clear share the table ports ----------------
  reg            d_valid;
  reg [CAW-1:0]  d_addr;
  reg [LW-1:0]   d_cnt;
  reg            lw_en;
  reg [CAW-1:0]  lw_addr;
  reg [31:0]     lw_data;
  reg            ct_rd_en, ct_wr_en;
  reg [CAW-1:0]  ct_rd_addr, ct_wr_addr;
  reg [31:0]     ct_wr_data;
  wire [31:0]    ct_rd_data;
  spartan_counter_table #(.DEPTH(CAPACITY), .AW(CAW)) u_table (
    .clk(clk), .rd_en(ct_rd_en), .rd_addr(ct_rd_addr), .rd_data(ct_rd_data),
    .wr_en(ct_wr_en), .wr_addr(ct_wr_addr), .wr_data(ct_wr_data));
  wire [31:0] d_old = (lw_en && lw_addr == d_addr) ? lw_data : ct_rd_data;
  wire [32:0] d_sum = {1'b0, d_old} + {{(33-LW){1'b0}}, d_cnt};
  wire [31:0] d_sat = d_sum[32] ? 32'hFFFFFFFF : d_sum[31:0];

  // flush scan: one counter per cycle, grouped by 32 B-aligned group of the count table in memory
  reg [CAW:0]     clr_i;
  reg [NREG-1:0]  fl_rem;
  reg [RW-1:0]    fl_r;
  reg [31:0]      fl_t;           // next tile to read
  reg             fl_pend;        // a read was issued last cycle
  reg [CAW-1:0]   fl_pend_idx;
  reg [2:0]       fl_pend_w;
  reg             fl_has;         // group buffer holds words of fl_grp
  reg [58:0]      fl_grp;
  reg             fl_nz;
  reg             fl_sem;         // the completion counter's add has been issued (S_FL_WRITE -> S_FL_WAIT)
  wire [63:0]     fl_a    = r_ct_base[fl_r*64 +: 64] + {30'd0, fl_t, 2'b00};
  wire [31:0]     fl_tiles = r_tiles[fl_r*32 +: 32];
  wire            fl_more = fl_t < fl_tiles;
  wire            fl_issue = (state == S_FL_SCAN) && fl_more && (!fl_has || fl_a[63:5] == fl_grp);
  wire            fl_gdone = (state == S_FL_SCAN) && fl_has && !fl_pend && !fl_issue;
  reg [RW-1:0]    fl_pick;
  always @* begin
    fl_pick = {RW{1'b0}};
    for (r = NREG - 1; r >= 0; r = r - 1)
      if (fl_rem[r]) fl_pick = r[RW-1:0];
  end
  wire pipe_empty = !a_valid && !b_valid && !c_valid && !d_valid;
  assign m_valid  = (state == S_FL_WRITE) && (fl_out != FLUSH_OUTSTANDING[OW-1:0]);
  wire   m_fire   = m_valid && m_ready;
  assign busy = (state != S_RUN) || !pipe_empty || clr_pending || fl_queued || fl_done_pulse;

  always @* begin
    ct_rd_en   = u_valid;
    ct_rd_addr = u_addr;
    ct_wr_en   = d_valid;
    ct_wr_addr = d_addr;
    ct_wr_data = d_sat;
    if (state == S_CLEAR) begin
      ct_wr_en   = 1'b1;
      ct_wr_addr = clr_i[CAW-1:0];
      ct_wr_data = 32'd0;
    end else if (state == S_FL_SCAN || state == S_FL_WRITE) begin
      ct_rd_en   = fl_issue;
      ct_rd_addr = r_ctr_off[fl_r*CAW +: CAW] + fl_t[CAW-1:0];
      ct_wr_en   = fl_pend;              // read and clear
      ct_wr_addr = fl_pend_idx;
      ct_wr_data = 32'd0;
    end
  end

  always @(posedge clk) begin
    fl_done_pulse <= 1'b0;
    if (rst) begin
      state <= S_CLEAR; clr_i <= {(CAW+1){1'b0}}; clr_pending <= 1'b0; fl_rem <= {NREG{1'b0}}; fl_queued <= 1'b0;
      d_valid <= 1'b0; lw_en <= 1'b0; fl_pend <= 1'b0; fl_has <= 1'b0; fl_out <= {OW{1'b0}}; fl_sem <= 1'b0;
      fl_cycles <= 32'd0;
    end else begin
      d_valid <= u_valid;
      d_addr  <= u_addr;
      d_cnt   <= sel_cnt;
      lw_en   <= ct_wr_en;
      lw_addr <= ct_wr_addr;
      lw_data <= ct_wr_data;
      if (clear_start) clr_pending <= 1'b1;
      if (m_fire && !m_done) fl_out <= fl_out + 1'b1;
      else if (!m_fire && m_done && fl_out != {OW{1'b0}}) fl_out <= fl_out - 1'b1;
      if ((state != S_RUN && state != S_CLEAR) || fl_queued) fl_cycles <= fl_cycles + 32'd1;
      case (state)
        S_CLEAR: begin
          if (flush_start) begin   // runs after the sweep (S_RUN below)
            fl_rem    <= flush_mask;
            fl_cycles <= 32'd1;
            fl_queued <= 1'b1;
          end
          clr_i <= clr_i + 1'b1;
          if (clr_i == CAPACITY[CAW:0] - 1'b1) begin
            state       <= S_RUN;
            clr_pending <= 1'b0;
          end
        end
        S_RUN: begin
          if (flush_start && (clr_pending || clear_start)) begin  // the CLEAR written before it goes first
            fl_rem    <= flush_mask;
            fl_cycles <= 32'd1;
            fl_queued <= 1'b1;
          end else if (flush_start) begin
            fl_rem    <= flush_mask;
            fl_cycles <= 32'd1;
            state     <= S_DRAIN;
          end else if (fl_queued && !clr_pending) begin
            fl_queued <= 1'b0;
            state     <= S_DRAIN;
          end else if (clr_pending && pipe_empty) begin
            clr_i <= {(CAW+1){1'b0}};
            state <= S_CLEAR;
          end
        end
        S_DRAIN: if (pipe_empty) state <= S_FL_NEXT;
        S_FL_NEXT: begin
          if (fl_rem == {NREG{1'b0}}) begin
            state <= S_FL_WAIT;
          end else begin
            fl_r   <= fl_pick;
            fl_rem <= fl_rem & ~({{(NREG-1){1'b0}}, 1'b1} << fl_pick);
            fl_t   <= 32'd0;
            fl_has <= 1'b0;
            state  <= S_FL_SCAN;
          end
        end
        S_FL_SCAN: begin
          fl_pend     <= fl_issue;
          fl_pend_idx <= ct_rd_addr;
          fl_pend_w   <= fl_a[4:2];
          if (fl_issue) begin
            fl_t <= fl_t + 32'd1;
            if (!fl_has) begin
              fl_has  <= 1'b1;
              fl_grp  <= fl_a[63:5];
              fl_nz   <= 1'b0;
              m_wmask <= 8'd0;
              m_data  <= 256'd0;
            end
          end
          if (fl_pend) begin
            m_data[fl_pend_w*32 +: 32] <= ct_rd_data;
            m_wmask[fl_pend_w]         <= 1'b1;
            if (ct_rd_data != 32'd0) fl_nz <= 1'b1;
          end
          if (fl_gdone) begin
            if (fl_nz) begin
              m_addr  <= {fl_grp, 5'd0};
              state   <= S_FL_WRITE;
            end else begin
              fl_has <= 1'b0;
            end
          end else if (!fl_has && !fl_pend && !fl_more) begin
            state <= S_FL_NEXT;
          end
        end
        S_FL_WRITE: begin
          fl_pend <= 1'b0;
          if (m_fire) begin
            fl_has <= 1'b0;
            state  <= fl_sem ? S_FL_WAIT : S_FL_SCAN;
          end
        end
        S_FL_WAIT: begin      // the flush ends when the last atomic add has completed
          if (fl_out == {OW{1'b0}} || (fl_out == {{(OW-1){1'b0}}, 1'b1} && m_done)) begin
            if (compl_ptr != 64'd0 && !fl_sem) begin   // then the completion counter's add
              fl_sem  <= 1'b1;
              m_addr  <= {compl_ptr[63:5], 5'd0};
              m_data  <= {224'd0, 32'd1} << {compl_ptr[4:2], 5'd0};   // regmap monitor::kComplIncrement
              m_wmask <= 8'd1 << compl_ptr[4:2];
              state   <= S_FL_WRITE;
            end else begin
              fl_sem        <= 1'b0;
              state         <= S_RUN;
              fl_done_pulse <= 1'b1;
            end
          end
        end
        default: state <= S_RUN;
      endcase
    end
  end
endmodule
