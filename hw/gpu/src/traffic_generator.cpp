#include "spartan/hw/gpu/traffic_generator.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "spartan/hw/gpu/crossbar.h"

namespace spartan::hw::gpu {

void SmStats::register_with(StatsGroup& g) const {
  g.counter("reads", reads).counter("writes", writes).counter("bytes_read", bytes_read)
      .counter("bytes_written", bytes_written).counter("errors", errors)
      .histogram("latency", latency_ps, "ps", "line request issue -> completion");
}

TrafficGenerator::TrafficGenerator(sc_core::sc_module_name name, const GpuConfig& cfg, std::uint32_t index,
                                   StatsRegistry& stats)
    : sc_module(name),
      socket("socket"),
      index_(index),
      line_bytes_(cfg.l2.slice.line_bytes),
      line_div_(cfg.l2.slice.line_bytes),
      issue_ps_(cfg.core_clock().cycles_to_ps(cfg.sm.issue_interval_cycles)),
      scratch_(cfg.l2.slice.line_bytes, 0),
      max_outstanding_(cfg.sm.max_outstanding_lines) {
  stats_.register_with(stats.add_group("sm[" + std::to_string(index) + "]", "sm"));
}

// Inlined into issue() (its only caller): one call level less per line request.
[[gnu::always_inline]] inline ps_t TrafficGenerator::issue_line(std::uint64_t addr, std::uint8_t* data,
                                                                std::uint32_t bytes, bool write, ps_t t, ps_t now) {
  if (t < now) t = now;
  gp_.set_command(write ? tlm::TLM_WRITE_COMMAND : tlm::TLM_READ_COMMAND);
  gp_.set_address(addr);
  gp_.set_data_ptr(data ? data : scratch_.data());
  gp_.set_data_length(bytes);
  gp_.set_streaming_width(bytes);
  gp_.set_byte_enable_ptr(nullptr);
  gp_.set_dmi_allowed(false);
  gp_.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  ps_t done;
  if (xbar_) {
    done = xbar_->access(xbar_port_, gp_, now, t);
  } else {
    sc_core::sc_time d = sc_core::sc_time::from_value(t - now);
    socket->b_transport(gp_, d);
    done = now + d.value();
  }
  if (gp_.is_response_error()) ++stats_.errors;
  if (write) {
    ++stats_.writes;
    stats_.bytes_written += bytes;
  } else {
    ++stats_.reads;
    stats_.bytes_read += bytes;
  }
  stats_.latency_ps.add(done - t);
  return done;
}

// Inlined into issue_pending() (and read()/write()): one call level less per request.
[[gnu::always_inline]] inline ps_t TrafficGenerator::issue(const MemRequest& r, ps_t t, ps_t now) {
  ps_t done = t;
  std::uint64_t a = r.addr, end = r.addr + r.bytes;
  std::uint8_t* p = r.data;
  while (a < end) {
    std::uint32_t n = std::uint32_t(std::min<std::uint64_t>(end - a, line_bytes_ - line_div_.mod(a)));
    if (r.write && !p) std::memset(scratch_.data(), 0, n);
    done = std::max(done, issue_line(a, p, n, r.write, t, now));
    a += n;
    if (p) p += n;
  }
  return done;
}

ps_t TrafficGenerator::read(std::uint64_t addr, void* dst, std::uint32_t bytes, ps_t t) {
  MemRequest r{addr, bytes, false, static_cast<std::uint8_t*>(dst), false, false};
  return issue(r, t, sc_core::sc_time_stamp().value());
}

ps_t TrafficGenerator::write(std::uint64_t addr, const void* src, std::uint32_t bytes, ps_t t) {
  // The payload is not modified by any target on a write; the cast only satisfies the TLM API.
  MemRequest r{addr, bytes, true, const_cast<std::uint8_t*>(static_cast<const std::uint8_t*>(src)), false, false};
  return issue(r, t, sc_core::sc_time_stamp().value());
}

void TrafficGenerator::begin(RequestSource* src, ps_t t) {
  src_ = src;
  kstats_ = SmKernelStats{};
  kstats_.active = src != nullptr;
  kstats_.first_issue_ps = t;
  inflight_.clear();
  has_pending_ = false;
  t_ = last_done_ = kstats_.last_done_ps = reads_done_ = t;
}

bool TrafficGenerator::next_issue_time(ps_t& t) {
  if (!has_pending_) {
    if (!src_ || !src_->next(pending_)) return false;
    has_pending_ = true;
  }
  ps_t ti = t_;
  if (inflight_.size() >= max_outstanding_) ti = std::max(ti, inflight_.top());
  if (pending_.dependent) ti = std::max(ti, last_done_);
  if (pending_.after_reads) ti = std::max(ti, reads_done_);
  t = ti;
  return true;
}

void TrafficGenerator::issue_pending(ps_t t, ps_t now) {
  // A request crossing an L2 line is issued as consecutive line requests, each taking its own in-flight slot
  // and issue interval: the part up to the line's end now, the rest stays pending (not dependent: it is the
  // same access). Until the sixteenth session the whole request went out at once as one slot, so an 8 KiB
  // request bypassed max_outstanding_lines and issue_interval_cycles (fresh-eyes review).
  MemRequest r = pending_;
  const std::uint32_t room = line_bytes_ - std::uint32_t(line_div_.mod(r.addr));
  const bool split = r.bytes > room;
  if (__builtin_expect(split, 0)) {
    r.bytes = room;
    pending_.addr += room;
    pending_.bytes -= room;
    if (pending_.data) pending_.data += room;
    pending_.dependent = false;
    pending_.after_reads = false;
  }
  ps_t done = issue(r, t, now);
  has_pending_ = split;
  if (r.after_reads) reads_done_ = t;  // the reads it waited for are behind it; later ones count from here
  if (!r.write) reads_done_ = std::max(reads_done_, done);
  if (inflight_.size() >= max_outstanding_) inflight_.replace_top(done);
  else inflight_.push(done);
  last_done_ = done;
  kstats_.last_done_ps = std::max(kstats_.last_done_ps, done);
  ++kstats_.requests;
  (r.write ? kstats_.bytes_written : kstats_.bytes_read) += r.bytes;
  kstats_.latency_ps.add(done - t);
  t_ = t + issue_ps_;
}

void TrafficGenerator::finish() { src_ = nullptr; }

SmScheduler::SmScheduler(sc_core::sc_module_name name) : sc_module(name) { SC_THREAD(thread); }

void SmScheduler::start(const std::vector<TrafficGenerator*>& sms, const std::vector<RequestSource*>& sources) {
  sms_ = sms;
  sources_ = sources;
  sources_.resize(sms_.size(), nullptr);
  start_ev_.notify(sc_core::SC_ZERO_TIME);
}

void SmScheduler::thread() {
  auto& ready = ready_;
  for (;;) {
    sc_core::wait(start_ev_);
    qk_.reset();
    ps_t now = sc_core::sc_time_stamp().value(), end = now;
    ready.reset(sms_.size());
    for (std::uint32_t i = 0; i < sms_.size(); ++i) {
      sms_[i]->begin(sources_[i], now);
      ps_t t;
      if (sources_[i] && sms_[i]->next_issue_time(t)) ready.push(t, i);
    }
    ps_t next_sync = qk_.next_sync_ps();
    while (!ready.empty()) {
      auto [t, i] = ready.top();
      TrafficGenerator& sm = *sms_[i];
      now = sc_core::sc_time_stamp().value();
      // Advance local time; synchronise once per quantum. Same as qk_.set(t - now) then
      // `if (qk_.need_sync()) qk_.sync()` (need_sync: now + local time >= next sync point), without the
      // sc_time arithmetic on the requests that do not synchronise.
      if (t > now && t >= next_sync) {
        qk_.set(sc_core::sc_time::from_value(t - now));
        qk_.sync();
        now = sc_core::sc_time_stamp().value();
        next_sync = qk_.next_sync_ps();
      }
      sm.issue_pending(t, now);
      ps_t tn;
      if (sm.next_issue_time(tn)) {
        ready.replace_top(tn, i);
      } else {
        ready.pop();
        end = std::max(end, sm.kernel_stats().last_done_ps);
      }
    }
    for (auto* sm : sms_) sm->finish();
    qk_.reset();
    now = sc_core::sc_time_stamp().value();
    if (end > now) sc_core::wait(sc_core::sc_time::from_value(end - now));
  }
}

}  // namespace spartan::hw::gpu
