// Host emulation of a CUDA launch (spartan/common/simt.h).
//
// A block's threads are fibers on the calling thread (on x86-64 a switch of the stack pointer and the
// callee-saved registers, below; elsewhere POSIX ucontext, whose every switch is a system call): each runs
// until it reaches __syncthreads() or the end of the kernel, then the next one runs. When every thread has
// stopped, the block is either finished (all ended) or at one barrier (all waiting at the same call), or the
// threads disagree: a barrier in divergent code, reported. The threads run in index order or in reverse order,
// alternating from one barrier interval to the next and from one block to the next, so a read of another
// thread's shared-memory write without a barrier between them gives a wrong value in one order or the other.
// One OS thread and a fixed order: runs are deterministic.
#include "spartan/common/simt.h"

#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "spartan/common/error.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define SPARTAN_SIMT_ASAN 1
#endif

namespace spartan::simt {

thread_local Dim3 threadIdx, blockIdx, blockDim, gridDim;

namespace {

#if defined(SPARTAN_SIMT_ASAN)
constexpr std::size_t kFiberStackBytes = 1 << 20;  // ASan's redzones make frames larger
#else
constexpr std::size_t kFiberStackBytes = 256 << 10;
#endif

// The switch below "returns" into a new fiber, which a CET shadow stack (-fcf-protection=return) would
// refuse: such builds take ucontext.
#if defined(__x86_64__) && !(defined(__CET__) && (__CET__ & 2))
#define SPARTAN_SIMT_X86_64_SWITCH 1
#endif

#if defined(SPARTAN_SIMT_X86_64_SWITCH)
// spartan_simt_switch(save, load): pushes the System V callee-saved registers (rbp, rbx, r12-r15) and the
// MXCSR / x87 control words on the current stack, stores the stack pointer in *save, loads `load` as the
// stack pointer and pops the same from there. A new fiber's stack is laid out so that the first switch to
// it "returns" into spartan_simt_fiber_entry (make_fiber).
extern "C" void spartan_simt_switch(void** save, void* load);
extern "C" void spartan_simt_fiber_entry();
asm(R"(
  .text
  .p2align 4
  .globl spartan_simt_switch
  .type spartan_simt_switch, @function
spartan_simt_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size spartan_simt_switch, .-spartan_simt_switch
)");
#endif

struct Fiber {
#if defined(SPARTAN_SIMT_X86_64_SWITCH)
  void* sp = nullptr;
#else
  ucontext_t ctx{};
#endif
  char* stack = nullptr;  // kFiberStackBytes from the stack pool
  Dim3 idx;
  const char* site_file = nullptr;  // where it waits (SPARTAN_SYNCTHREADS' __FILE__ / __LINE__; null: unknown)
  int site_line = 0;
  bool done = false;
};

struct Launch {
  const std::function<void()>* kernel = nullptr;
  bool fibers = false;  // false: a launch without syncthreads()
  unsigned char* shared = nullptr;
  bool shared_taken = false;  // dynamic_shared() was called in the current block
  std::vector<const void*> statics_filled;  // SPARTAN_SHARED_ARRAY arrays filled in the current block
  std::vector<Fiber> threads;
  Fiber* current = nullptr;
#if defined(SPARTAN_SIMT_X86_64_SWITCH)
  void* scheduler_sp = nullptr;
#else
  ucontext_t scheduler{};
#endif
  std::exception_ptr error;
#if defined(SPARTAN_SIMT_ASAN)
  const void* scheduler_stack = nullptr;
  std::size_t scheduler_stack_bytes = 0;
#endif
};

thread_local Launch* t_launch = nullptr;

std::string block_name(const Dim3& b) {
  return "(" + std::to_string(b.x) + "," + std::to_string(b.y) + "," + std::to_string(b.z) + ")";
}

#if defined(SPARTAN_SIMT_X86_64_SWITCH)
void switch_to_fiber(Launch& L, Fiber& f) { spartan_simt_switch(&L.scheduler_sp, f.sp); }
void switch_to_scheduler(Launch& L, Fiber& f) { spartan_simt_switch(&f.sp, L.scheduler_sp); }
#else
void switch_to_fiber(Launch& L, Fiber& f) { swapcontext(&L.scheduler, &f.ctx); }
void switch_to_scheduler(Launch& L, Fiber& f) { swapcontext(&f.ctx, &L.scheduler); }
#endif

void fiber_main();

// Makes f start at fiber_main on its own stack when next switched to.
void make_fiber(Fiber& f) {
#if defined(SPARTAN_SIMT_ASAN)
  // The stack's last use (the previous block) left ASan's redzone poison in it.
  ASAN_UNPOISON_MEMORY_REGION(f.stack, kFiberStackBytes);
#endif
#if defined(SPARTAN_SIMT_X86_64_SWITCH)
  // From the 16-byte aligned top down: a zero return address for the entry (rsp = 8 mod 16 there, as after a
  // call), the entry's address for spartan_simt_switch's ret, six callee-saved registers (0), then the
  // caller's MXCSR and x87 control word (rounding and denormal modes as on the launching thread).
  auto top = (reinterpret_cast<std::uintptr_t>(f.stack) + kFiberStackBytes) & ~std::uintptr_t(15);
  auto* w = reinterpret_cast<std::uint64_t*>(top);
  *--w = 0;
  *--w = reinterpret_cast<std::uint64_t>(&spartan_simt_fiber_entry);
  for (int i = 0; i < 6; ++i) *--w = 0;
  std::uint32_t mxcsr = 0;
  std::uint16_t x87_cw = 0;
  asm volatile("stmxcsr %0" : "=m"(mxcsr));
  asm volatile("fnstcw %0" : "=m"(x87_cw));
  *--w = std::uint64_t(mxcsr) | (std::uint64_t(x87_cw) << 32);
  f.sp = w;
#else
  if (getcontext(&f.ctx) != 0) throw Error("simt: getcontext failed");
  f.ctx.uc_stack.ss_sp = f.stack;
  f.ctx.uc_stack.ss_size = kFiberStackBytes;
  f.ctx.uc_link = nullptr;  // fiber_main never returns
  makecontext(&f.ctx, fiber_main, 0);
#endif
}

// A block's dynamic shared memory between two inaccessible pages, its 16-byte-rounded end against the upper
// one (16-byte aligned, as CUDA's), so that an access past the rounding faults at once; the rounding and the
// slack below its start (under one page) hold 0xFF bytes that slack_intact() checks after each block, and
// below that the lower page faults.
class SharedMemory {
 public:
  explicit SharedMemory(std::size_t bytes) : bytes_(bytes) {
    page_ = std::size_t(sysconf(_SC_PAGESIZE));
    const std::size_t rounded = (bytes + 15) / 16 * 16;
    body_ = (rounded + page_ - 1) / page_ * page_ + (rounded == 0 ? page_ : 0);
    void* m = mmap(nullptr, body_ + 2 * page_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) throw Error("simt: could not map " + std::to_string(body_) + " bytes of shared memory");
    base_ = static_cast<unsigned char*>(m);
    if (mprotect(base_, page_, PROT_NONE) != 0 || mprotect(base_ + page_ + body_, page_, PROT_NONE) != 0) {
      munmap(base_, body_ + 2 * page_);
      throw Error("simt: could not protect the shared memory's guard pages");
    }
    data = base_ + page_ + body_ - rounded;
    std::memset(base_ + page_, kSlack, std::size_t(data - (base_ + page_)));
    std::memset(data + bytes, kSlack, rounded - bytes);  // the rounding after the end
  }
  ~SharedMemory() { munmap(base_, body_ + 2 * page_); }
  SharedMemory(const SharedMemory&) = delete;
  SharedMemory& operator=(const SharedMemory&) = delete;
  void poison() { std::memset(data, 0xFF, bytes_); }  // a float NaN in every word
  bool slack_intact() const { return all_slack(base_ + page_, data) && all_slack(data + bytes_, base_ + page_ + body_); }
  unsigned char* data = nullptr;

 private:
  static constexpr unsigned char kSlack = 0xFF;  // read as a float: NaN, as the poisoned memory
  static bool all_slack(const unsigned char* p, const unsigned char* end) {
    static const std::vector<unsigned char> slack(4096, kSlack);
    while (p < end) {
      const std::size_t n = std::min<std::size_t>(std::size_t(end - p), slack.size());
      if (std::memcmp(p, slack.data(), n) != 0) return false;
      p += n;
    }
    return true;
  }
  std::size_t bytes_, page_ = 0, body_ = 0;
  unsigned char* base_ = nullptr;
};

// Switches from the scheduler to fiber f and back (when f stops at a barrier or ends).
void resume(Launch& L, Fiber& f) {
  L.current = &f;
  threadIdx = f.idx;
#if defined(SPARTAN_SIMT_ASAN)
  void* fake = nullptr;
  __sanitizer_start_switch_fiber(&fake, f.stack, kFiberStackBytes);
  switch_to_fiber(L, f);
  __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#else
  switch_to_fiber(L, f);
#endif
  L.current = nullptr;
}

// From the running fiber back to the scheduler (`ending`: the fiber will not be resumed).
void yield_to_scheduler(Launch& L, Fiber& f, bool ending) {
#if defined(SPARTAN_SIMT_ASAN)
  void* fake = nullptr;
  __sanitizer_start_switch_fiber(ending ? nullptr : &fake, L.scheduler_stack, L.scheduler_stack_bytes);
  switch_to_scheduler(L, f);
  __sanitizer_finish_switch_fiber(fake, &L.scheduler_stack, &L.scheduler_stack_bytes);
#else
  (void)ending;
  switch_to_scheduler(L, f);
#endif
}

void fiber_main() {
  Launch& L = *t_launch;
  Fiber& f = *L.current;
#if defined(SPARTAN_SIMT_ASAN)
  __sanitizer_finish_switch_fiber(nullptr, &L.scheduler_stack, &L.scheduler_stack_bytes);
#endif
  try {
    (*L.kernel)();
  } catch (...) {
    if (!L.error) L.error = std::current_exception();
  }
  f.done = true;
  yield_to_scheduler(L, f, true);  // never resumed
}

}  // namespace
}  // namespace spartan::simt

#if defined(SPARTAN_SIMT_X86_64_SWITCH)
extern "C" void spartan_simt_fiber_entry() { spartan::simt::fiber_main(); }
#endif

namespace spartan::simt {
namespace {

// The t-th fiber stack: kFiberStackBytes above an inaccessible page (an overflow faults), kept for later
// launches (grow-only: launches are serialised, and at most 1024 stacks are ever needed; never unmapped).
char* fiber_stack(unsigned t) {
  static std::vector<char*> pool;
  static const std::size_t page = std::size_t(sysconf(_SC_PAGESIZE));
  while (pool.size() <= t) {
    void* m = mmap(nullptr, kFiberStackBytes + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) throw Error("simt: could not map a fiber stack");
    if (mprotect(m, page, PROT_NONE) != 0) {
      munmap(m, kFiberStackBytes + page);
      throw Error("simt: could not protect a fiber stack's guard page");
    }
    pool.push_back(static_cast<char*>(m) + page);
  }
  return pool[t];
}

// Whether two waiting fibers are at the same syncthreads() call (calls without a site compare equal only
// among themselves).
bool same_site(const Fiber& a, const Fiber& b) {
  if (a.site_line != b.site_line) return false;
  if (a.site_file == nullptr || b.site_file == nullptr) return a.site_file == b.site_file;
  return a.site_file == b.site_file || std::strcmp(a.site_file, b.site_file) == 0;
}

// "file:line" of the barrier a fiber waits at.
std::string site_name(const Fiber& f) {
  return std::string(f.site_file ? f.site_file : "?") + ":" + std::to_string(f.site_line);
}

// Runs one block of a launch with syncthreads() on fibers (`block_index`: its linear index, which with the
// barrier interval picks the threads' order); returns an error message or "".
std::string run_block(Launch& L, std::uint64_t block_index) {
  for (Fiber& f : L.threads) {
    f.site_file = nullptr;
    f.site_line = 0;
    f.done = false;
    make_fiber(f);
  }
  const std::size_t n = L.threads.size();
  for (std::uint64_t phase = 0;; ++phase) {
    for (std::size_t i = 0; i < n; ++i) {
      Fiber& f = L.threads[(phase + block_index) % 2 == 0 ? i : n - 1 - i];
      if (!f.done) resume(L, f);
    }
    if (L.error) return "";
    std::size_t ended = 0;
    for (const Fiber& f : L.threads) ended += f.done;
    if (ended == n) return "";
    if (ended != 0) {
      const Fiber* waiting = nullptr;
      for (const Fiber& f : L.threads)
        if (!f.done && waiting == nullptr) waiting = &f;
      return "simt: in block " + block_name(blockIdx) + " some threads ended while others wait at the __syncthreads() at " +
             site_name(*waiting) + " (a barrier in divergent code)";
    }
    // Each waits at its next barrier: all at the same call?
    const Fiber& f0 = L.threads[0];
    for (const Fiber& f : L.threads)
      if (!same_site(f, f0))
        return "simt: the threads of block " + block_name(blockIdx) + " wait at different __syncthreads() calls (" +
               site_name(f0) + " and " + site_name(f) + "; a barrier in divergent code)";
  }
}

}  // namespace

void syncthreads(const char* file, int line) {
  Launch* L = t_launch;
  if (L == nullptr || L->current == nullptr) {
    const std::string at = std::string(file ? file : "?") + ":" + std::to_string(line);
    if (L != nullptr && !L->fibers)
      throw std::logic_error("simt: syncthreads() at " + at + " in a kernel launched with uses_syncthreads = false");
    throw std::logic_error("simt: syncthreads() at " + at + " outside a kernel launch");
  }
  Fiber& f = *L->current;
  f.site_file = file;
  f.site_line = line;
  yield_to_scheduler(*L, f, false);
}

void static_shared(void* array, std::size_t bytes) {
  Launch* L = t_launch;
  if (L == nullptr) throw std::logic_error("simt: a SPARTAN_SHARED_ARRAY outside a kernel launch");
  for (const void* p : L->statics_filled)
    if (p == array) return;
  std::memset(array, 0xFF, bytes);
  L->statics_filled.push_back(array);
}

void* dynamic_shared() {
  if (t_launch == nullptr) throw std::logic_error("simt: dynamic_shared() outside a kernel launch");
  t_launch->shared_taken = true;
  return t_launch->shared;
}

void launch(Dim3 grid, Dim3 block, std::size_t dynamic_shared_bytes, bool uses_syncthreads,
            const std::function<void()>& kernel) {
  const std::uint64_t threads = std::uint64_t(block.x) * block.y * block.z;
  if (threads == 0 || threads > 1024)
    throw InputError("simt: a block of " + std::to_string(threads) + " threads (CUDA allows 1..1024)");
  if (block.z > 64) throw InputError("simt: blockDim.z " + std::to_string(block.z) + " (CUDA allows 1..64)");
  if (grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.x > 0x7FFFFFFFu || grid.y > 65535 || grid.z > 65535)
    throw InputError("simt: grid (" + std::to_string(grid.x) + "," + std::to_string(grid.y) + "," +
                     std::to_string(grid.z) + ") outside CUDA's limits (1..2^31-1, 1..65535, 1..65535)");
  if (t_launch != nullptr) throw std::logic_error("simt: launch() from inside a kernel");
  static std::mutex serial;  // SPARTAN_SHARED_ARRAY statics belong to one launch at a time
  std::lock_guard<std::mutex> one_launch(serial);
  SharedMemory shm(dynamic_shared_bytes);
  Launch L;
  L.kernel = &kernel;
  L.fibers = uses_syncthreads;
  L.shared = shm.data;
  auto thread_index = [&](unsigned t) { return Dim3{t % block.x, t / block.x % block.y, t / (block.x * block.y)}; };
  if (uses_syncthreads) {
    L.threads.resize(threads);
    for (unsigned t = 0; t < unsigned(threads); ++t) {
      L.threads[t].idx = thread_index(t);
      L.threads[t].stack = fiber_stack(t);
    }
  }
  t_launch = &L;
  blockDim = block;
  gridDim = grid;
  struct Leave {
    ~Leave() {
      t_launch = nullptr;
      threadIdx = blockIdx = blockDim = gridDim = Dim3{};
    }
  } leave;
  // Dynamic shared memory is poisoned before the first block, and checked and poisoned again after every
  // block; in a launch without any (dynamic_shared_bytes 0: only the slack, which no correct kernel touches)
  // only after the blocks that called dynamic_shared(): a page of slack checked per block had taken
  // test_train_simt from 85 to 105 s.
  shm.poison();
  // Blocks in index order in even-numbered launches, in reverse order in odd ones (a count over the process,
  // under `serial`): a kernel whose blocks depend on one another's writes gives different results.
  static std::uint64_t launches = 0;
  const bool blocks_reversed = launches++ % 2 == 1;
  const std::uint64_t plane = std::uint64_t(grid.x) * grid.y, blocks = plane * grid.z;
  for (std::uint64_t k = 0; k < blocks; ++k) {
    const std::uint64_t linear = blocks_reversed ? blocks - 1 - k : k;
    blockIdx = Dim3{unsigned(linear % grid.x), unsigned(linear % plane / grid.x), unsigned(linear / plane)};
    L.statics_filled.clear();
    if (uses_syncthreads) {
      const std::string divergent = run_block(L, linear);
      if (L.error) std::rethrow_exception(L.error);
      if (!divergent.empty()) throw Error(divergent, 1);
    } else {  // index order in even blocks, reverse order in odd ones
      const bool reverse = linear % 2 == 1;
      for (unsigned i = 0; i < unsigned(threads); ++i) {
        threadIdx = thread_index(reverse ? unsigned(threads) - 1 - i : i);
        kernel();
      }
    }
    if (dynamic_shared_bytes > 0 || L.shared_taken) {
      if (!shm.slack_intact())
        throw Error("simt: block " + block_name(blockIdx) + " wrote outside its dynamic shared memory", 1);
      shm.poison();
      L.shared_taken = false;
    }
  }
}

}  // namespace spartan::simt
