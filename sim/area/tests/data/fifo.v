// Test block for spartan-area: synchronous FIFO with an inferable memory (descriptor-queue style).
module fifo #(parameter W = 16, parameter DEPTH_LOG2 = 3) (
  input  wire         clk,
  input  wire         rst,
  input  wire         push,
  input  wire [W-1:0] push_data,
  output wire         full,
  input  wire         pop,
  output wire [W-1:0] pop_data,
  output wire         empty
);
  localparam DEPTH = 1 << DEPTH_LOG2;
  reg [W-1:0] mem [0:DEPTH-1];
  reg [DEPTH_LOG2-1:0] wp, rp;
  reg [DEPTH_LOG2:0] n;
  wire do_push = push && !full;
  wire do_pop = pop && !empty;
  assign full = n == DEPTH;
  assign empty = n == 0;
  assign pop_data = mem[rp];
  always @(posedge clk) begin
    if (do_push) mem[wp] <= push_data;
    if (rst) begin
      wp <= 0;
      rp <= 0;
      n <= 0;
    end else begin
      if (do_push) wp <= wp + 1'b1;
      if (do_pop) rp <= rp + 1'b1;
      n <= n + do_push - do_pop;
    end
  end
endmodule
