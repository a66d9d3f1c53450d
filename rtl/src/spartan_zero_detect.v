// Per-lane zero detection for one memory line (Spartan units, this project's design).
// The line is viewed as LINE_BYTES/2 16-bit granules. dtype: 0 = F32, 1 = F16, 2 = BF16.
// An element is zero iff all bits except the sign are 0 (+0.0 and -0.0); NaN, Inf and denormals are
// non-zero (project tile-format definition). Output nz_elem[i] is element i's non-zero flag (F32 uses
// bits [LINE_BYTES/4-1:0]); nz_gran[g] is the flag of the element that owns granule g (for compaction).
module spartan_zero_detect #(
  parameter LINE_BYTES = 128
) (
  input  wire [LINE_BYTES*8-1:0] data,
  input  wire [1:0]              dtype,
  output reg  [LINE_BYTES/2-1:0] nz_elem,
  output reg  [LINE_BYTES/2-1:0] nz_gran
);
  localparam G = LINE_BYTES / 2;
  integer i;
  always @* begin
    nz_elem = {G{1'b0}};
    nz_gran = {G{1'b0}};
    if (dtype == 2'd0) begin
      for (i = 0; i < G / 2; i = i + 1) begin
        nz_elem[i]         = |data[i*32 +: 31];
        nz_gran[2*i]       = nz_elem[i];
        nz_gran[2*i + 1]   = nz_elem[i];
      end
    end else begin
      for (i = 0; i < G; i = i + 1) begin
        nz_elem[i] = |data[i*16 +: 15];
        nz_gran[i] = nz_elem[i];
      end
    end
  end
endmodule
