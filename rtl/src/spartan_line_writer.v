// Byte-to-line write packer of the compaction engine's output packer: accepts one byte per cycle at any
// address, collects the bytes of one 128 B line (byte strobes) and issues a line write (valid/ready) when the
// next byte falls in another line, when the line is full, or on `flush`. One write is held at a time.
module spartan_line_writer #(
  parameter LINE_BYTES = 128,
  parameter LBL        = $clog2(LINE_BYTES)
) (
  input  wire                    clk,
  input  wire                    rst,
  input  wire                    b_valid,
  output wire                    b_ready,
  input  wire [63:0]             b_addr,
  input  wire [7:0]              b_data,
  input  wire                    flush,
  output reg                     w_valid,
  input  wire                    w_ready,
  output reg  [63:0]             w_addr,
  output reg  [LINE_BYTES*8-1:0] w_data,
  output reg  [LINE_BYTES-1:0]   w_strb,
  output wire                    idle
);
  reg [LINE_BYTES*8-1:0] buf_q;
  reg [LINE_BYTES-1:0]   strb_q;
  reg [63-LBL:0]         line_q;
  reg                    has_q;
  wire other = b_valid && (b_addr[63:LBL] != line_q);
  wire full  = &strb_q;
  wire move  = has_q && !w_valid && (flush || full || other);
  assign b_ready = !move && !(has_q && (full || other));
  assign idle    = !has_q && !w_valid;
  always @(posedge clk) begin
    if (rst) begin
      has_q   <= 1'b0;
      w_valid <= 1'b0;
      strb_q  <= {LINE_BYTES{1'b0}};
    end else begin
      if (w_valid && w_ready) w_valid <= 1'b0;
      if (move) begin
        w_valid <= 1'b1;
        w_addr  <= {line_q, {LBL{1'b0}}};
        w_data  <= buf_q;
        w_strb  <= strb_q;
        has_q   <= 1'b0;
        strb_q  <= {LINE_BYTES{1'b0}};
      end else if (b_valid && b_ready) begin
        if (!has_q) begin
          buf_q  <= {LINE_BYTES*8{1'b0}};
          strb_q <= {{(LINE_BYTES-1){1'b0}}, 1'b1} << b_addr[LBL-1:0];
          buf_q[b_addr[LBL-1:0]*8 +: 8] <= b_data;
        end else begin
          strb_q[b_addr[LBL-1:0]] <= 1'b1;
          buf_q[b_addr[LBL-1:0]*8 +: 8] <= b_data;
        end
        has_q  <= 1'b1;
        line_q <= b_addr[63:LBL];
      end
    end
  end
endmodule
