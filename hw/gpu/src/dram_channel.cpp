#include "spartan/hw/gpu/dram_channel.h"

#include <algorithm>

namespace spartan::hw::gpu {

void DramStats::register_with(StatsGroup& g) const {
  g.counter("reads", reads).counter("writes", writes).counter("read_bytes", read_bytes)
      .counter("write_bytes", write_bytes)
      .counter("row_hits", row_hits, "column commands to an already open row")
      .counter("row_misses", row_misses, "column commands needing an ACT to a closed bank")
      .counter("row_conflicts", row_conflicts, "column commands needing PRE+ACT (other row open)")
      .counter("activates", activates).counter("precharges", precharges)
      .counter("refresh_stalls", refresh_stalls, "commands delayed by an all-bank refresh")
      .counter("bus_busy_ps", bus_busy_ps)
      .histogram("read_latency", read_latency_ps, "ps", "controller arrival -> last data beat");
}

DramChannel::DramChannel(const DramConfig& c, const ClockDomain& clk, std::uint32_t ch, std::uint32_t channels)
    : cfg_(c),
      banks_(c.banks()),
      bus_(clk.cycles_to_ps(c.timing.tBURST)),
      acts_(clk.cycles_to_ps(c.timing.tRRD)),
      bg_cols_(c.bank_groups, SlotCalendar(clk.cycles_to_ps(c.timing.tCCDL), 1, 1u << 13)) {
  const auto& t = c.timing;
  auto ps = [&](std::uint32_t cyc) { return clk.cycles_to_ps(cyc); };
  tRCD_ = ps(t.tRCD), tRP_ = ps(t.tRP), tRAS_ = ps(t.tRAS), tRC_ = ps(t.tRC), CL_ = ps(t.CL), WL_ = ps(t.WL);
  tCCDL_ = ps(t.tCCDL), tCCDS_ = ps(t.tCCDS), tRRD_ = ps(t.tRRD), tWR_ = ps(t.tWR), tRTP_ = ps(t.tRTP);
  tWTR_ = ps(t.tWTR), tRTW_ = ps(t.tRTW), tBURST_ = ps(t.tBURST), tREFI_ = ps(t.tREFI), tRFC_ = ps(t.tRFC);
  // Stagger refresh over channels so that they do not all refresh at once (as controllers do).
  refresh_offset_ = tREFI_ ? tREFI_ - (tREFI_ * ch / std::max<std::uint32_t>(channels, 1)) % tREFI_ : 0;
}

bool DramChannel::closed_recently(const Bank& b, std::uint32_t row, ps_t t) {
  for (int k = 0; k < 4; ++k)
    if (b.closed_row[k] == row && t < b.closed_at[k]) return true;
  return false;
}

ps_t DramChannel::burst(ps_t t, const DramAddress& a, bool write, RowResult* result) {
  Bank& b = banks_[a.flat_bank(cfg_.banks_per_group)];
  ps_t t0 = t;
  t = after_refresh(t);
  if (t != t0) ++stats_.refresh_stalls;
  ps_t col_ready;
  RowResult r;
  bool row_open = b.open && b.epoch == epoch(t);
  if (row_open && b.row == a.row) {
    r = RowResult::Hit;
    col_ready = t;
  } else if (closed_recently(b, a.row, t)) {
    // FR-FCFS approximation: this request was waiting while its row was still open; a first-ready
    // scheduler would have served it as a row hit before precharging that row.
    r = RowResult::Hit;
    col_ready = t;
  } else {
    ps_t act = t;
    if (row_open) {  // conflict: precharge the open row first
      r = RowResult::Conflict;
      ps_t pre = std::max({t, b.act + tRAS_, b.write_recovery, b.last_read + tRTP_});
      b.closed_row[b.closed_next] = b.row;
      b.closed_at[b.closed_next] = pre;
      b.closed_next = (b.closed_next + 1) % 4;
      act = pre + tRP_;
      ++stats_.precharges;
    } else {
      r = RowResult::Miss;
    }
    if (b.ever_activated) act = std::max(act, b.act + tRC_);
    act = acts_.reserve(after_refresh(act));  // tRRD
    while (after_refresh(act) != act) act = acts_.reserve(after_refresh(act));
    b.open = true, b.row = a.row, b.epoch = epoch(act), b.act = act, b.ever_activated = true;
    ++stats_.activates;
    col_ready = act + tRCD_;
  }
  if (r == RowResult::Hit) ++stats_.row_hits;
  else if (r == RowResult::Miss) ++stats_.row_misses;
  else ++stats_.row_conflicts;
  if (result) *result = r;

  ps_t lat = write ? WL_ : CL_;
  // Bus turnaround: a direction change costs idle bus time (tRTW read->write, tWTR write->read).
  if (any_col_ && write != last_was_write_) {
    ps_t gap = write ? tRTW_ : tWTR_;
    for (ps_t g = 0; g < gap; g += tBURST_) bus_.reserve(col_ready + lat + g);
  }
  ps_t c = bg_cols_[a.bank_group].reserve(after_refresh(col_ready));  // tCCD_L within the bank group
  ps_t data_start = bus_.reserve(c + lat);                              // tCCD_S / tBURST on the bus
  while (after_refresh(data_start - lat) != data_start - lat) {  // no column command during refresh:
    ps_t end = after_refresh(data_start - lat);                    // the bus is idle for the window
    bus_.block(data_start, end + lat);
    data_start = bus_.reserve(end + lat);
  }
  ps_t data_end = data_start + tBURST_;
  c = data_start - lat;
  any_col_ = true;
  last_was_write_ = write;
  stats_.bus_busy_ps += tBURST_;
  if (write) b.write_recovery = std::max(b.write_recovery, data_end + tWR_);
  else b.last_read = std::max(b.last_read, c);
  return data_end;
}

}  // namespace spartan::hw::gpu
