// Compaction engine (docs/hw-units.md "CompactionEngine"; register map and descriptor: regmap.h namespace
// engine; output bytes: sw/format/include/spartan/format/tile_format.h). This project's design.
//
// Datapath: one 128 B line per cycle. Per tile: the count word (one-line count-table cache) decides DENSE /
// zero / compact. A compacted tile is fetched into a tile buffer (line reads, one issued per cycle, up to
// RD_OUTS in flight; TILE_BUFFERS buffers of BUF_LINES lines: with >= 2 a prefetcher decides the next tiles
// and fetches them while the current one is emitted); each response is zero-detected per lane (32 F32 / 64 F16-BF16 lanes) as it arrives
// (row non-zeros, ELL width, nnz). Then one or two emit passes over the buffered lines, one line per cycle:
// ELL indices (8-bit column lanes through a prefix-sum compactor) or BITMAP rows, then the values (16-bit
// granules through a second compactor); each cycle's packed bytes (+ ELL row padding) go as one chunk of up
// to 128 B into the output packer (spartan_line_writer), which writes a full line per cycle. Headers go
// through a second packer. Timing rule: docs/hw-units.md "Calibration from the RTL" (the TLM engine's).
// Descriptors come from the MMIO staging registers (SUBMIT) or from memory (FETCH: one line read at
// DESC_PTR + 64 * ENGINE_INDEX while no job runs, loaded into the staging registers and submitted).
// Completion record: with COMPL_PTR != 0 at a job's start, the job ends with one 32-byte write of {TAG,
// STATUS, OUT_BYTES, CYCLES, 4 x 0} at COMPL_PTR + 32 * ENGINE_INDEX, issued once every other write is answered;
// DONE_COUNT and LAST_* change when that write is answered (a bus error on it latches ERR_CODE ComplWrite).
// Functionally: ELL/BITMAP, DENSE in place, zero tiles, a count table of CT_PITCH entries per tile row,
// D_CFG.SIZE_RULE (a fetched tile its sparse format
// would not make smaller is written DENSE), sampling estimates, OutOverflow, bus errors.
//
// Pins: MMIO as the monitor (response one cycle after acceptance, mmio_err = MmioError code);
// rd_*: line read requests (128 B-aligned address) and in-order responses, up to RD_OUTS outstanding;
// wr_*: line writes with byte strobes, posted; wr_resp_valid pulses once per completed write.
module compaction_engine #(
  parameter QDEPTH            = 8,
  parameter READ_BUFFER_BYTES = 16384,
  parameter RD_OUTS           = 256,                             // line reads in flight (Little's law: docs/hw-units.md)
  parameter BUF_LINES         = READ_BUFFER_BYTES / 128 + 512,   // one tile buffer: any valid tile's lines
  parameter TILE_BUFFERS      = 4,                               // 1: sequential; >= 2: fetch ahead of emit
  parameter DQ_DEPTH          = 16                               // prefetcher's decisions ahead of the emitter
) (
  input  wire          clk,
  input  wire          rst,
  input  wire          mmio_valid,
  output wire          mmio_ready,
  input  wire          mmio_we,
  input  wire [11:0]   mmio_addr,
  input  wire [31:0]   mmio_wdata,
  output reg           mmio_rvalid,
  output reg  [31:0]   mmio_rdata,
  output reg  [3:0]    mmio_err,
  output reg           rd_valid,
  input  wire          rd_ready,
  output reg  [63:0]   rd_addr,
  input  wire          rd_resp_valid,
  output wire          rd_resp_ready,
  input  wire [1023:0] rd_resp_data,
  input  wire          rd_resp_err,
  output wire          wr_valid,
  input  wire          wr_ready,
  output wire [63:0]   wr_addr,
  output wire [1023:0] wr_data,
  output wire [127:0]  wr_strb,
  input  wire          wr_resp_valid,
  input  wire          wr_resp_err,
  output wire          busy
);
  localparam QAW = $clog2(QDEPTH);
  localparam [3:0] E_OK = 4'd0, E_UNMAPPED = 4'd1, E_MISALIGNED = 4'd2, E_READONLY = 4'd5,
                   E_BADVALUE = 4'd6, E_BUSY = 4'd7, E_QFULL = 4'd8, E_DESCFETCH = 4'd9, E_COMPL = 4'd10;
  // descriptor fetch: F_REQ waits for the read port (no job running), F_WAIT for the line, F_SUB submits it
  localparam [1:0] F_IDLE = 2'd0, F_REQ = 2'd1, F_WAIT = 2'd2, F_SUB = 2'd3;

  // ---------------- MMIO registers, staged descriptor, descriptor FIFO ----------------
  reg [31:0] desc [0:15];
  reg        enable, err_flag;
  reg [31:0] err_code, done_count, last_tag, last_cycles, last_out_bytes, last_status;
  reg [63:0] dptr;      // DESC_PTR
  reg [15:0] eidx;      // ENGINE_INDEX
  reg [63:0] cptr;      // COMPL_PTR (32-byte aligned; 0: no completion record)
  reg [1:0]  f_st;      // descriptor fetch state
  reg [63:6] f_addr;    // the descriptor being fetched (64-byte aligned)
  wire       f_busy = f_st != F_IDLE;
  wire       q_in_ready, q_out_valid;
  // reserved descriptor bits (CFG[3:2], TILE dims above 256) are not used by the job FSM
  /* verilator lint_off UNUSEDSIGNAL */
  wire [511:0] q_out;
  /* verilator lint_on UNUSEDSIGNAL */
  wire [QAW:0] q_level;
  reg        q_pop;
  wire [511:0] staged;
  genvar gi;
  generate
    for (gi = 0; gi < 16; gi = gi + 1) begin : g_staged
      assign staged[gi*32 +: 32] = desc[gi];
    end
  endgenerate
  // descriptor validity (regmap::descriptor_valid + the read-buffer rule)
  wire [1:0]  s_dt  = desc[5][1:0];
  wire [3:0]  s_fmt = desc[5][7:4];
  wire [15:0] s_tr  = desc[6][15:0];
  wire [15:0] s_tc  = desc[6][31:16];
  wire s_tr_ok = (s_tr != 16'd0) && (s_tr <= 16'd256) && ((s_tr & (s_tr - 16'd1)) == 16'd0);
  wire s_tc_ok = (s_tc != 16'd0) && (s_tc <= 16'd256) && ((s_tc & (s_tc - 16'd1)) == 16'd0);
  wire [33:0] s_row_bytes = (s_dt == 2'd0) ? {desc[3], 2'b00} : {1'b0, desc[3], 1'b0};
  wire [17:0] s_te = {9'd0, s_tr[8:0]} * {9'd0, s_tc[8:0]};
  wire [19:0] s_tile_bytes = (s_dt == 2'd0) ? {s_te, 2'b00} : {1'b0, s_te, 1'b0};
  // lines of the worst-case tile (each row segment touches at most ceil(TC*eb/128) + 1 lines)
  wire [10:0] s_tcb = (s_dt == 2'd0) ? {s_tc[8:0], 2'b00} : {1'b0, s_tc[8:0], 1'b0};
  /* verilator lint_off UNUSEDSIGNAL */
  wire [11:0] s_tcl = {1'b0, s_tcb} + 12'd127;
  /* verilator lint_on UNUSEDSIGNAL */
  wire [13:0] s_lines = {5'd0, s_tr[8:0]} * {9'd0, s_tcl[11:7] + 5'd1};
  // CT_PITCH (CFG[31:13]): 0, or at least the tiles per row, i.e. CT_PITCH * TILE_COLS >= COLS (TILE_COLS a power of two)
  wire [18:0] s_ctp = desc[5][31:13];
  wire [31:0] s_ctp_cols = {13'd0, s_ctp} << lg(s_tc[8:0]);
  wire s_ctp_ok = (s_ctp == 19'd0) || (s_ctp_cols >= desc[3]);
  wire s_valid = (s_dt != 2'd3) && s_ctp_ok && ((s_dt == 2'd0) ? (desc[0][1:0] == 2'b00) : (desc[0][0] == 1'b0)) &&
                 ({18'd0, s_lines} <= BUF_LINES) && (desc[2] != 32'd0) && (desc[3] != 32'd0) && (s_fmt == 4'd1 || s_fmt == 4'd2) &&
                 s_tr_ok && s_tc_ok && ((s_dt == 2'd0) ? (desc[4][1:0] == 2'b00) : (desc[4][0] == 1'b0)) &&
                 ({2'b00, desc[4]} >= s_row_bytes) && (desc[8][1:0] == 2'b00) && (desc[14][3:0] == 4'd0) &&
                 ({12'd0, s_tile_bytes} <= READ_BUFFER_BYTES);
  wire [11:0] a = mmio_addr;
  wire is_desc = a[11:6] == 6'b000100;   // 0x100..0x13C
  wire is_glob = a[11:6] == 6'd0 && a[5:2] <= 4'd14;
  wire is_cptr = a[11:3] == 9'h008;      // 0x040 COMPL_PTR_LO, 0x044 COMPL_PTR_HI
  reg  [3:0]  acc_err;
  reg  [31:0] acc_rdata;
  wire job_busy;
  always @* begin
    acc_err = E_OK;
    acc_rdata = 32'd0;
    if (a[1:0] != 2'b00) acc_err = E_MISALIGNED;
    else if (!is_desc && !is_glob && !is_cptr) acc_err = E_UNMAPPED;
    else if (is_cptr) begin
      acc_rdata = a[2] ? cptr[63:32] : cptr[31:0];
      if (mmio_we && !a[2] && mmio_wdata[4:0] != 5'd0) acc_err = E_BADVALUE;   // records are 32-byte aligned
    end
    else if (is_desc) begin
      acc_rdata = desc[a[5:2]];
      if (mmio_we && f_busy) acc_err = E_BUSY;   // the fetch loads these registers
    end
    else begin
      case (a[5:2])
        4'd0: begin acc_rdata = 32'h53504331; if (mmio_we) acc_err = E_READONLY; end
        4'd1: acc_rdata = {31'd0, enable};
        4'd2: begin
          acc_rdata = {16'd0, {(8-QAW-1){1'b0}}, q_level, 2'd0, f_busy, last_status != 32'd0, err_flag,
                       q_level == {(QAW+1){1'b0}}, !q_in_ready, job_busy};
          if (mmio_we) acc_err = E_READONLY;
        end
        4'd3: acc_rdata = err_code;
        4'd4: begin acc_rdata = QDEPTH; if (mmio_we) acc_err = E_READONLY; end
        4'd5: begin acc_rdata = done_count; if (mmio_we) acc_err = E_READONLY; end
        4'd6: begin acc_rdata = last_tag; if (mmio_we) acc_err = E_READONLY; end
        4'd7: begin acc_rdata = last_cycles; if (mmio_we) acc_err = E_READONLY; end
        4'd8: begin acc_rdata = last_out_bytes; if (mmio_we) acc_err = E_READONLY; end
        4'd9: begin acc_rdata = last_status; if (mmio_we) acc_err = E_READONLY; end
        4'd10: begin  // 0x028 SUBMIT (write-only, reads 0)
          if (mmio_we && f_busy) acc_err = E_BUSY;
          else if (mmio_we && !s_valid) acc_err = E_BADVALUE;
          else if (mmio_we && !q_in_ready) acc_err = E_QFULL;
        end
        4'd11: acc_rdata = dptr[31:0];
        4'd12: acc_rdata = dptr[63:32];
        4'd13: acc_rdata = {16'd0, eidx};
        default: begin  // 0x038 FETCH (write-only, reads 0); an engine not addressed ignores it
          if (mmio_we && eidx < mmio_wdata[15:0]) begin
            if (f_busy) acc_err = E_BUSY;
            else if (dptr[5:0] != 6'd0) acc_err = E_BADVALUE;
            else if (!q_in_ready) acc_err = E_QFULL;
          end
        end
      endcase
    end
  end
  assign mmio_ready = 1'b1;
  wire acc   = mmio_valid;
  wire wr_ok  = acc && mmio_we && acc_err == E_OK && is_glob;
  // a fetched descriptor is submitted in F_SUB (DESC[] holds it; host writes to DESC[] and SUBMIT are Busy)
  wire f_push = f_st == F_SUB && s_valid;
  wire q_push = (wr_ok && a[5:2] == 4'd10) || f_push;
  wire f_start = wr_ok && a[5:2] == 4'd14 && eidx < mmio_wdata[15:0];
  // the fetch takes the read port while no job runs (and holds the next job back until it is done)
  wire f_issue;       // assigned below the job FSM's state register
  wire f_resp  = f_st == F_WAIT && rd_resp_valid;
  wire [511:0] f_half = f_addr[6] ? rd_resp_data[1023:512] : rd_resp_data[511:0];   // the descriptor's half line
  // error of the fetch or of a completion-record write this cycle (latched in ERR_CODE unless an access error
  // is); the two never coincide: a fetch runs while no job does
  reg  [3:0] f_err;
  wire       cr_err;  // the completion record's write answered with an error (job FSM below)
  always @* begin
    f_err = E_OK;
    if (f_resp && rd_resp_err) f_err = E_DESCFETCH;
    else if (f_st == F_SUB && !s_valid) f_err = E_BADVALUE;
    else if (cr_err) f_err = E_COMPL;
  end
  // CTRL write with CLEAR_DONE (bit 1) set
  wire clear_done = acc && mmio_we && acc_err == E_OK && is_glob && a[5:2] == 4'd1 && mmio_wdata[1];
  spartan_sync_fifo #(.W(512), .DEPTH(QDEPTH)) u_queue (
    .clk(clk), .rst(rst), .in_valid(q_push), .in_ready(q_in_ready), .in_data(staged),
    .out_valid(q_out_valid), .out_ready(q_pop), .out_data(q_out), .level(q_level));

  // job completion (from the job FSM below)
  reg        job_done;
  reg [31:0] job_tag, job_cycles, job_out_bytes, job_status;
  integer k;
  always @(posedge clk) begin
    if (rst) begin
      for (k = 0; k < 16; k = k + 1) desc[k] <= 32'd0;
      enable <= 1'b0; err_flag <= 1'b0; err_code <= 32'd0; done_count <= 32'd0; last_tag <= 32'd0;
      last_cycles <= 32'd0; last_out_bytes <= 32'd0; last_status <= 32'd0; mmio_rvalid <= 1'b0;
      dptr <= 64'd0; eidx <= 16'd0; f_st <= F_IDLE; f_addr <= 58'd0; cptr <= 64'd0;
    end else begin
      mmio_rvalid <= acc;
      mmio_rdata  <= (acc && !mmio_we && acc_err == E_OK) ? acc_rdata : 32'd0;
      mmio_err    <= acc ? acc_err : E_OK;
      if (acc && acc_err != E_OK && !err_flag) begin
        err_flag <= 1'b1;
        err_code <= {mmio_we, 3'd0, a, 8'd0, 4'd0, acc_err};
      end
      if (acc && mmio_we && acc_err == E_OK) begin
        if (is_cptr) begin
          if (a[2]) cptr[63:32] <= mmio_wdata;
          else cptr[31:0] <= mmio_wdata;
        end
        else if (is_desc) desc[a[5:2]] <= mmio_wdata;
        else if (a[5:2] == 4'd1) begin
          enable <= mmio_wdata[0];
          if (clear_done) done_count <= 32'd0;
        end else if (a[5:2] == 4'd3) begin
          err_flag <= 1'b0;
          err_code <= 32'd0;
        end else if (a[5:2] == 4'd11) dptr[31:0] <= mmio_wdata;
        else if (a[5:2] == 4'd12) dptr[63:32] <= mmio_wdata;
        else if (a[5:2] == 4'd13) eidx <= mmio_wdata[15:0];
      end
      // descriptor fetch
      if (f_start) begin
        f_st <= F_REQ;
        f_addr <= dptr[63:6] + {42'd0, eidx};
      end
      if (f_issue) f_st <= F_WAIT;
      if (f_resp) begin
        if (rd_resp_err) f_st <= F_IDLE;
        else begin
          for (k = 0; k < 16; k = k + 1) desc[k] <= f_half[k*32 +: 32];
          f_st <= F_SUB;
        end
      end
      if (f_st == F_SUB) f_st <= F_IDLE;
      // a fetch error after an ERR_CODE clear of the same cycle is kept; an access error of the cycle wins
      if (f_err != E_OK && !(acc && acc_err != E_OK) && (!err_flag || (wr_ok && a[5:2] == 4'd3))) begin
        err_flag <= 1'b1;
        err_code <= {1'b1, 3'd0, cr_err ? 12'h040 : 12'h038, 8'd0, 4'd0, f_err};
      end
      if (job_done) begin
        // a CLEAR_DONE written in the completion cycle zeroes the count before this job is counted (it was lost:
        // DONE_COUNT read old + 1; fresh-eyes review of the units, 2026-12-07)
        done_count     <= (clear_done ? 32'd0 : done_count) + 32'd1;
        last_tag       <= job_tag;
        last_cycles    <= job_cycles;
        last_out_bytes <= job_out_bytes;
        last_status    <= job_status;
      end
    end
  end

  // ---------------- job FSM ----------------
  // M (the tile FSM): decide, wait for the tile's lines to be counted, emit, header, next (in tile order).
  // TILE_BUFFERS = 1: M itself reads the count table and starts the fetch of each compacted tile (the
  // sequential engine). TILE_BUFFERS >= 2: a prefetcher P walks the tiles ahead of M with its own count-table
  // line, decides them, passes the decisions through a queue of DQ_DEPTH entries and starts the fetch of
  // each compacted tile into a free tile buffer (at most TILE_BUFFERS fetched and not yet emitted), so that
  // the fetch of the next tiles overlaps the emit passes of the current one. Between them: the read issuer
  // (one line read per cycle, <= RD_OUTS in flight) and the counter B (responses in order, per tile buffer).
  localparam [3:0] S_IDLE = 4'd0, S_TILE = 4'd1, S_CRD = 4'd2, S_FETCH = 4'd3, S_CNTD = 4'd4, S_PASS = 4'd5,
                   S_NEXT = 4'd7, S_FIN = 4'd8, S_DONE = 4'd9, S_CREC = 4'd10, S_CWAIT = 4'd11;
  localparam [1:0] P_IDX = 2'd1, P_BM = 2'd2, P_VAL = 2'd3;
  localparam [1:0] PS_OFF = 2'd0, PS_DEC = 2'd1, PS_CRD = 2'd2;
  localparam PIPE = TILE_BUFFERS > 1;
  localparam BW = $clog2(BUF_LINES + 1);
  // read counters (issued / taken / count-table responses): wide enough for RD_OUTS reads in flight even when
  // BUF_LINES is small (the reduced synthesis parameters), so that the RD_OUTS bound never truncates
  localparam CW = $clog2(RD_OUTS + 1) > BW ? $clog2(RD_OUTS + 1) : BW;
  localparam SW = TILE_BUFFERS > 1 ? $clog2(TILE_BUFFERS) : 1;
  localparam RBW = $clog2(TILE_BUFFERS * BUF_LINES);
  localparam DQW = DQ_DEPTH > 1 ? $clog2(DQ_DEPTH) : 1;
  localparam integer DQLAST_I = DQ_DEPTH - 1;
  localparam [DQW-1:0] DQLAST = DQLAST_I[DQW-1:0];
  localparam integer SLAST_I = TILE_BUFFERS - 1;
  localparam [SW-1:0] SLAST = SLAST_I[SW-1:0];
  reg [3:0]  st;
  reg [1:0]  pass;
  assign f_issue = f_st == F_REQ && st == S_IDLE && !rd_valid;
  // latched descriptor
  reg [63:0] j_hdr, j_out;
  reg [31:0] j_rows, j_cols, j_pitch, j_thr, j_cap;
  reg [1:0]  j_dt;
  reg        j_bitmap;
  reg        j_srule;   // D_CFG.SIZE_RULE of the running job
  reg [3:0]  j_s, j_trl, j_tcl;
  reg [8:0]  j_tr, j_tc;
  reg [18:0] j_ctp;     // D_CFG.CT_PITCH of the running job (0: its tiles per row)
  reg [63:0] j_crec;    // the job's completion-record address (COMPL_PTR + 32 * ENGINE_INDEX at its start; 0: none)
  // tile walk (M)
  reg [31:0] t, r0, c0, tj;
  reg [63:0] trow_addr;
  reg [63:0] ct_row;    // count-table entry of the tile row's first tile (M)
  reg [8:0]  re, ce, width;
  reg [31:0] nnz, off, ost, cycles, outstanding;
  reg        flush_w;
  // count-table cache (M, TILE_BUFFERS = 1)
  reg        cc_v;
  reg [56:0] cc_line;
  reg [1023:0] cc_data;
  // tile buffers (TILE_BUFFERS x BUF_LINES lines) and per-buffer tile state
  reg [1023:0] rbuf [0:TILE_BUFFERS*BUF_LINES-1];
  reg [8:0]  s_re [0:TILE_BUFFERS-1];
  reg [8:0]  s_ce [0:TILE_BUFFERS-1];
  reg [6:0]  s_tso [0:TILE_BUFFERS-1];
  reg [31:0] s_nnz [0:TILE_BUFFERS-1];
  reg [8:0]  s_width [0:TILE_BUFFERS-1];
  reg [TILE_BUFFERS-1:0] s_done, s_err;
  reg [SW-1:0] m_slot, b_slot, p_slot;
  reg [SW:0] slots_used;
  // read issuer (i*), counter (p*/b*), emit walker (q*)
  reg [63:0] ia;
  reg [8:0]  i_re, i_ce;
  reg [3:0]  il, pl, ql;
  reg [8:0]  ir, pr, qr, prn, qrn;
  reg [6:0]  pacc, qso, tso;
  reg        iss_more;
  reg [CW-1:0] iss_cnt, resp_cnt, prt_cnt;
  reg [BW-1:0] rptr, b_cnt;
  reg [31:0] b_nnz;
  reg [8:0]  b_width;
  reg        b_err;
  reg [255:0] row_bm;
  // registered read response (the counting side works on it one cycle after arrival)
  reg          rq_v, rq_err;
  reg [1023:0] rq_data;
  // prefetcher (P, TILE_BUFFERS >= 2): tile walk, count-table line, decision queue {dense, zero, count}
  reg [1:0]  p_st;
  reg        p_err;
  reg [31:0] pr0, pc0, ptj;
  reg [63:0] ptrow;
  reg [63:0] pct_row;   // count-table entry of the tile row's first tile (P)
  reg        pcc_v;
  reg [56:0] pcc_line;
  reg [1023:0] pcc_data;
  reg [33:0] dq [0:DQ_DEPTH-1];
  reg [DQW-1:0] dq_wp, dq_rp;
  reg [DQW:0] dq_n;
  // output chunk (payload), header, pending zero bytes
  reg         c_valid, h_valid;
  reg [7:0]   c_n;
  reg [1023:0] c_data;
  reg [63:0]  c_addr, h_addr;
  reg [127:0] h_data, hdr_q;
  reg [11:0]  zrem;
  wire       eb4 = j_dt == 2'd0;
  wire [31:0] tiles_c = (j_cols + {23'd0, j_tc} - 32'd1) >> j_tcl;
  // count-table rows are CT_PITCH entries apart (tiles_c with CT_PITCH = 0)
  wire [31:0] ct_pitch = (j_ctp == 19'd0) ? tiles_c : {13'd0, j_ctp};

  // count table (M)
  wire [63:0] caddr = ct_row + {30'd0, tj, 2'b00};
  wire        cc_hit = cc_v && cc_line == caddr[63:7];
  // only the addressed count (low 32 bits) of the shifted line is used
  /* verilator lint_off UNUSEDSIGNAL */
  wire [1023:0] c_sh = cc_data >> {caddr[6:0], 3'b000};
  /* verilator lint_on UNUSEDSIGNAL */
  wire [33:0] dq_head = dq[dq_rp];
  wire        c_hit = PIPE ? dq_n != {(DQW+1){1'b0}} : cc_hit;
  wire [31:0] cword = PIPE ? dq_head[31:0] : c_sh[31:0];
  // tile decision
  wire [31:0] rows_left = j_rows - r0, cols_left = j_cols - c0;
  wire [8:0]  re_w = (rows_left < {23'd0, j_tr}) ? rows_left[8:0] : j_tr;
  wire [8:0]  ce_w = (cols_left < {23'd0, j_tc}) ? cols_left[8:0] : j_tc;
  wire [17:0] e_t  = re_w * ce_w;
  wire [47:0] est  = {16'd0, cword} << j_s;
  wire [63:0] est16 = {est, 16'd0};
  wire [63:0] thr_e = {32'd0, j_thr} * {46'd0, e_t};
  wire        dense = PIPE ? dq_head[33] : est16 >= thr_e;
  wire        zero_t = PIPE ? dq_head[32] : (j_s == 4'd0 && cword == 32'd0);
  // DENSE header nnz: the count (s = 0) or the estimate (never 0), both clamped to the tile's elements (a
  // producer that rewrites an element is counted again by the monitor)
  wire [31:0] dense_nnz = (j_s == 4'd0) ? (cword > {14'd0, e_t} ? {14'd0, e_t} : cword) : (est == 48'd0 ? 32'd1 :
                          (est > {30'd0, e_t} ? {14'd0, e_t} : est[31:0]));
  wire [63:0] tsa_w = trow_addr + (eb4 ? {30'd0, c0, 2'b00} : {31'd0, c0, 1'b0});  // tile's first segment
  // prefetcher's decision (the same rule on its own tile walk)
  wire [63:0] p_caddr = pct_row + {30'd0, ptj, 2'b00};
  wire        p_hit = pcc_v && pcc_line == p_caddr[63:7];
  /* verilator lint_off UNUSEDSIGNAL */
  wire [1023:0] p_csh = pcc_data >> {p_caddr[6:0], 3'b000};
  /* verilator lint_on UNUSEDSIGNAL */
  wire [31:0] p_cword = p_csh[31:0];
  wire [31:0] p_rows_left = j_rows - pr0, p_cols_left = j_cols - pc0;
  wire [8:0]  p_re_w = (p_rows_left < {23'd0, j_tr}) ? p_rows_left[8:0] : j_tr;
  wire [8:0]  p_ce_w = (p_cols_left < {23'd0, j_tc}) ? p_cols_left[8:0] : j_tc;
  wire [17:0] p_et = p_re_w * p_ce_w;
  wire [47:0] p_est = {16'd0, p_cword} << j_s;
  wire        p_dense = {p_est, 16'd0} >= {32'd0, j_thr} * {46'd0, p_et};
  wire        p_zero = j_s == 4'd0 && p_cword == 32'd0;
  wire        p_cmp = !p_dense && !p_zero;
  wire [63:0] p_tsa = ptrow + (eb4 ? {30'd0, pc0, 2'b00} : {31'd0, pc0, 1'b0});
  wire        p_fire = PIPE && p_st == PS_DEC && st != S_FIN && p_hit && dq_n != DQ_DEPTH[DQW:0] &&
                       (!p_cmp || (!iss_more && slots_used != TILE_BUFFERS[SW:0]));
  // payload size of a compacted tile
  wire [17:0] rw    = re * width;
  wire [17:0] rw4   = (rw + 18'd3) & ~18'd3;
  wire [31:0] ell_b = {14'd0, rw4};
  // ceil(ce / 32): the low 5 bits of ce + 31 are dropped
  /* verilator lint_off UNUSEDSIGNAL */
  wire [9:0]  ce31  = {1'b0, ce} + 10'd31;
  /* verilator lint_on UNUSEDSIGNAL */
  wire [31:0] bmw   = {27'd0, ce31[9:5]};
  wire [31:0] pay_s = (nnz == 32'd0) ? 32'd0 :
                      j_bitmap ? ({23'd0, re} * bmw * 32'd4 + nnz * (eb4 ? 32'd4 : 32'd2))
                               : (ell_b + {14'd0, rw} * (eb4 ? 32'd4 : 32'd2));
  // D_CFG.SIZE_RULE: a tile whose sparse payload is not smaller than its dense bytes is written DENSE
  wire [17:0] rce   = re * ce;
  wire [31:0] dns_b = eb4 ? {12'd0, rce, 2'b00} : {13'd0, rce, 1'b0};
  wire        grow  = j_srule && nnz != 32'd0 && pay_s >= dns_b;
  wire [31:0] pay_b = grow ? 32'd0 : pay_s;
  wire        ovf   = {1'b0, off} + {1'b0, pay_b} > {1'b0, j_cap};
  wire [10:0] sb    = eb4 ? {ce, 2'b00} : {1'b0, ce, 1'b0};   // segment bytes (M's tile)

  // issue walker: line il of row ir (segment start ia) of the tile being fetched
  wire [10:0] i_sb  = eb4 ? {i_ce, 2'b00} : {1'b0, i_ce, 1'b0};
  // only the line index (bits 10:7) of the segment's last byte is needed here
  /* verilator lint_off UNUSEDSIGNAL */
  wire [10:0] i_e   = {4'd0, ia[6:0]} + i_sb - 11'd1;
  /* verilator lint_on UNUSEDSIGNAL */
  wire        i_lst = il == i_e[10:7];
  wire [CW-1:0] inflight = iss_cnt - resp_cnt;   // resp_cnt counts responses as the counting side takes them
  // a response is the count-table line iff its reader waits for one and every tile line issued before it is in
  wire resp_is_ct = PIPE ? (p_st == PS_CRD && iss_cnt == prt_cnt) : st == S_CRD;
  // counter: line pl of row pr of tile buffer b_slot; lanes of the arriving line
  wire [8:0]  b_re  = s_re[b_slot];
  wire [8:0]  b_ce  = s_ce[b_slot];
  wire [6:0]  pso   = s_tso[b_slot] + pacc;
  wire [10:0] b_sb  = eb4 ? {b_ce, 2'b00} : {1'b0, b_ce, 1'b0};
  wire [10:0] p_e   = {4'd0, pso} + b_sb - 11'd1;
  wire        p_lst = pl == p_e[10:7];
  // the response side only counts (ELL width, nnz); the lane masks are recomputed when emitting
  /* verilator lint_off UNUSEDSIGNAL */
  wire [63:0] p_lane_unused, p_gran_unused;
  /* verilator lint_on UNUSEDSIGNAL */
  wire [6:0]  p_k;
  spartan_line_lanes #(.WITH_GRAN(0)) u_plane (.data(rq_data), .dtype(j_dt), .lo(pl == 4'd0 ? pso : 7'd0),
    .hi(p_lst ? p_e[6:0] : 7'd127), .lane_m(p_lane_unused), .gran_m(p_gran_unused), .count(p_k));
  wire [8:0]  p_rn  = prn + {2'd0, p_k};
  wire        b_fin = rq_v && p_lst && pr + 9'd1 == b_re;     // the tile's last line is counted now
  wire [31:0] b_nnz_f = b_nnz + {23'd0, p_rn};
  wire [8:0]  b_width_f = (p_rn > b_width) ? p_rn : b_width;
  // M's tile buffer: counted (now or before)
  wire        m_now   = b_fin && b_slot == m_slot;
  wire        m_ready = m_now || s_done[m_slot];
  // emit walker: line ql of row qr from M's tile buffer; the counter writes line b_cnt of buffer b_slot
  /* verilator lint_off UNUSEDSIGNAL */
  wire [31:0] m_idx = {{(32-SW){1'b0}}, m_slot} * BUF_LINES + {{(32-BW){1'b0}}, rptr};
  wire [31:0] b_idx = {{(32-SW){1'b0}}, b_slot} * BUF_LINES + {{(32-BW){1'b0}}, b_cnt};
  /* verilator lint_on UNUSEDSIGNAL */
  wire [1023:0] q_line = rbuf[m_idx[RBW-1:0]];
  wire [10:0] q_e   = {4'd0, qso} + sb - 11'd1;
  wire        q_lst = ql == q_e[10:7];
  wire        q_end = q_lst && qr == re - 9'd1;
  wire [63:0] q_lane, q_gran;
  wire [6:0]  q_k;
  spartan_line_lanes u_qlane (.data(q_line), .dtype(j_dt), .lo(ql == 4'd0 ? qso : 7'd0),
    .hi(q_lst ? q_e[6:0] : 7'd127), .lane_m(q_lane), .gran_m(q_gran), .count(q_k));
  wire [8:0]  q_rn  = qrn + {2'd0, q_k};
  // column of lane 0 of this line (mod 256) = ql * lanes per line - first lane of the segment
  wire [7:0]  q_cb  = eb4 ? ({ql[2:0], 5'd0} - {3'd0, qso[6:2]}) : ({ql[1:0], 6'd0} - {2'd0, qso[6:1]});
  // One compactor moves 24-bit granules {column index of the owning element, 16-bit value granule}: the
  // packed values are the low halves; the packed indices are every granule's index (F16/BF16) or every
  // second one's (F32: an element has two granules).
  wire [1535:0] cg_in, cg_out;
  wire [511:0]  idx_packed;
  wire [1023:0] val_packed;
  /* verilator lint_off UNUSEDSIGNAL */
  wire [6:0]    cg_cnt_unused;
  /* verilator lint_on UNUSEDSIGNAL */
  genvar gg;
  generate
    for (gg = 0; gg < 64; gg = gg + 1) begin : g_cg
      wire [7:0] col16 = q_cb + gg;          // F16/BF16: lane gg
      wire [7:0] col32 = q_cb + (gg >> 1);   // F32: lane gg/2
      assign cg_in[gg*24 +: 24] = {eb4 ? col32 : col16, q_line[gg*16 +: 16]};
      assign val_packed[gg*16 +: 16] = cg_out[gg*24 +: 16];
      if (gg < 32) begin : lo
        assign idx_packed[gg*8 +: 8] = eb4 ? cg_out[(2*gg)*24 + 16 +: 8] : cg_out[gg*24 + 16 +: 8];
      end else begin : hi
        assign idx_packed[gg*8 +: 8] = eb4 ? 8'd0 : cg_out[gg*24 + 16 +: 8];
      end
    end
  endgenerate
  spartan_compactor #(.G(64), .GW(24)) u_comp (.data(cg_in), .mask(q_gran), .packed_data(cg_out),
    .count(cg_cnt_unused));
  // bitmap bits of this line at their columns
  wire [9:0]  bsh  = eb4 ? ({1'b0, ql, 5'd0} + 10'd64 - {5'd0, qso[6:2]}) : ({ql, 6'd0} + 10'd64 - {4'd0, qso[6:1]});
  /* verilator lint_off UNUSEDSIGNAL */
  wire [319:0] bm_sh = {256'd0, q_lane} << bsh;
  /* verilator lint_on UNUSEDSIGNAL */
  wire [255:0] bm_row = row_bm | bm_sh[319:64];
  // bytes of this emit step: packed bytes + ELL row padding + end-of-pass padding (4 after indices, 16 after values)
  wire [8:0]  pad_e  = width - q_rn;                              // ELL padding elements of this row
  wire [7:0]  q_vb   = eb4 ? {q_k[5:0], 2'b00} : {q_k, 1'b0};
  reg  [11:0] q_bytes, q_z;
  reg  [1023:0] q_data;
  always @* begin
    q_bytes = 12'd0;
    q_z = 12'd0;
    q_data = val_packed;
    case (pass)
      P_IDX: begin
        q_bytes = {5'd0, q_k};
        q_data = {512'd0, idx_packed};
        if (q_lst) q_z = {3'd0, pad_e};
        if (q_end) q_z = q_z + {10'd0, 2'd0 - rw[1:0]};
      end
      P_BM: begin
        q_data = {768'd0, bm_row};
        if (q_lst) q_bytes = {bmw[9:0], 2'b00};
      end
      default: begin  // P_VAL
        q_bytes = {4'd0, q_vb};
        if (q_lst && !j_bitmap) q_z = eb4 ? {1'b0, pad_e, 2'b00} : {2'd0, pad_e, 1'b0};
        if (q_end) q_z = q_z + {8'd0, 4'd0 - (off[3:0] + q_bytes[3:0] + q_z[3:0])};
      end
    endcase
  end
  wire [11:0] q_tot = q_bytes + q_z;
  wire [7:0]  q_n   = (q_tot > 12'd128) ? 8'd128 : q_tot[7:0];
  wire [7:0]  z_n   = (zrem > 12'd128) ? 8'd128 : zrem[7:0];

  // output packers: payload (chunks) and headers (16 B); headers have priority on the write port
  wire pw_valid, hw_valid, pw_idle, hw_idle, c_ready, h_ready;
  wire [63:0] pw_addr, hw_addr;
  wire [1023:0] pw_data, hw_data;
  wire [127:0] pw_strb, hw_strb;
  wire hw_sel = hw_valid;
  wire cr_sel = st == S_CREC;   // the completion record's write (below)
  wire pw_ready = wr_ready && !hw_sel && !cr_sel;
  wire hw_ready = wr_ready && !cr_sel;
  spartan_line_writer u_pay (.clk(clk), .rst(rst), .in_valid(c_valid), .in_ready(c_ready), .in_addr(c_addr),
    .in_n(c_n), .in_data(c_data), .flush(flush_w), .w_valid(pw_valid), .w_ready(pw_ready), .w_addr(pw_addr),
    .w_data(pw_data), .w_strb(pw_strb), .idle(pw_idle));
  spartan_line_writer u_hdr (.clk(clk), .rst(rst), .in_valid(h_valid), .in_ready(h_ready), .in_addr(h_addr),
    .in_n(8'd16), .in_data({896'd0, h_data}), .flush(flush_w), .w_valid(hw_valid), .w_ready(hw_ready),
    .w_addr(hw_addr), .w_data(hw_data), .w_strb(hw_strb), .idle(hw_idle));
  // completion record {TAG, STATUS, OUT_BYTES, CYCLES, 4 x 0} (32 bytes, little-endian words) in its 32-byte slot
  // of the line; the packers are idle in S_CREC, so it takes the port alone
  wire [255:0] cr_rec = {128'd0, job_cycles, job_out_bytes, job_status, job_tag};
  wire [1023:0] cr_data = {768'd0, cr_rec} << {j_crec[6:5], 8'd0};
  wire [127:0] cr_strb = {96'd0, 32'hFFFFFFFF} << {j_crec[6:5], 5'd0};
  assign cr_err = st == S_CWAIT && wr_resp_valid && wr_resp_err;
  assign wr_valid = cr_sel || (hw_sel ? hw_valid : pw_valid);
  assign wr_addr  = cr_sel ? {j_crec[63:7], 7'd0} : hw_sel ? hw_addr : pw_addr;
  assign wr_data  = cr_sel ? cr_data : hw_sel ? hw_data : pw_data;
  assign wr_strb  = cr_sel ? cr_strb : hw_sel ? hw_strb : pw_strb;
  wire wr_fire = wr_valid && wr_ready;
  wire c_slot  = !c_valid || c_ready;
  wire h_slot  = !h_valid || h_ready;
  wire resp_fire = rd_resp_valid && rd_resp_ready;
  assign rd_resp_ready = job_busy || f_st == F_WAIT;
  assign job_busy = st != S_IDLE;
  assign busy = job_busy || f_busy;
  // a read response of the job (the fetch's responses arrive while no job runs)
  wire j_resp = resp_fire && job_busy;
  // M's step fires: decision popped from the queue, tile buffer released
  wire pass_fire = zrem == 12'd0 && c_slot && !(q_end && pass == P_VAL && !h_slot);
  wire m_dec  = st == S_TILE && c_hit && (!(dense || zero_t) || h_slot);
  wire dq_pop = PIPE && m_dec;
  wire m_free = (st == S_CNTD && ost == 32'd0 && !ovf && (nnz == 32'd0 || grow) && h_slot) ||
                (st == S_PASS && pass_fire && q_end && pass == P_VAL);
  wire p_alloc = p_fire && p_cmp;
  wire [SW-1:0] m_slot_n = (m_slot == SLAST) ? {SW{1'b0}} : m_slot + 1'b1;
  wire [SW-1:0] b_slot_n = (b_slot == SLAST) ? {SW{1'b0}} : b_slot + 1'b1;
  wire [SW-1:0] p_slot_n = (p_slot == SLAST) ? {SW{1'b0}} : p_slot + 1'b1;
  // every read answered (a job ends only then: no response may reach the next job)
  wire rd_idle = !rd_valid && iss_cnt == prt_cnt && !(PIPE && p_st == PS_CRD);

  always @(posedge clk) begin
    job_done <= 1'b0;
    q_pop    <= 1'b0;
    if (rst) begin
      st <= S_IDLE; rd_valid <= 1'b0; rq_v <= 1'b0; c_valid <= 1'b0; h_valid <= 1'b0; zrem <= 12'd0; outstanding <= 32'd0;
      flush_w <= 1'b0; cc_v <= 1'b0; iss_more <= 1'b0; p_st <= PS_OFF; iss_cnt <= {CW{1'b0}}; resp_cnt <= {CW{1'b0}};
      prt_cnt <= {CW{1'b0}};
    end else begin
      if (st != S_IDLE) cycles <= cycles + 32'd1;
      if (wr_fire && !wr_resp_valid) outstanding <= outstanding + 32'd1;
      else if (!wr_fire && wr_resp_valid) outstanding <= outstanding - 32'd1;
      if (wr_resp_valid && wr_resp_err) ost <= 32'd2;
      if (rd_valid && rd_ready) rd_valid <= 1'b0;
      if (c_valid && c_ready) c_valid <= 1'b0;
      if (h_valid && h_ready) h_valid <= 1'b0;
      rq_v <= j_resp && !resp_is_ct;
      if (j_resp && !resp_is_ct) begin
        rq_data <= rd_resp_data; rq_err <= rd_resp_err; prt_cnt <= prt_cnt + 1'b1;
      end
      // pending zero bytes (ELL padding beyond one chunk), 128 per cycle; they hold the emit walker
      if (zrem != 12'd0 && c_slot) begin
        c_valid <= 1'b1; c_n <= z_n; c_data <= 1024'd0; c_addr <= j_out + {32'd0, off};
        off <= off + {24'd0, z_n}; zrem <= zrem - {4'd0, z_n};
      end
      // read issuer: one line read per cycle of the tile being fetched, at most RD_OUTS in flight
      if (iss_more && (!rd_valid || rd_ready) && inflight < RD_OUTS[CW-1:0]) begin
        rd_valid <= 1'b1; rd_addr <= {ia[63:7] + {53'd0, il}, 7'd0}; iss_cnt <= iss_cnt + 1'b1;
        if (i_lst) begin
          il <= 4'd0; ir <= ir + 9'd1; ia <= ia + {32'd0, j_pitch};
          if (ir + 9'd1 == i_re) iss_more <= 1'b0;
        end else il <= il + 4'd1;
      end
      // counter: each registered response into its tile buffer; row nnz, ELL width, tile nnz
      if (rq_v) begin
        rbuf[b_idx[RBW-1:0]] <= rq_data;
        resp_cnt <= resp_cnt + 1'b1;
        b_cnt <= b_cnt + 1'b1;
        if (rq_err) b_err <= 1'b1;
        if (p_lst) begin
          pl <= 4'd0; pr <= pr + 9'd1; pacc <= pacc + j_pitch[6:0]; prn <= 9'd0;
          b_width <= b_width_f; b_nnz <= b_nnz_f;
        end else begin
          pl <= pl + 4'd1; prn <= p_rn;
        end
        if (b_fin) begin
          s_nnz[b_slot] <= b_nnz_f; s_width[b_slot] <= b_width_f; s_err[b_slot] <= b_err || rq_err;
          s_done[b_slot] <= 1'b1;
          pr <= 9'd0; pacc <= 7'd0; b_cnt <= {BW{1'b0}}; b_nnz <= 32'd0; b_width <= 9'd0; b_err <= 1'b0;
          b_slot <= b_slot_n;
        end
      end
      // decision queue and tile buffers in use
      if (p_fire) begin
        dq[dq_wp] <= {p_dense, p_zero, p_cword}; dq_wp <= (dq_wp == DQLAST) ? {DQW{1'b0}} : dq_wp + 1'b1;
      end
      if (dq_pop) dq_rp <= (dq_rp == DQLAST) ? {DQW{1'b0}} : dq_rp + 1'b1;
      dq_n <= dq_n + {{DQW{1'b0}}, p_fire} - {{DQW{1'b0}}, dq_pop};
      if (PIPE) slots_used <= slots_used + {{SW{1'b0}}, p_alloc} - {{SW{1'b0}}, m_free};
      if (m_free) begin s_done[m_slot] <= 1'b0; m_slot <= m_slot_n; end
      // prefetcher (TILE_BUFFERS >= 2): decide ahead of M, start the fetch of compacted tiles
      if (PIPE) begin
        case (p_st)
          PS_DEC: if (st == S_FIN) p_st <= PS_OFF;
            else if (!p_hit) begin
              if (!iss_more && (!rd_valid || rd_ready)) begin
                rd_valid <= 1'b1; rd_addr <= {p_caddr[63:7], 7'd0}; p_st <= PS_CRD;
              end
            end else if (p_fire) begin
              if (p_cmp) begin
                s_re[p_slot] <= p_re_w; s_ce[p_slot] <= p_ce_w; s_tso[p_slot] <= p_tsa[6:0];
                ia <= p_tsa; il <= 4'd0; ir <= 9'd0; iss_more <= 1'b1; i_re <= p_re_w; i_ce <= p_ce_w;
                p_slot <= p_slot_n;
              end
              if (ptj + 32'd1 == tiles_c) begin
                ptj <= 32'd0; pc0 <= 32'd0; pr0 <= pr0 + {23'd0, j_tr};
                ptrow <= ptrow + ({32'd0, j_pitch} << j_trl);
                pct_row <= pct_row + {30'd0, ct_pitch, 2'b00};
                if (pr0 + {23'd0, j_tr} >= j_rows) p_st <= PS_OFF;
              end else begin
                ptj <= ptj + 32'd1; pc0 <= pc0 + {23'd0, j_tc};
              end
            end
          PS_CRD: if (j_resp && resp_is_ct) begin
            if (rd_resp_err) begin p_err <= 1'b1; p_st <= PS_OFF; end
            else begin
              pcc_v <= 1'b1; pcc_line <= p_caddr[63:7]; pcc_data <= rd_resp_data;
              p_st <= (st == S_FIN) ? PS_OFF : PS_DEC;
            end
          end
          default: ;
        endcase
      end
      case (st)
        S_IDLE: if (f_issue) begin   // the descriptor fetch's line read; the next job waits for the fetch
          rd_valid <= 1'b1; rd_addr <= {f_addr[63:7], 7'd0};
        end else if (enable && q_out_valid && !q_pop && !f_busy) begin
          q_pop <= 1'b1;
          j_rows <= q_out[95:64]; j_cols <= q_out[127:96];
          j_pitch <= q_out[159:128]; j_dt <= q_out[161:160]; j_bitmap <= q_out[167:164] == 4'd2;
          j_srule <= q_out[172]; j_ctp <= q_out[191:173];
          j_s <= q_out[171:168]; j_tr <= q_out[200:192]; j_tc <= q_out[216:208];
          j_trl <= lg(q_out[200:192]); j_tcl <= lg(q_out[216:208]);
          j_thr <= q_out[255:224]; j_hdr <= q_out[383:320]; j_out <= q_out[447:384];
          j_cap <= q_out[479:448]; job_tag <= q_out[511:480];
          j_crec <= (cptr == 64'd0) ? 64'd0 : cptr + {43'd0, eidx, 5'd0};
          t <= 32'd0; r0 <= 32'd0; c0 <= 32'd0; tj <= 32'd0; off <= 32'd0; ost <= 32'd0; cycles <= 32'd1;
          trow_addr <= {q_out[63:32], q_out[31:0]}; ct_row <= q_out[319:256]; cc_v <= 1'b0;
          // tile buffers, counter and prefetcher start empty
          s_done <= {TILE_BUFFERS{1'b0}}; m_slot <= {SW{1'b0}}; b_slot <= {SW{1'b0}}; p_slot <= {SW{1'b0}};
          slots_used <= {(SW+1){1'b0}};
          pl <= 4'd0; pr <= 9'd0; pacc <= 7'd0; prn <= 9'd0; b_cnt <= {BW{1'b0}}; b_nnz <= 32'd0;
          b_width <= 9'd0; b_err <= 1'b0;
          dq_wp <= {DQW{1'b0}}; dq_rp <= {DQW{1'b0}}; dq_n <= {(DQW+1){1'b0}};
          pr0 <= 32'd0; pc0 <= 32'd0; ptj <= 32'd0; ptrow <= {q_out[63:32], q_out[31:0]};
          pct_row <= q_out[319:256];
          pcc_v <= 1'b0; p_err <= 1'b0; p_st <= PIPE ? PS_DEC : PS_OFF;
          st <= S_TILE;
        end
        S_TILE: if (!c_hit) begin
          if (!PIPE) begin rd_valid <= 1'b1; rd_addr <= {caddr[63:7], 7'd0}; st <= S_CRD; end
          else if (p_err) begin ost <= 32'd2; st <= S_FIN; end   // the prefetcher's count-table read failed
        end else if (dense || zero_t) begin
          if (h_slot) begin
            h_valid <= 1'b1; h_addr <= j_hdr + {28'd0, t, 4'd0};
            h_data <= dense ? {{32'd0, off}, dense_nnz, 16'd0, 8'd0, 8'd0}
                            : {{32'd0, off}, 32'd0, 16'd0, 8'd0, j_bitmap ? 8'd2 : 8'd1};
            st <= S_NEXT;
          end
        end else begin
          re <= re_w; ce <= ce_w; tso <= tsa_w[6:0];
          if (!PIPE) begin   // sequential: fetch into the one tile buffer
            s_re[0] <= re_w; s_ce[0] <= ce_w; s_tso[0] <= tsa_w[6:0];
            ia <= tsa_w; il <= 4'd0; ir <= 9'd0; iss_more <= 1'b1; i_re <= re_w; i_ce <= ce_w;
          end
          st <= S_FETCH;
        end
        S_CRD: if (j_resp) begin
          if (rd_resp_err) begin ost <= 32'd2; st <= S_FIN; end
          else begin cc_v <= 1'b1; cc_line <= rd_addr[63:7]; cc_data <= rd_resp_data; st <= S_TILE; end
        end
        S_FETCH: if (m_ready) begin   // the tile's lines are in its buffer and counted
          nnz <= m_now ? b_nnz_f : s_nnz[m_slot];
          width <= m_now ? b_width_f : s_width[m_slot];
          if (m_now ? (b_err || rq_err) : s_err[m_slot]) ost <= 32'd2;
          st <= S_CNTD;
        end
        S_CNTD: begin
          qr <= 9'd0; ql <= 4'd0; qso <= tso; qrn <= 9'd0; rptr <= {BW{1'b0}}; row_bm <= 256'd0;
          if (ost != 32'd0) st <= S_FIN;
          else if (ovf) begin ost <= 32'd1; st <= S_FIN; end
          else if (nnz == 32'd0 || grow) begin   // zero after the fetch, or DENSE by SIZE_RULE
            if (h_slot) begin
              h_valid <= 1'b1; h_addr <= j_hdr + {28'd0, t, 4'd0};
              h_data <= grow ? {{32'd0, off}, nnz, 16'd0, 8'd0, 8'd0}
                             : {{32'd0, off}, 32'd0, 16'd0, 8'd0, j_bitmap ? 8'd2 : 8'd1};
              st <= S_NEXT;
            end
          end else begin
            hdr_q <= {{32'd0, off}, nnz, j_bitmap ? 16'd0 : {7'd0, width}, 8'd0, j_bitmap ? 8'd2 : 8'd1};
            pass <= j_bitmap ? P_BM : P_IDX;
            st <= S_PASS;
          end
        end
        S_PASS: if (pass_fire) begin
          if (q_n != 8'd0) begin
            c_valid <= 1'b1; c_n <= q_n; c_data <= q_data; c_addr <= j_out + {32'd0, off};
            off <= off + {24'd0, q_n};
          end
          zrem <= q_tot - {4'd0, q_n};
          rptr <= rptr + 1'b1;
          if (q_lst) begin
            ql <= 4'd0; qr <= qr + 9'd1; qso <= qso + j_pitch[6:0]; qrn <= 9'd0; row_bm <= 256'd0;
          end else begin
            ql <= ql + 4'd1; qrn <= q_rn; row_bm <= bm_row;
          end
          if (q_end) begin
            qr <= 9'd0; ql <= 4'd0; qso <= tso; qrn <= 9'd0; rptr <= {BW{1'b0}};
            if (pass == P_VAL) begin
              h_valid <= 1'b1; h_addr <= j_hdr + {28'd0, t, 4'd0}; h_data <= hdr_q; st <= S_NEXT;
            end else pass <= P_VAL;
          end
        end
        S_NEXT: if (zrem == 12'd0) begin   // tile done (payload and padding produced): advance
          t <= t + 32'd1;
          if (tj + 32'd1 == tiles_c) begin
            tj <= 32'd0; c0 <= 32'd0; r0 <= r0 + {23'd0, j_tr};
            trow_addr <= trow_addr + ({32'd0, j_pitch} << j_trl);
            ct_row <= ct_row + {30'd0, ct_pitch, 2'b00};
            st <= (r0 + {23'd0, j_tr} >= j_rows) ? S_FIN : S_TILE;
          end else begin
            tj <= tj + 32'd1; c0 <= c0 + {23'd0, j_tc}; st <= S_TILE;
          end
        end
        S_FIN: begin
          iss_more <= 1'b0;   // an aborted job fetches no further lines
          if (zrem == 12'd0 && !c_valid && !h_valid) begin
            flush_w <= 1'b1;
            if (flush_w && pw_idle && hw_idle && outstanding == 32'd0 && !wr_fire && rd_idle) begin
              // the job's figures are final here (LAST_CYCLES counts to the cycle after, as without a record)
              flush_w <= 1'b0; st <= (j_crec != 64'd0) ? S_CREC : S_DONE;
              job_cycles <= cycles + 32'd1; job_out_bytes <= off; job_status <= ost;
            end
          end
        end
        S_CREC: if (wr_ready) st <= S_CWAIT;   // the record's write (wr_* below) is taken
        S_CWAIT: if (wr_resp_valid) st <= S_DONE;
        default: begin  // S_DONE
          job_done <= 1'b1; st <= S_IDLE;
        end
      endcase
    end
  end

  function [3:0] lg(input [8:0] v);
    integer b;
    begin
      lg = 4'd0;
      for (b = 0; b < 9; b = b + 1)
        if (v[b]) lg = b[3:0];
    end
  endfunction
endmodule
