// Synchronous FIFO (valid/ready on both sides), DEPTH a power of two, memory as an inferable array.
// Used as the compaction engine's descriptor FIFO.
module spartan_sync_fifo #(
  parameter W     = 32,
  parameter DEPTH = 4,
  parameter AW    = $clog2(DEPTH)
) (
  input  wire         clk,
  input  wire         rst,
  input  wire         in_valid,
  output wire         in_ready,
  input  wire [W-1:0] in_data,
  output wire         out_valid,
  input  wire         out_ready,
  output wire [W-1:0] out_data,
  output wire [AW:0]  level
);
  reg [W-1:0] mem [0:DEPTH-1];
  reg [AW:0]  wp, rp;
  assign level     = wp - rp;
  assign in_ready  = level != DEPTH[AW:0];
  assign out_valid = level != {(AW+1){1'b0}};
  assign out_data  = mem[rp[AW-1:0]];
  always @(posedge clk) begin
    if (rst) begin
      wp <= {(AW+1){1'b0}};
      rp <= {(AW+1){1'b0}};
    end else begin
      if (in_valid && in_ready) begin
        mem[wp[AW-1:0]] <= in_data;
        wp <= wp + 1'b1;
      end
      if (out_valid && out_ready)
        rp <= rp + 1'b1;
    end
  end
endmodule
