#include "spartan/hw/gpu/crossbar.h"

#include <algorithm>
#include <stdexcept>

#include "spartan/hw/gpu/l2_slice.h"

namespace spartan::hw::gpu {

void CrossbarPortStats::register_with(StatsGroup& g) const {
  g.counter("requests", requests).counter("request_bytes", request_bytes).counter("response_bytes", response_bytes)
      .average("queue_delay_ps", queue_delay_ps, "time waiting for busy crossbar ports, ps")
      .counter("stale_reservations", stale_reservations,
               "port reservations older than the port calendar's horizon, timed without contention");
}

Crossbar::Crossbar(sc_core::sc_module_name name, const GpuConfig& cfg, const AddressMap& map, StatsRegistry& stats)
    : sc_module(name),
      in("in"),
      out("out"),
      map_(map),
      registry_(stats),
      clk_(cfg.crossbar_clock()),
      bw_(cfg.crossbar.port_bytes_per_cycle),
      header_(cfg.crossbar.header_bytes),
      latency_ps_(clk_.cycles_to_ps(cfg.crossbar.latency_cycles)),
      line_bytes_(cfg.l2.slice.line_bytes) {
  for (std::uint32_t s = 0; s < cfg.l2.slices; ++s) {
    slice_ports_.emplace_back(clk_, bw_);
    slice_ports_.back().req.count_stale_in(&slice_ports_stale_);
    slice_ports_.back().rsp.count_stale_in(&slice_ports_stale_);
    slice_port_ptr_.push_back(&slice_ports_.back());
  }
  stats.add_group("xbar.slice_ports", "crossbar_slice_ports")
      .counter("stale_reservations", slice_ports_stale_,
               "reservations on the slice-side ports older than a port calendar's horizon, timed without contention");
  for (std::uint64_t c = 0; c <= flits(cfg.l2.slice.line_bytes) + 1; ++c)
    cycle_ps_.push_back(clk_.cycles_to_ps(double(c)));
  for (std::uint32_t p = 0; p <= cfg.l2.slice.line_bytes; ++p) {
    const std::uint64_t f = flits(p);
    msg_.push_back({f, cycles_ps(f)});
  }
  in.register_b_transport(this, &Crossbar::b_transport);
  in.register_transport_dbg(this, &Crossbar::transport_dbg);
}

void Crossbar::add_input_port(const std::string& name, std::uint32_t bytes_per_cycle) {
  const std::uint32_t w = bytes_per_cycle ? bytes_per_cycle : bw_;
  ports_.emplace_back(clk_, w);
  ports_.back().bw = w;
  port_ptr_.push_back(&ports_.back());
  if (w != bw_) {
    std::vector<Message> tab;
    for (std::uint32_t p = 0; p <= line_bytes_; ++p) {
      const std::uint64_t f = flits(p, w);
      tab.push_back({f, clk_.cycles_to_ps(double(f))});
    }
    wide_msg_.push_back(std::move(tab));
    ports_.back().wide_msg = &wide_msg_.back();
  }
  Port& p = ports_.back();
  p.req.count_stale_in(&p.stats.stale_reservations);
  p.rsp.count_stale_in(&p.stats.stale_reservations);
  p.stats.register_with(registry_.add_group("xbar." + name, "crossbar_port"));
}

void Crossbar::rebase(ps_t origin) {
  for (auto* ports : {&ports_, &slice_ports_})
    for (Port& p : *ports) p.req.rebase(origin), p.rsp.rebase(origin);
}

unsigned int Crossbar::transport_dbg(int, tlm::tlm_generic_payload& gp) {
  return out[map_.to_slice(gp.get_address()).slice]->transport_dbg(gp);
}

void Crossbar::b_transport(int id, tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
  if (std::size_t(id) >= port_ptr_.size()) throw std::out_of_range("Crossbar: undeclared input port");
  ps_t now = sc_core::sc_time_stamp().value();
  ps_t done = access(std::size_t(id), gp, now, now + delay.value());
  delay = sc_core::sc_time::from_value(done - now);
}

ps_t Crossbar::access(std::size_t port, tlm::tlm_generic_payload& gp, ps_t now, ps_t t) {
  Port& p = *port_ptr_[port];
  // SM ports (the hot path of every kernel) compile without the wide-port steps.
  return p.wide_msg ? access_on<true>(p, gp, now, t) : access_on<false>(p, gp, now, t);
}

template <bool Wide>
ps_t Crossbar::access_on(Port& p, tlm::tlm_generic_payload& gp, ps_t now, ps_t t) {
  const SliceAddress sa = map_.to_slice(gp.get_address());
  const std::uint32_t slice = sa.slice;
  if (!direct_.empty()) direct_[slice]->prefetch(gp.get_address(), sa.local);
  Port& s = *slice_port_ptr_[slice];
  bool write = gp.is_write();
  std::uint32_t bytes = gp.get_data_length();

  // Request: through the input port, then the slice port (cut-through: the second reservation starts when
  // the first one starts moving data, so an idle path costs one message time, not two).
  const auto [req_flits, min_req] = message(write ? bytes : 0);
  // A wider input port (an extra initiator, add_input_port): its own flits and times on its side.
  const Message preq = Wide ? port_message(p, write ? bytes : 0) : Message{req_flits, min_req};
  // The calendars round a transfer's end down to the ps while cycles_ps() rounds to nearest, so `a` can
  // lie up to 1 ps short of t + min_req with a non-integer period (1410 MHz: 709.22 ps): clamp, never wrap.
  ps_t a = p.req.reserve_flits(t, preq.flits);
  ps_t b = s.req.reserve_flits(a > t + preq.min_ps ? a - preq.min_ps : t, req_flits);
  if constexpr (Wide) b = std::max(b, a);  // the narrower slice port cannot finish first
  ps_t arrive = b + latency_ps_;

  ps_t r;
  if (!direct_.empty()) {
    r = direct_[slice]->access(gp, now, arrive, sa.local);
  } else {
    sc_core::sc_time d = sc_core::sc_time::from_value(arrive - now);
    out[slice]->b_transport(gp, d);
    r = now + d.value();
  }

  const auto [rsp_flits, min_rsp] = message(write ? 0 : bytes);
  const Message prsp = Wide ? port_message(p, write ? 0 : bytes) : Message{rsp_flits, min_rsp};
  ps_t c = s.rsp.reserve_flits(r, rsp_flits);
  ps_t e = p.rsp.reserve_flits(c > r + min_rsp ? c - min_rsp : r, prsp.flits);
  if constexpr (Wide) e = std::max(e, c);
  ps_t done = e + latency_ps_;

  ++p.stats.requests;
  p.stats.request_bytes += header_ + (write ? bytes : 0);
  p.stats.response_bytes += header_ + (write ? 0 : bytes);
  const auto wait_ps = [](ps_t end, ps_t start, ps_t min) { return end > start + min ? double(end - start - min) : 0.0; };
  if constexpr (Wide)
    p.stats.queue_delay_ps.add(wait_ps(b, t, std::max(min_req, preq.min_ps)) + wait_ps(e, r, std::max(min_rsp, prsp.min_ps)));
  else
    p.stats.queue_delay_ps.add(wait_ps(b, t, min_req) + wait_ps(e, r, min_rsp));
  return done;
}

}  // namespace spartan::hw::gpu
