// GpuBuilder: the one place where the GPU's topology is wired (see gpu_system.h for the picture).
#include "spartan/hw/gpu/gpu_system.h"

#include <stdexcept>

#include "spartan/hw/gpu/backing_store.h"
#include "spartan/hw/gpu/crossbar.h"
#include "spartan/hw/gpu/l2_slice.h"
#include "spartan/hw/gpu/memory_controller.h"
#include "spartan/hw/gpu/traffic_generator.h"

// libsystemc.so provides main() calling sc_main() and so references sc_main. Executables of this project
// have their own main() (run_cli / gtest); this weak definition satisfies the link and is replaced by any
// real sc_main an executable defines.
extern "C" __attribute__((weak)) int sc_main(int, char**) { return 1; }

namespace spartan::hw::gpu {

GpuSystem::GpuSystem(const GpuConfig& cfg) : cfg_(cfg), map_(cfg) {
  validate_gpu_config(cfg_);
  if (sc_core::sc_get_status() != sc_core::SC_ELABORATION)
    throw std::logic_error("GpuSystem must be built before the simulation starts (one per process)");
  if (sc_core::sc_get_time_resolution() != sc_core::sc_time(1, sc_core::SC_PS))
    throw std::logic_error("GpuSystem needs the SystemC time resolution of 1 ps");
  tlm_utils::tlm_quantumkeeper::set_global_quantum(sc_core::sc_time(cfg_.simulation.quantum_ns, sc_core::SC_NS));

  store_ = std::make_unique<BackingStore>("store");
  xbar_ = std::make_unique<Crossbar>("xbar", cfg_, map_, stats_);
  // One DMI page cache for all slices (they share the store): 4096 pages of 64 KiB = 256 MiB mapped.
  auto dmi = std::make_shared<L2Slice::DmiCache>(4096);
  for (std::uint32_t s = 0; s < cfg_.l2.slices; ++s) {
    l2_.push_back(std::make_unique<L2Slice>(("l2_" + std::to_string(s)).c_str(), cfg_, map_, s, stats_));
    xbar_->out.bind(l2_.back()->socket);            // crossbar port s -> slice s
    l2_.back()->store_socket.bind(store_->socket);  // data through DMI
    l2_.back()->share_dmi_cache(dmi);
  }
  const std::uint32_t spc = map_.slices_per_channel();
  for (std::uint32_t c = 0; c < cfg_.dram.channels; ++c) {
    mcs_.push_back(std::make_unique<MemoryController>(("mc_" + std::to_string(c)).c_str(), cfg_, map_, c, stats_));
    for (std::uint32_t k = 0; k < spc; ++k) {
      l2_[c * spc + k]->mem_socket.bind(mcs_.back()->socket);  // id k
      l2_[c * spc + k]->set_direct_memory_controller(mcs_.back().get());
    }
  }
  // Direct (sc_time-free) calls along the bindings just made: same timing, no socket overhead.
  std::vector<L2Slice*> slices;
  for (auto& s : l2_) slices.push_back(s.get());
  xbar_->set_direct_targets(slices);
  sched_ = std::make_unique<SmScheduler>("sm_scheduler");
  for (std::uint32_t i = 0; i < cfg_.sm.count; ++i) {
    sms_.push_back(std::make_unique<TrafficGenerator>(("sm_" + std::to_string(i)).c_str(), cfg_, i, stats_));
    sms_.back()->socket.bind(xbar_->in);  // crossbar input port i
    xbar_->add_input_port("sm[" + std::to_string(i) + "]");
    sms_.back()->set_direct_crossbar(xbar_.get(), i);  // the same port, called without b_transport
  }
}

std::unique_ptr<GpuSystem> GpuSystem::from_preset(const std::string& name_or_path) {
  return std::make_unique<GpuSystem>(load_gpu_config(name_or_path));
}

GpuSystem::~GpuSystem() = default;

void GpuSystem::add_l2_write_observer(std::size_t slice, L2WriteObserver& obs) { l2_.at(slice)->add_write_observer(obs); }

void GpuSystem::bind_extra_initiator(tlm::tlm_initiator_socket<>& socket, const std::string& name,
                                     std::uint32_t port_bytes_per_cycle) {
  if (sc_core::sc_get_status() != sc_core::SC_ELABORATION)
    throw std::logic_error("bind_extra_initiator must be called before the first run()");
  socket.bind(xbar_->in);
  xbar_->add_input_port(name, port_bytes_per_cycle);
}

ps_t GpuSystem::now_ps() const { return sc_core::sc_time_stamp().value(); }

void GpuSystem::run_until_idle() { sc_core::sc_start(); }


void GpuSystem::advance(ps_t ps) {
  if (ps) sc_core::sc_start(sc_core::sc_time::from_value(ps));
}

ps_t GpuSystem::flush_l2() {
  ps_t now = now_ps(), done = now;
  for (auto& s : l2_) done = std::max(done, s->flush());
  advance(done - now);
  return done;
}

ps_t GpuSystem::align_to_refresh() {
  const ps_t now = now_ps(), period = cfg_.dram_clock().cycles_to_ps(cfg_.dram.timing.tREFI);
  // > now + period - 1: one whole interval in between (without refresh: now)
  const ps_t target = period ? (now / period + 2) * period : now;
  advance(target - now);
  // Everything is idle (and, with refresh, every row was closed by the refresh in between): the crossbar's
  // and the DRAM channels' calendars count their bins from here, so the bins' phase does not depend on the
  // time reached (before, work run at different absolute times could be timed a few ns apart).
  xbar_->rebase(target);
  for (auto& mc : mcs_) mc->channel().rebase(target);
  return target;
}

KernelResult GpuSystem::run(const std::vector<RequestSource*>& sources) {
  if (sources.size() > sms_.size())
    throw std::logic_error("GpuSystem::run: " + std::to_string(sources.size()) + " sources for " +
                           std::to_string(sms_.size()) + " SMs");
  // The first call finishes elaboration and lets every SC_THREAD reach its first wait().
  if (sc_core::sc_get_status() == sc_core::SC_ELABORATION) sc_core::sc_start(sc_core::SC_ZERO_TIME);
  std::vector<TrafficGenerator*> sms;
  for (auto& s : sms_) sms.push_back(s.get());
  sched_->start(sms, sources);
  KernelResult k;
  k.start_ps = now_ps();
  sc_core::sc_start();
  k.end_ps = k.start_ps;
  for (auto& sm : sms_) {
    const auto& s = sm->kernel_stats();
    if (!s.active) continue;
    k.end_ps = std::max(k.end_ps, s.last_done_ps);
    k.requests += s.requests;
    k.bytes_read += s.bytes_read;
    k.bytes_written += s.bytes_written;
    k.latency_ps.merge(s.latency_ps);
  }
  return k;
}

}  // namespace spartan::hw::gpu
