// Stream-to-line write packer of the compaction engine's output packer: accepts a chunk of up to
// LINE_BYTES bytes per cycle (in_n bytes of in_data, byte 0 first) appended at in_addr (chunks of one stream
// are contiguous), merges it into the open line (byte strobes) and issues a line write (valid/ready) when a
// line is complete or on `flush`. A chunk that crosses the line end completes the open line and opens the
// next one with the rest, so a full line per cycle streams through. One write is held at a time.
module spartan_line_writer #(
  parameter LINE_BYTES = 128,
  parameter LBL        = $clog2(LINE_BYTES),
  parameter NW         = LBL + 1
) (
  input  wire                    clk,
  input  wire                    rst,
  input  wire                    in_valid,
  output wire                    in_ready,
  input  wire [63:0]             in_addr,
  input  wire [NW-1:0]           in_n,
  input  wire [LINE_BYTES*8-1:0] in_data,
  input  wire                    flush,
  output reg                     w_valid,
  input  wire                    w_ready,
  output reg  [63:0]             w_addr,
  output reg  [LINE_BYTES*8-1:0] w_data,
  output reg  [LINE_BYTES-1:0]   w_strb,
  output wire                    idle
);
  localparam LB = LINE_BYTES * 8;
  reg [LB-1:0]         buf_q;
  reg [LINE_BYTES-1:0] strb_q;
  reg [63-LBL:0]       line_q;
  reg                  has_q;
  wire [LBL-1:0]   p     = in_addr[LBL-1:0];
  // byte mask of the chunk at its line position (low half: this line, high half: the next one)
  wire [2*LINE_BYTES-1:0] m = ({{LINE_BYTES{1'b0}}, {LINE_BYTES{1'b1}} >> (LINE_BYTES - in_n)}) << p;
  // the chunk's bytes beyond in_n are cleared, then it is shifted to its line position
  wire [NW+2:0]    nbits = {LINE_BYTES[NW-1:0] - in_n, 3'b000};
  wire [LB-1:0]    keep  = {LB{1'b1}} >> nbits;
  wire [2*LB-1:0]  sh    = {{LB{1'b0}}, in_data & keep} << {p, 3'b000};
  wire [LB-1:0]         lo_data = sh[LB-1:0];
  wire [LB-1:0]         hi_data = sh[2*LB-1:LB];
  wire [LB-1:0]         cur     = (has_q ? buf_q : {LB{1'b0}}) | lo_data;
  wire [LINE_BYTES-1:0] cur_s   = (has_q ? strb_q : {LINE_BYTES{1'b0}}) | m[LINE_BYTES-1:0];
  wire                  spill   = |m[2*LINE_BYTES-1:LINE_BYTES];
  wire                  ends    = m[LINE_BYTES-1] || spill;   // the chunk reaches the end of its line
  wire                  slot    = !w_valid || w_ready;        // the write register is free this cycle
  wire                  take    = in_valid && in_n != {NW{1'b0}};
  assign in_ready = slot;
  assign idle     = !has_q && !w_valid;
  always @(posedge clk) begin
    if (rst) begin
      has_q   <= 1'b0;
      w_valid <= 1'b0;
      strb_q  <= {LINE_BYTES{1'b0}};
    end else begin
      if (w_valid && w_ready) w_valid <= 1'b0;
      if (take && slot) begin
        if (ends) begin
          w_valid <= 1'b1;
          w_addr  <= {in_addr[63:LBL], {LBL{1'b0}}};
          w_data  <= cur;
          w_strb  <= cur_s;
          has_q   <= spill;
          buf_q   <= hi_data;
          strb_q  <= m[2*LINE_BYTES-1:LINE_BYTES];
          line_q  <= in_addr[63:LBL] + 1'b1;
        end else begin
          has_q  <= 1'b1;
          buf_q  <= cur;
          strb_q <= cur_s;
          line_q <= in_addr[63:LBL];
        end
      end else if (flush && has_q && slot) begin
        w_valid <= 1'b1;
        w_addr  <= {line_q, {LBL{1'b0}}};
        w_data  <= buf_q;
        w_strb  <= strb_q;
        has_q   <= 1'b0;
        strb_q  <= {LINE_BYTES{1'b0}};
      end
    end
  end
endmodule
