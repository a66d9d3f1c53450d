// Lockstep scoreboard RTL vs TLM compaction engine (see engine_lockstep.h).
#include "spartan/rtl/engine_lockstep.h"

#include <algorithm>
#include <cmath>
#include <chrono>
#include <vector>

#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include "spartan/hw/compaction_engine.h"
#include "spartan/hw/flat_memory.h"
#include "spartan/hw/mmio.h"
#include "spartan/rtl/engine_rtl.h"
#include "test_fault.h"

namespace spartan::rtl {

namespace eng = hw::regmap::engine;

namespace {
struct Host : sc_core::sc_module {
  tlm_utils::simple_initiator_socket<Host> mmio;
  explicit Host(sc_core::sc_module_name n) : sc_module(n), mmio("mmio") {}
  std::uint32_t access(bool write, std::uint32_t off, std::uint32_t v) {
    sc_core::sc_time d = sc_core::SC_ZERO_TIME;
    hw::mmio_transport32(mmio, write, off, v, d);
    sc_core::wait(d);
    return v;
  }
};
}  // namespace

using detail::TestFault;

hw::EngineConfig EngineLockstep::tlm_config(const EngineLockstepConfig& c) {
  hw::EngineConfig e;
  e.clock_mhz = c.clock_mhz;
  e.tile_buffers = c.tile_buffers;
  return e;
}

struct EngineLockstep::Impl {
  EngineLockstepConfig cfg;
  TestFault fault = detail::test_fault_for("engine", {TestFault::kEnginePayload, TestFault::kEngineCycles});
  hw::CompactionEngine tlm;
  hw::FlatMemory mem;
  Host host;
  EngineRtl rtl;
  static hw::EngineConfig engine_cfg(const EngineLockstepConfig& c) { return EngineLockstep::tlm_config(c); }
  static hw::FlatMemoryConfig mem_cfg(const EngineLockstepConfig& c) {
    hw::FlatMemoryConfig m;
    const double ps = 1.0e6 / c.clock_mhz;
    m.read_latency = sc_core::sc_time(ps * c.read_latency_cycles, sc_core::SC_PS);
    m.write_latency = sc_core::sc_time(ps * c.write_latency_cycles, sc_core::SC_PS);
    return m;
  }
  Impl(const std::string& name, const EngineLockstepConfig& c)
      : cfg(c), tlm((name + "_tlm").c_str(), engine_cfg(c)), mem((name + "_mem").c_str(), mem_cfg(c)),
        host((name + "_host").c_str()), rtl(c.read_latency_cycles, c.write_latency_cycles, c.tile_buffers) {
    host.mmio.bind(tlm.mmio);
    tlm.mem.bind(mem.socket);
    if (c.fail_line) {
      // the TLM engine reads row segments and writes partial lines: an access fails if any line it touches does
      mem.set_error_hook([f = c.fail_line](std::uint64_t a, std::uint32_t n, bool w) {
        for (std::uint64_t l = a & ~std::uint64_t(127); l < a + n; l += 128)
          if (f(l, w)) return true;
        return false;
      });
      rtl.set_line_fault(c.fail_line);
    }
  }
};

EngineLockstep::EngineLockstep(const std::string& name, const EngineLockstepConfig& cfg)
    : impl_(std::make_unique<Impl>(name, cfg)) {}
EngineLockstep::~EngineLockstep() = default;

EngineLockstepResult EngineLockstep::run(const hw::regmap::Descriptor& d, const Reader& read) {
  auto& I = *impl_;
  EngineLockstepResult res;
  // Inputs: the source rows (the whole pitch span) and the count table, copied into the TLM memory.
  const std::uint64_t tiles = hw::regmap::tile_count(d.rows, d.cols, d.tile_rows, d.tile_cols);
  // the count table's span with D_CFG.CT_PITCH (none for an empty matrix, which SUBMIT refuses: reported below)
  const std::uint64_t ct_entries = hw::regmap::count_table_span_entries(d);
  {
    std::vector<std::uint8_t> buf(std::size_t(d.rows) * d.row_pitch_bytes);
    read(d.src, buf.data(), buf.size());
    I.mem.write_bytes(d.src, buf.data(), buf.size());
    buf.assign(4 * ct_entries, 0);
    read(d.count_table, buf.data(), buf.size());
    I.mem.write_bytes(d.count_table, buf.data(), buf.size());
  }
  // TLM: program, submit (or fetch), enable, wait for the job.
  const auto w = d.to_words();
  const std::size_t jobs0 = I.tlm.jobs().size();
  res.fetched = I.cfg.fetch_desc_ptr != 0;
  sc_core::sc_time t_fetch = sc_core::SC_ZERO_TIME;
  // completion record: ERR_CODE cleared, COMPL_PTR and (without a fetch, which programs its own) ENGINE_INDEX,
  // in the order of the RTL driver (EngineRtl), so that a refused COMPL_PTR shows in both ERR_CODEs
  const std::uint64_t rec_at =
      I.cfg.completion_ptr == 0 ? 0 : I.cfg.completion_ptr + std::uint64_t(eng::kComplRecordBytes) * I.cfg.fetch_engine_index;
  if (rec_at != 0) I.host.access(true, eng::ERR_CODE, 0);
  I.host.access(true, eng::COMPL_PTR_LO, static_cast<std::uint32_t>(I.cfg.completion_ptr));
  I.host.access(true, eng::COMPL_PTR_HI, static_cast<std::uint32_t>(I.cfg.completion_ptr >> 32));
  if (rec_at != 0 && !res.fetched) I.host.access(true, eng::ENGINE_INDEX, I.cfg.fetch_engine_index);
  if (!res.fetched) {
    for (unsigned i = 0; i < eng::kDescWords; ++i) I.host.access(true, eng::DESC_BASE + 4 * i, w[i]);
    I.host.access(true, eng::SUBMIT, 1);
    I.host.access(true, eng::CTRL, 1);
  } else {
    const std::uint64_t desc_at = I.cfg.fetch_desc_ptr + std::uint64_t(eng::kDescBytes) * I.cfg.fetch_engine_index;
    I.mem.write_bytes(desc_at, w.data(), eng::kDescBytes);
    I.host.access(true, eng::DESC_PTR_LO, static_cast<std::uint32_t>(I.cfg.fetch_desc_ptr));
    I.host.access(true, eng::DESC_PTR_HI, static_cast<std::uint32_t>(I.cfg.fetch_desc_ptr >> 32));
    I.host.access(true, eng::ENGINE_INDEX, I.cfg.fetch_engine_index);
    I.host.access(true, eng::ERR_CODE, 0);
    I.host.access(true, eng::CTRL, 1);  // enabled first, as the RTL run: the fetched job starts on its own
    t_fetch = sc_core::sc_time_stamp();
    I.host.access(true, eng::FETCH, I.cfg.fetch_engine_index + 1);
    while ((I.host.access(false, eng::STATUS, 0) >> eng::STATUS_FETCH_BUSY_BIT) & 1u)
      sc_core::wait(sc_core::sc_time(10, sc_core::SC_NS));
    res.tlm_fetch_error = I.host.access(false, eng::ERR_CODE, 0) & 0xFFu;
  }
  while (I.tlm.jobs().size() == jobs0) {
    if (I.tlm.idle()) break;  // refused at SUBMIT (or by the fetch)
    sc_core::wait(I.tlm.job_done_event());
  }
  I.host.access(true, eng::CTRL, 0);
  const std::uint64_t hdr_bytes = 16 * tiles;
  std::uint64_t hdr_cmp = 0, pay_bytes = 0;
  const bool tlm_ran = I.tlm.jobs().size() > jobs0;
  if (tlm_ran) {
    const hw::EngineJob& j = I.tlm.jobs().back();
    res.tlm_status = static_cast<std::uint32_t>(j.status);
    res.tlm_cycles = j.cycles;
    res.tlm_out_bytes = j.payload_bytes;
    res.tlm_headers_written = j.headers_written;
    if (res.fetched) {
      const double period_ps = 1.0e6 / I.cfg.clock_mhz;
      res.tlm_fetch_to_start_cycles =
          static_cast<std::uint64_t>(std::llround((j.started - t_fetch).to_seconds() * 1e12 / period_ps));
    }
    pay_bytes = j.payload_bytes;
    hdr_cmp = 16 * j.headers_written;
    const double period_ps = 1.0e6 / I.cfg.clock_mhz;
    res.tlm_record_cycles =
        static_cast<std::uint64_t>(std::llround((j.finished - j.started).to_seconds() * 1e12 / period_ps)) - j.cycles;
    if (rec_at != 0) {
      res.recorded = true;
      res.tlm_completion_error = I.host.access(false, eng::ERR_CODE, 0);
    }
  }
  // RTL: same descriptor, lines served from the same memory contents (source and count table).
  if (I.fault == TestFault::kEnginePayload)  // test hook: the RTL's first payload byte with bit 0 flipped
    I.rtl.set_write_tap([out = d.out_base](std::uint64_t line, std::uint8_t* data, const std::uint64_t strb[2]) {
      const unsigned i = out & 127u;
      if (line == (out & ~std::uint64_t(127)) && ((strb[i >> 6] >> (i & 63)) & 1u)) data[i] ^= 1u;
    });
  const auto t0 = std::chrono::steady_clock::now();
  const auto line_reader = [&](std::uint64_t a, std::uint8_t* dst) { I.mem.read_bytes(a, dst, 128); };
  I.rtl.set_completion(I.cfg.completion_ptr, I.cfg.fetch_engine_index);
  const EngineRtlResult r = res.fetched ? I.rtl.run_fetched({I.cfg.fetch_desc_ptr, I.cfg.fetch_engine_index}, line_reader)
                                        : I.rtl.run(d, line_reader);
  if (res.fetched) {
    res.rtl_fetch_error = r.submit_error;
    res.rtl_fetch_to_start_cycles = r.fetch_to_start_cycles;
  }
  res.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  res.rtl_finished = r.finished;
  res.rtl_status = r.status;
  res.rtl_out_bytes = r.out_bytes;
  res.rtl_cycles = r.job_cycles;
  if (I.fault == TestFault::kEngineCycles) res.rtl_cycles += r.job_cycles / 5 + 3;  // test hook: outside the tolerance
  res.rtl_cycles_simulated = r.rtl_cycles;
  res.rtl_completion_error = r.completion_error;
  res.rtl_record_cycles = r.record_cycles;
  res.tiles = tiles;
  res.rtl_tiles_compacted = r.tiles_compacted;
  res.rtl_max_reads_in_flight = r.max_reads_in_flight;
  res.rtl_compacted_tile_cycles = r.compacted_tile_cycles;
  const auto& wr = I.rtl.written();
  // a line whose writes fail (fault injection) holds data of neither model
  const auto write_fails = [&](std::uint64_t a) { return I.cfg.fail_line && I.cfg.fail_line(a & ~std::uint64_t(127), true); };
  // The headers the RTL wrote: the longest prefix of header slots it wrote in full (or whose line failed).
  while (res.rtl_headers_written < tiles) {
    const std::uint64_t a = d.header_base + 16 * res.rtl_headers_written;
    bool all = true;
    for (unsigned i = 0; i < 16 && all; ++i) all = wr.at(a + i) >= 0 || write_fails(a + i);
    if (!all) break;
    ++res.rtl_headers_written;
  }
  wr.for_each_written([&](std::uint64_t a) {
    const bool in_headers = a >= d.header_base && a - d.header_base < hdr_bytes;
    const bool in_payload = a >= d.out_base && a - d.out_base < d.out_capacity_bytes;
    const bool in_record = rec_at != 0 && a >= rec_at && a - rec_at < eng::kComplRecordBytes;
    res.stray_write_bytes += !in_headers && !in_payload && !in_record;
    // inside the areas but beyond what the TLM engine wrote (a job that stopped earlier in the TLM model)
    if (tlm_ran) res.byte_mismatches += (in_headers && a - d.header_base >= hdr_cmp) || (in_payload && a - d.out_base >= pay_bytes);
  });
  if (tlm_ran) {  // every status: a job that stopped must have written the same tiles before it in both
    std::vector<std::uint8_t> ref;
    auto cmp = [&](std::uint64_t base, std::uint64_t n) {
      ref.assign(n, 0);
      I.mem.read_bytes(base, ref.data(), n);
      for (std::uint64_t i = 0; i < n; ++i) {
        if (write_fails(base + i)) continue;
        res.byte_mismatches += wr.at(base + i) != int(ref[i]);
        ++res.bytes_compared;
      }
    };
    // the common prefix: a model that stopped later is caught by the header counts and LAST_OUT_BYTES
    cmp(d.header_base, 16 * std::min(res.tlm_headers_written, res.rtl_headers_written));
    cmp(d.out_base, std::min<std::uint64_t>(pay_bytes, res.rtl_out_bytes));
    if (res.recorded && !write_fails(rec_at)) {
      // the completion record: TAG, STATUS and OUT_BYTES alike in both; CYCLES each model's own LAST_CYCLES (the
      // lockstep reports the cycles side by side rather than requiring them equal)
      cmp(rec_at, 4 * eng::C_CYCLES);
      cmp(rec_at + 4 * (eng::C_CYCLES + 1), eng::kComplRecordBytes - 4 * (eng::C_CYCLES + 1));  // reserved words
      std::uint8_t tlm_rec[eng::kComplRecordBytes];
      I.mem.read_bytes(rec_at, tlm_rec, sizeof tlm_rec);
      std::uint32_t rtl_cyc = 0;
      for (unsigned i = 0; i < 4; ++i) {
        const int b = wr.at(rec_at + 4 * eng::C_CYCLES + i);
        res.byte_mismatches += b < 0;
        rtl_cyc |= std::uint32_t(b < 0 ? 0 : b) << (8 * i);
      }
      res.byte_mismatches += (rtl_cyc != r.job_cycles) + (hw::mmio_load_u32(tlm_rec + 4 * eng::C_CYCLES) != res.tlm_cycles);
      res.bytes_compared += 4;
    }
  }
  return res;
}

const WrittenLines& EngineLockstep::rtl_written() const { return impl_->rtl.written(); }
void EngineLockstep::set_fetch_engine_index(std::uint32_t index) { impl_->cfg.fetch_engine_index = index; }

}  // namespace spartan::rtl
