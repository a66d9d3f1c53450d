// Compaction engine (docs/hw-units.md "CompactionEngine"; register map and descriptor: regmap.h namespace
// engine; output bytes: sw/format/include/spartan/format/tile_format.h). This project's design.
//
// Datapath of this first RTL: serial, one element per cycle (tile reads through a one-line cache, three
// passes per compacted tile: count/ELL width, indices or bitmap, values), one output byte per cycle into two
// line packers (payload, headers). It is functionally complete (ELL/BITMAP, DENSE in place, zero tiles,
// sampling estimates, OutOverflow, bus errors) but much slower than the 32-lanes-per-cycle TLM timing.
//
// Pins: MMIO as the monitor (response one cycle after acceptance, mmio_err = MmioError code);
// rd_*: line read requests (128 B-aligned address) and in-order responses, one outstanding;
// wr_*: line writes with byte strobes, posted; wr_resp_valid pulses once per completed write.
module compaction_engine #(
  parameter QDEPTH            = 8,
  parameter READ_BUFFER_BYTES = 16384
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
                   E_BADVALUE = 4'd6, E_QFULL = 4'd8;

  // ---------------- MMIO registers, staged descriptor, descriptor FIFO ----------------
  reg [31:0] desc [0:15];
  reg        enable, err_flag;
  reg [31:0] err_code, done_count, last_tag, last_cycles, last_out_bytes, last_status;
  wire       q_in_ready, q_out_valid;
  // reserved descriptor bits (CFG[31:12], [3:2], TILE dims above 256) are not used by the job FSM
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
  wire s_valid = (s_dt != 2'd3) && (desc[2] != 32'd0) && (desc[3] != 32'd0) && (s_fmt == 4'd1 || s_fmt == 4'd2) &&
                 s_tr_ok && s_tc_ok && ((s_dt == 2'd0) ? (desc[4][1:0] == 2'b00) : (desc[4][0] == 1'b0)) &&
                 ({2'b00, desc[4]} >= s_row_bytes) && (desc[8][1:0] == 2'b00) &&
                 ({12'd0, s_tile_bytes} <= READ_BUFFER_BYTES);
  wire [11:0] a = mmio_addr;
  wire is_desc = a[11:6] == 6'b000100;   // 0x100..0x13C
  wire is_glob = a[11:6] == 6'd0 && a[5:2] <= 4'd10;
  reg  [3:0]  acc_err;
  reg  [31:0] acc_rdata;
  wire job_busy;
  always @* begin
    acc_err = E_OK;
    acc_rdata = 32'd0;
    if (a[1:0] != 2'b00) acc_err = E_MISALIGNED;
    else if (!is_desc && !is_glob) acc_err = E_UNMAPPED;
    else if (is_desc) acc_rdata = desc[a[5:2]];
    else begin
      case (a[5:2])
        4'd0: begin acc_rdata = 32'h53504331; if (mmio_we) acc_err = E_READONLY; end
        4'd1: acc_rdata = {31'd0, enable};
        4'd2: begin
          acc_rdata = {16'd0, {(8-QAW-1){1'b0}}, q_level, 3'd0, last_status != 32'd0, err_flag,
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
        default: begin  // 0x028 SUBMIT (write-only, reads 0)
          if (mmio_we && !s_valid) acc_err = E_BADVALUE;
          else if (mmio_we && !q_in_ready) acc_err = E_QFULL;
        end
      endcase
    end
  end
  assign mmio_ready = 1'b1;
  wire acc   = mmio_valid;
  wire q_push = acc && mmio_we && acc_err == E_OK && is_glob && a[5:2] == 4'd10;
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
    end else begin
      mmio_rvalid <= acc;
      mmio_rdata  <= (acc && !mmio_we && acc_err == E_OK) ? acc_rdata : 32'd0;
      mmio_err    <= acc ? acc_err : E_OK;
      if (acc && acc_err != E_OK && !err_flag) begin
        err_flag <= 1'b1;
        err_code <= {mmio_we, 3'd0, a, 8'd0, 4'd0, acc_err};
      end
      if (acc && mmio_we && acc_err == E_OK) begin
        if (is_desc) desc[a[5:2]] <= mmio_wdata;
        else if (a[5:2] == 4'd1) begin
          enable <= mmio_wdata[0];
          if (mmio_wdata[1]) done_count <= 32'd0;
        end else if (a[5:2] == 4'd3) begin
          err_flag <= 1'b0;
          err_code <= 32'd0;
        end
      end
      if (job_done) begin
        done_count     <= done_count + 32'd1;
        last_tag       <= job_tag;
        last_cycles    <= job_cycles;
        last_out_bytes <= job_out_bytes;
        last_status    <= job_status;
      end
    end
  end

  // ---------------- job FSM ----------------
  localparam [3:0] S_IDLE = 4'd0, S_TILE = 4'd1, S_RD = 4'd2, S_RW = 4'd3, S_ELEM = 4'd4, S_PEND = 4'd5,
                   S_NEXT = 4'd7, S_FIN = 4'd8, S_DONE = 4'd9;
  localparam [1:0] P_CNT = 2'd0, P_IDX = 2'd1, P_BM = 2'd2, P_VAL = 2'd3;
  reg [3:0]  st, ret;
  reg [1:0]  pass;
  // latched descriptor
  reg [63:0] j_ct, j_hdr, j_out;
  reg [31:0] j_rows, j_cols, j_pitch, j_thr, j_cap;
  reg [1:0]  j_dt;
  reg        j_bitmap;
  reg [3:0]  j_s, j_trl, j_tcl;
  reg [8:0]  j_tr, j_tc;
  // tile walk
  reg [31:0] t, r0, c0, tj;
  reg [63:0] trow_addr, row_addr;
  reg [8:0]  re, ce, r, c, rn, width;
  reg [31:0] nnz, off;
  reg [31:0] word;
  // caches
  reg        ec_v, cc_v, rd_for_ct;
  reg [56:0] ec_line, cc_line;
  reg [1023:0] ec_data, cc_data;
  // output byte source
  reg [31:0] em_val;
  reg [2:0]  em_n;
  reg [31:0] em_zeros;
  reg [127:0] hdr_sh;
  reg [4:0]  hdr_n;
  reg [31:0] ost, cycles, outstanding;
  reg        flush_w;
  wire       eb4 = j_dt == 2'd0;
  wire [2:0] eb = eb4 ? 3'd4 : 3'd2;

  // element fetch
  wire [31:0] col   = c0 + {23'd0, c};
  wire [63:0] eaddr = row_addr + (eb4 ? {30'd0, col, 2'b00} : {31'd0, col, 1'b0});
  wire        e_hit = ec_v && ec_line == eaddr[63:7];
  // only the addressed element (low 32 bits) of the shifted line is used
  /* verilator lint_off UNUSEDSIGNAL */
  wire [1023:0] e_sh = ec_data >> {eaddr[6:0], 3'b000};
  /* verilator lint_on UNUSEDSIGNAL */
  wire [31:0] elem  = eb4 ? e_sh[31:0] : {16'd0, e_sh[15:0]};
  wire        e_nz  = eb4 ? (|elem[30:0]) : (|elem[14:0]);
  wire        last_c = c == ce - 9'd1;
  wire        last_r = r == re - 9'd1;
  wire [8:0]  rn_nx = rn + {8'd0, e_nz};
  // count table fetch
  wire [63:0] caddr = j_ct + {30'd0, t, 2'b00};
  wire        c_hit = cc_v && cc_line == caddr[63:7];
  // only the addressed count (low 32 bits) of the shifted line is used
  /* verilator lint_off UNUSEDSIGNAL */
  wire [1023:0] c_sh = cc_data >> {caddr[6:0], 3'b000};
  /* verilator lint_on UNUSEDSIGNAL */
  wire [31:0] cword = c_sh[31:0];
  // tile decision
  wire [31:0] rows_left = j_rows - r0, cols_left = j_cols - c0;
  wire [8:0]  re_w = (rows_left < {23'd0, j_tr}) ? rows_left[8:0] : j_tr;
  wire [8:0]  ce_w = (cols_left < {23'd0, j_tc}) ? cols_left[8:0] : j_tc;
  wire [17:0] e_t  = re_w * ce_w;
  wire [47:0] est  = {16'd0, cword} << j_s;
  wire [63:0] est16 = {est, 16'd0};
  wire [63:0] thr_e = {32'd0, j_thr} * {46'd0, e_t};
  wire        dense = est16 >= thr_e;
  wire [31:0] dense_nnz = (j_s == 4'd0) ? cword : (est == 48'd0 ? 32'd1 :
                          (est > {30'd0, e_t} ? {14'd0, e_t} : est[31:0]));
  // payload size of a compacted tile
  wire [17:0] rw    = re * width;
  wire [17:0] rw4   = (rw + 18'd3) & ~18'd3;
  wire [31:0] ell_b = {14'd0, rw4};
  // ceil(ce / 32): the low 5 bits of ce + 31 are dropped
  /* verilator lint_off UNUSEDSIGNAL */
  wire [9:0]  ce31  = {1'b0, ce} + 10'd31;
  /* verilator lint_on UNUSEDSIGNAL */
  wire [31:0] bmw   = {27'd0, ce31[9:5]};
  wire [31:0] pay_b = (nnz == 32'd0) ? 32'd0 :
                      j_bitmap ? ({23'd0, re} * bmw * 32'd4 + nnz * {29'd0, eb})
                               : (ell_b + {14'd0, rw} * {29'd0, eb});
  wire        ovf   = {1'b0, off} + {1'b0, pay_b} > {1'b0, j_cap};

  // byte emitters
  wire pb_valid = (em_n != 3'd0) || (em_zeros != 32'd0);
  wire pb_ready, hb_ready, pw_valid, hw_valid, pw_idle, hw_idle;
  wire [7:0] pb_data = (em_n != 3'd0) ? em_val[7:0] : 8'd0;
  wire [63:0] pw_addr, hw_addr;
  wire [1023:0] pw_data, hw_data;
  wire [127:0] pw_strb, hw_strb;
  wire hw_sel = hw_valid;
  wire pw_ready = wr_ready && !hw_sel;
  wire hw_ready = wr_ready;
  spartan_line_writer u_pay (.clk(clk), .rst(rst), .b_valid(pb_valid), .b_ready(pb_ready), .b_addr(j_out + {32'd0, off}),
    .b_data(pb_data), .flush(flush_w), .w_valid(pw_valid), .w_ready(pw_ready), .w_addr(pw_addr), .w_data(pw_data),
    .w_strb(pw_strb), .idle(pw_idle));
  wire hb_valid = hdr_n != 5'd0;
  spartan_line_writer u_hdr (.clk(clk), .rst(rst), .b_valid(hb_valid), .b_ready(hb_ready),
    .b_addr(j_hdr + {28'd0, t, 4'd0} + {59'd0, 5'd16 - hdr_n}), .b_data(hdr_sh[7:0]), .flush(flush_w),
    .w_valid(hw_valid), .w_ready(hw_ready), .w_addr(hw_addr), .w_data(hw_data), .w_strb(hw_strb), .idle(hw_idle));
  assign wr_valid = hw_sel ? hw_valid : pw_valid;
  assign wr_addr  = hw_sel ? hw_addr : pw_addr;
  assign wr_data  = hw_sel ? hw_data : pw_data;
  assign wr_strb  = hw_sel ? hw_strb : pw_strb;
  wire wr_fire = wr_valid && wr_ready;
  assign rd_resp_ready = st == S_RW;
  assign job_busy = st != S_IDLE;
  assign busy = job_busy;
  wire em_idle = !pb_valid;

  always @(posedge clk) begin
    job_done <= 1'b0;
    q_pop    <= 1'b0;
    if (rst) begin
      st <= S_IDLE; rd_valid <= 1'b0; em_n <= 3'd0; em_zeros <= 32'd0; hdr_n <= 5'd0; outstanding <= 32'd0;
      flush_w <= 1'b0; ec_v <= 1'b0; cc_v <= 1'b0;
    end else begin
      if (st != S_IDLE) cycles <= cycles + 32'd1;
      if (wr_fire && !wr_resp_valid) outstanding <= outstanding + 32'd1;
      else if (!wr_fire && wr_resp_valid) outstanding <= outstanding - 32'd1;
      if (wr_resp_valid && wr_resp_err) ost <= 32'd2;
      // payload byte stream (one byte per cycle)
      if (pb_valid && pb_ready) begin
        off <= off + 32'd1;
        if (em_n != 3'd0) begin em_n <= em_n - 3'd1; em_val <= em_val >> 8; end
        else em_zeros <= em_zeros - 32'd1;
      end
      if (hb_valid && hb_ready) begin hdr_n <= hdr_n - 5'd1; hdr_sh <= hdr_sh >> 8; end
      case (st)
        S_IDLE: if (enable && q_out_valid && !q_pop) begin
          q_pop <= 1'b1;
          j_rows <= q_out[95:64]; j_cols <= q_out[127:96];
          j_pitch <= q_out[159:128]; j_dt <= q_out[161:160]; j_bitmap <= q_out[167:164] == 4'd2;
          j_s <= q_out[171:168]; j_tr <= q_out[200:192]; j_tc <= q_out[216:208];
          j_trl <= lg(q_out[200:192]); j_tcl <= lg(q_out[216:208]);
          j_thr <= q_out[255:224]; j_ct <= q_out[319:256]; j_hdr <= q_out[383:320]; j_out <= q_out[447:384];
          j_cap <= q_out[479:448]; job_tag <= q_out[511:480];
          t <= 32'd0; r0 <= 32'd0; c0 <= 32'd0; tj <= 32'd0; off <= 32'd0; ost <= 32'd0; cycles <= 32'd1;
          trow_addr <= {q_out[63:32], q_out[31:0]}; ec_v <= 1'b0; cc_v <= 1'b0;
          st <= S_TILE;
        end
        S_TILE: if (hdr_n == 5'd0) begin
          if (!c_hit) begin
            rd_for_ct <= 1'b1; rd_valid <= 1'b1; rd_addr <= {caddr[63:7], 7'd0}; ret <= S_TILE; st <= S_RD;
          end else begin
            re <= re_w; ce <= ce_w;
            if (dense) begin
              hdr_sh <= {{32'd0, off}, dense_nnz, 16'd0, 8'd0, 8'd0}; hdr_n <= 5'd16; st <= S_NEXT;
            end else if (j_s == 4'd0 && cword == 32'd0) begin
              hdr_sh <= {{32'd0, off}, 32'd0, 16'd0, 8'd0, j_bitmap ? 8'd2 : 8'd1}; hdr_n <= 5'd16; st <= S_NEXT;
            end else begin
              pass <= P_CNT; r <= 9'd0; c <= 9'd0; rn <= 9'd0; width <= 9'd0; nnz <= 32'd0; word <= 32'd0;
              row_addr <= trow_addr; st <= S_ELEM;
            end
          end
        end
        S_RD: if (rd_ready) begin rd_valid <= 1'b0; st <= S_RW; end
        S_RW: if (rd_resp_valid) begin
          if (rd_resp_err) begin ost <= 32'd2; st <= S_FIN; end
          else begin
            if (rd_for_ct) begin cc_v <= 1'b1; cc_line <= rd_addr[63:7]; cc_data <= rd_resp_data; end
            else begin ec_v <= 1'b1; ec_line <= rd_addr[63:7]; ec_data <= rd_resp_data; end
            st <= ret;
          end
        end
        S_ELEM: if (em_idle) begin
          if (!e_hit) begin
            rd_for_ct <= 1'b0; rd_valid <= 1'b1; rd_addr <= {eaddr[63:7], 7'd0}; ret <= S_ELEM; st <= S_RD;
          end else begin
            case (pass)
              P_IDX: if (e_nz) begin em_val <= {23'd0, c}; em_n <= 3'd1; end
              P_VAL: if (e_nz) begin em_val <= elem; em_n <= eb; end
              P_BM: if (c[4:0] == 5'd31 || last_c) begin
                em_val <= word | ({31'd0, e_nz} << c[4:0]); em_n <= 3'd4; word <= 32'd0;
              end else word <= word | ({31'd0, e_nz} << c[4:0]);
              default: ;
            endcase
            rn <= rn_nx;
            c  <= c + 9'd1;
            if (last_c) begin
              c <= 9'd0; r <= r + 9'd1; rn <= 9'd0; row_addr <= row_addr + {32'd0, j_pitch};
              if (pass == P_CNT) begin
                if (rn_nx > width) width <= rn_nx;
                nnz <= nnz + {23'd0, rn_nx};
              end else if (pass == P_IDX) em_zeros <= {23'd0, width - rn_nx};
              else if (pass == P_VAL && !j_bitmap) em_zeros <= {23'd0, width - rn_nx} << (eb4 ? 2 : 1);
              if (last_r) st <= S_PEND;
            end
          end
        end
        S_PEND: if (em_idle) begin   // end of a pass
          r <= 9'd0; c <= 9'd0; rn <= 9'd0; row_addr <= trow_addr; st <= S_ELEM;
          case (pass)
            P_CNT: begin
              if (ovf) begin ost <= 32'd1; st <= S_FIN; end
              else if (nnz == 32'd0) begin
                hdr_sh <= {{32'd0, off}, 32'd0, 16'd0, 8'd0, j_bitmap ? 8'd2 : 8'd1}; hdr_n <= 5'd16; st <= S_NEXT;
              end else begin
                hdr_sh <= {{32'd0, off}, nnz, j_bitmap ? 16'd0 : {7'd0, width}, 8'd0, j_bitmap ? 8'd2 : 8'd1};
                pass <= j_bitmap ? P_BM : P_IDX;
              end
            end
            P_IDX: begin em_zeros <= {30'd0, 2'd0 - rw[1:0]}; pass <= P_VAL; end
            P_BM: pass <= P_VAL;
            default: begin  // values done: pad to 16 B, then the header
              em_zeros <= {28'd0, 4'd0 - off[3:0]};
              hdr_n <= 5'd16; st <= S_NEXT;
            end
          endcase
        end
        S_NEXT: if (em_idle && hdr_n == 5'd0) begin   // tile done (header and padding written): advance
          t <= t + 32'd1;
          if (tj + 32'd1 == ((j_cols + {23'd0, j_tc} - 32'd1) >> j_tcl)) begin
            tj <= 32'd0; c0 <= 32'd0; r0 <= r0 + {23'd0, j_tr};
            trow_addr <= trow_addr + ({32'd0, j_pitch} << j_trl);
            st <= (r0 + {23'd0, j_tr} >= j_rows) ? S_FIN : S_TILE;
          end else begin
            tj <= tj + 32'd1; c0 <= c0 + {23'd0, j_tc}; st <= S_TILE;
          end
        end
        S_FIN: if (em_idle && hdr_n == 5'd0) begin
          flush_w <= 1'b1;
          if (flush_w && pw_idle && hw_idle && outstanding == 32'd0 && !wr_fire) begin
            flush_w <= 1'b0; st <= S_DONE;
          end
        end
        default: begin  // S_DONE
          job_done <= 1'b1; job_cycles <= cycles; job_out_bytes <= off; job_status <= ost; st <= S_IDLE;
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
