// Test hook shared by the lockstep scoreboards (monitor_lockstep.cpp, engine_lockstep.cpp): the negative
// controls of the RTL-vs-TLM checks (CTests rtl.rtlcheck.fault_count_fails, rtl.rtlcheck.cycles_outside_
// tolerance_fail, rtl.run.engine_fault_*). With the environment variable SPARTAN_RTL_TEST_FAULT set, one
// lockstep makes its RTL side wrong on purpose, so that every check built on it must fail:
//   count           the monitor RTL's first count word read off by one
//   flush-cycles    the monitor RTL's flush 100 cycles slower
//   monitor-counter the monitor RTL's flush completion counter (COMPL_PTR) read one too high
//   engine-payload  the engine RTL's first payload byte written with bit 0 flipped
//   engine-cycles   the engine RTL's job cycles 20 % + 3 cycles more (outside the 5 % / 2-cycle tolerance)
// Not part of the public API.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <stdexcept>
#include <string>

namespace spartan::rtl::detail {

enum class TestFault { kNone, kCount, kFlushCycles, kEnginePayload, kEngineCycles, kMonitorCounter };

/// SPARTAN_RTL_TEST_FAULT parsed: unset or empty -> kNone; an unknown value throws std::invalid_argument.
inline TestFault test_fault_from_env() {
  const char* f = std::getenv("SPARTAN_RTL_TEST_FAULT");
  if (!f || !*f) return TestFault::kNone;
  static const struct { const char* name; TestFault fault; } kFaults[] = {
      {"count", TestFault::kCount},
      {"flush-cycles", TestFault::kFlushCycles},
      {"engine-payload", TestFault::kEnginePayload},
      {"engine-cycles", TestFault::kEngineCycles},
      {"monitor-counter", TestFault::kMonitorCounter}};
  for (const auto& k : kFaults)
    if (std::strcmp(f, k.name) == 0) return k.fault;
  throw std::invalid_argument(std::string("SPARTAN_RTL_TEST_FAULT: unknown fault '") + f +
                              "' (expected count, flush-cycles, monitor-counter, engine-payload or engine-cycles)");
}

/// The fault for one lockstep (`unit` "monitor" or "engine"): the environment's if it is one of `mine` (with a
/// warning on stderr that the lockstep is wrong on purpose), else kNone.
inline TestFault test_fault_for(const char* unit, std::initializer_list<TestFault> mine) {
  const TestFault f = test_fault_from_env();
  for (const TestFault m : mine)
    if (f == m) {
      std::fprintf(stderr, "warning: SPARTAN_RTL_TEST_FAULT=%s: the %s lockstep is wrong on purpose (a test hook)\n",
                   std::getenv("SPARTAN_RTL_TEST_FAULT"), unit);
      return f;
    }
  return TestFault::kNone;
}

}  // namespace spartan::rtl::detail
