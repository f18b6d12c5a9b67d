// kl_emu_rt.cc — the runtime of the Kernel Labs CPU emulator.
//
// A launch (kl_emu_launch, called by the Go backend from a stream's goroutine) hands its grid to
// W worker threads, W being the emulated device's number of SMs. Each worker takes the next block
// that has not started, runs it to the end, and takes another, so W blocks are resident at a
// time, as on a GPU with one block per SM. The threads of a block are fibers (Boost.Context's
// fcontext: a few nanoseconds a switch) on their worker's OS thread; a fiber runs until it
// reaches a barrier, a warp collective or a scheduling point (kl_emu_poll), then the worker runs
// the next ready fiber. Because all fibers of a block share an OS thread, `__shared__`, which is
// thread_local, is per block.
//
// Errors are reported, not suffered:
//   - barrier divergence: a thread returns while others wait at __syncthreads (or reaches it
//     after some have returned); a lane returns while its warp waits for it in a collective;
//   - deadlock: no fiber of a block can run, but not all have finished;
//   - the time limit: the launching thread waits with a deadline, then cancels the grid: workers
//     stop taking blocks, and a signal to each worker abandons the fiber it runs (kernel code holds
//     no locks of ours: in_rt says when a fiber is inside the runtime, where it is not abandoned);
//   - faults (SIGSEGV, SIGBUS, SIGFPE, SIGILL) in kernel code abandon the block the same way and
//     become a launch error; faults anywhere else go to the previous handler (Go's).
// An abandoned fiber's stack is simply reused: kernels own no resources that need unwinding.
#define KL_EMU_RUNTIME 1
#include "kl_emu.h"

#include <boost/context/detail/fcontext.hpp>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdarg>
#include <cstring>
#include <memory>
#include <mutex>
#include <numeric>
#include <string>
#include <vector>

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

namespace bctx = boost::context::detail;

__thread kl_emu_thread *kl_emu_cur = nullptr;

namespace {

constexpr size_t kPage = 4096;
constexpr int kMaxWorkers = 1024;
constexpr size_t kOutputLimit = 4u << 20; // printf bytes kept per launch

enum : intptr_t { MARK_SUSPEND = 1, MARK_DONE = 2, MARK_ABORT = 3, MARK_FAULT = 4 };
enum FState : uint8_t { F_READY, F_WAIT_BAR, F_WAIT_WARP, F_DONE };
enum WClass : uint8_t { C_SHFL, C_VOTE, C_SYNC, C_RED, C_MATCH, C_EXEC, C_ACTIVE };

const char *const kOpNames[KL_EMU_W_COUNT] = {
    "__shfl_sync",       "__shfl_up_sync",    "__shfl_down_sync",  "__shfl_xor_sync",   "__ballot_sync",
    "__any_sync",        "__all_sync",        "__uni_sync",        "__syncwarp",        "__reduce_add_sync",
    "__reduce_min_sync", "__reduce_max_sync", "__reduce_min_sync", "__reduce_max_sync", "__reduce_and_sync",
    "__reduce_or_sync",  "__reduce_xor_sync", "__match_any_sync",  "__match_all_sync",  "a warp-wide operation",
    "__activemask",
};

WClass class_of(int op) {
    switch (op) {
    case KL_EMU_W_SHFL_IDX:
    case KL_EMU_W_SHFL_UP:
    case KL_EMU_W_SHFL_DOWN:
    case KL_EMU_W_SHFL_XOR: return C_SHFL;
    case KL_EMU_W_BALLOT:
    case KL_EMU_W_ANY:
    case KL_EMU_W_ALL:
    case KL_EMU_W_UNI: return C_VOTE;
    case KL_EMU_W_SYNC: return C_SYNC;
    case KL_EMU_W_MATCH_ANY:
    case KL_EMU_W_MATCH_ALL: return C_MATCH;
    case KL_EMU_W_EXEC: return C_EXEC;
    case KL_EMU_W_ACTIVE: return C_ACTIVE;
    default: return C_RED;
    }
}

std::string strf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
std::string strf(const char *fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < (int)sizeof buf) return std::string(buf, n > 0 ? n : 0);
    std::string s((size_t)n, '\0');
    va_start(ap, fmt);
    vsnprintf(&s[0], (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

// Lane masks are 64-bit inside the runtime: a warp has 32 lanes, or 64 in a module built with
// KL_EMU_WARP_SIZE=64 (--emu-warp 64, AMD's wave64); each kernel entry says which.
typedef uint64_t lanemask;
inline lanemask lane_bit(unsigned l) { return (lanemask)1 << l; }

std::string lanes_str(lanemask m) {
    std::string s;
    for (int l = 0; l < 64; l++) {
        if (!(m & lane_bit(l))) continue;
        int e = l;
        while (e + 1 < 64 && (m & lane_bit(e + 1))) e++;
        if (!s.empty()) s += ",";
        s += e > l ? strf("%d-%d", l, e) : strf("%d", l);
        l = e;
    }
    return s;
}

struct Worker;
struct Grid;

struct Fiber {
    kl_emu_thread info; // first: kl_emu_cur points here
    Worker *w;
    bctx::fcontext_t ctx;
    FState state;
    uint8_t wait_op;
    int inst;
    lanemask wait_mask;
};
static_assert(std::is_standard_layout<Fiber>::value, "Fiber must be standard layout");

struct Coll { // one warp collective in progress
    bool complete;
    uint8_t cls, op;
    lanemask mask, arrived;
    int readers;
    kl_emu_warp_fn fn;
    uintptr_t site; // __activemask: the call site
    uint64_t vals[64];
};

struct WarpState {
    lanemask exist;  // lanes present in the block
    lanemask exited; // lanes that returned
    uint64_t used;   // Coll slots in use
    int active_pending; // open __activemask convergence points
    Coll coll[64];   // at most one open collective per lane
};

// The module's shared memory: its zero-initialised thread-local storage (.tbss), where every
// __shared__ array of the kernel file lives, one copy per worker thread. It is filled with 0xFF
// (NaN in every float format) at the start of each block, as a GPU's shared memory holds
// whatever the last block left: a kernel that reads shared memory it did not write sees NaN.
struct SharedImage {
    size_t modid = 0;       // TLS module id (0: the module has no thread-local storage)
    size_t off = 0, len = 0; // .tbss within the module's TLS block
};

// An adversarial schedule (LABRUN_EMU_SCHEDULE=adversarial:SEED): blocks start in a shuffled
// order, some after a delay; the threads of a block resume in a shuffled order; threads pause at
// fences and atomics now and then. Code that is right only because of the plain order fails.
struct Schedule {
    bool adversarial = false;
    uint64_t seed = 0;
};

struct Grid {
    uint64_t seq = 0;
    const kl_emu_entry *entry = nullptr;
    SharedImage shared;
    Schedule sched;
    uint64_t perm_a = 1, perm_c = 0; // block b runs as block (perm_a·b + perm_c) mod nblocks
    std::vector<std::vector<unsigned char>> argbuf;
    std::vector<void *> argv;
    dim3 gdim, bdim;
    uint64_t nblocks = 0;
    uint32_t nthreads = 0;
    uint32_t warp = 32; // lanes of a warp: the kernel entry's KL_EMU_WARP_SIZE
    std::atomic<uint64_t> next{0};
    std::atomic<bool> cancel{false};
    std::vector<Worker *> workers;

    std::mutex mu;
    std::condition_variable cv;
    int running = 0;
    int err = 0;
    std::string msg;
    uint64_t fault_addr = 0;
    int fault_write = -1;

    std::mutex out_mu;
    std::string out;
    bool out_truncated = false;
};

struct Worker {
    pthread_t th{};
    std::atomic<pid_t> tid{0};
    int slot = -1;
    unsigned int grid_index = 0; // this worker's place in its grid's workers: kl_smid()
    // pool state (pool mutex)
    bool busy = false;
    bool lost = false;
    // job hand-over
    std::mutex mu;
    std::condition_variable cv;
    std::shared_ptr<Grid> job;

    // ---- touched by the worker thread (and its signal handler) only ----
    Grid *g = nullptr;
    volatile sig_atomic_t in_rt = 1;  // inside runtime code: never abandoned there
    volatile sig_atomic_t in_fmt = 0; // formatting printf: a fault there is the kernel's
    Fiber *volatile cur = nullptr;
    bctx::fcontext_t sched_ctx = nullptr;
    std::atomic<uint64_t> running_seq{0};
    std::atomic<int64_t> cur_block{-1};
    uint64_t block_runs = 0; // blocks this worker has started (kl_emu_block_run)
    unsigned poll_spins = 0;

    kl_emu_block binfo{};
    uint32_t n = 0;
    std::vector<Fiber> fibers;
    char *stacks = nullptr;
    size_t stack_size = 0, stack_stride = 0;
    uint32_t stacks_prepared = 0;

    uint32_t done = 0, exited = 0;
    uint32_t bar_count = 0, bar_acc = 0, bar_res = 0;
    std::vector<int> bar_waiters;
    std::vector<int> rq;
    uint32_t rq_head = 0, rq_len = 0;
    std::vector<WarpState> warps;
    uint64_t rng = 0; // adversarial schedule: this worker's random stream

    int block_err = 0;
    std::string block_msg;
    volatile sig_atomic_t fault_sig = 0;
    volatile sig_atomic_t fault_gp = 0; // SIGSEGV without an address (x86's general-protection fault)
    void *volatile fault_addr = nullptr;
    volatile int fault_write = -1;
    std::vector<char> altstack;
};

// ---- worker registry for the signal handlers (async-signal-safe lookups) ----
std::atomic<Worker *> g_slots[kMaxWorkers];
std::atomic<pid_t> g_slot_tids[kMaxWorkers];

Worker *find_worker(pid_t tid) {
    for (int i = 0; i < kMaxWorkers; i++) {
        pid_t t = g_slot_tids[i].load(std::memory_order_acquire);
        if (t == tid) return g_slots[i].load(std::memory_order_acquire);
        if (t == 0 && g_slots[i].load(std::memory_order_acquire) == nullptr) break;
    }
    return nullptr;
}

int g_cancel_sig = 0;
struct sigaction g_old_actions[65];
bool g_fault_handlers = false;

pid_t gettid_() { return (pid_t)syscall(SYS_gettid); }

// ---- ready queue ----
inline void rq_push(Worker *w, int i) {
    w->rq[(w->rq_head + w->rq_len) % w->n] = i;
    w->rq_len++;
}
inline uint64_t next_rand(Worker *w) {
    uint64_t x = w->rng; // xorshift64*
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    w->rng = x;
    return x * 0x2545F4914F6CDD1DULL;
}
inline int rq_pop(Worker *w) {
    if (w->g && w->g->sched.adversarial && w->rq_len > 1) {
        // Take a random ready thread instead of the oldest.
        uint32_t k = (uint32_t)(next_rand(w) % w->rq_len);
        uint32_t a = w->rq_head, b = (w->rq_head + k) % w->n;
        std::swap(w->rq[a], w->rq[b]);
    }
    int i = w->rq[w->rq_head];
    w->rq_head = (w->rq_head + 1) % w->n;
    w->rq_len--;
    return i;
}

inline Fiber *cur_fiber() { return reinterpret_cast<Fiber *>(kl_emu_cur); }

std::string tid_str(const Fiber *f) {
    return strf("(%u,%u,%u)", f->info.tid.x, f->info.tid.y, f->info.tid.z);
}

// ---- fiber switching ----
void fiber_entry(bctx::transfer_t t);

inline void suspend(Worker *w) {
    bctx::transfer_t t = bctx::jump_fcontext(w->sched_ctx, reinterpret_cast<void *>(MARK_SUSPEND));
    w->sched_ctx = t.fctx;
}

[[noreturn]] void abort_self(Worker *w) {
    w->in_rt = 1;
    bctx::jump_fcontext(w->sched_ctx, reinterpret_cast<void *>(MARK_ABORT));
    __builtin_unreachable();
}

[[noreturn]] void fail_self(Worker *w, int code, const std::string &msg) {
    w->in_rt = 1;
    if (!w->block_err) {
        w->block_err = code;
        w->block_msg = msg;
    }
    abort_self(w);
}

struct RtScope {
    Worker *w;
    explicit RtScope(Worker *w_) : w(w_) {
        w->in_rt = 1;
        std::atomic_signal_fence(std::memory_order_seq_cst);
    }
    ~RtScope() {
        std::atomic_signal_fence(std::memory_order_seq_cst);
        w->in_rt = 0;
    }
};

// ---- errors at grid level ----
void signal_workers(Grid *g, Worker *except) {
    union sigval v;
    v.sival_ptr = reinterpret_cast<void *>(static_cast<uintptr_t>(g->seq));
    for (Worker *o : g->workers) {
        if (o == except) continue;
        if (o->running_seq.load() == g->seq) pthread_sigqueue(o->th, g_cancel_sig, v);
    }
}

void grid_fail(Grid *g, Worker *self, int code, const std::string &msg, uint64_t fault_addr = 0, int fault_write = -1) {
    {
        std::lock_guard<std::mutex> lk(g->mu);
        if (!g->err) {
            g->err = code;
            g->msg = msg;
            g->fault_addr = fault_addr;
            g->fault_write = fault_write;
        }
    }
    g->cancel.store(true);
    signal_workers(g, self);
}

// ---- barrier and collectives ----
// A mask as the kernel wrote it: 8 hex digits for 32-lane warps, 16 for 64.
std::string mask_str(const Worker *w, lanemask m) {
    if (w->g->warp == 32) return strf("0x%08x", (unsigned)m);
    return strf("0x%016llx", (unsigned long long)m);
}

void describe_waits(Worker *w, std::string &out) {
    // Group consecutive threads that wait at the same thing.
    auto desc = [&](const Fiber &f) -> std::string {
        switch (f.state) {
        case F_WAIT_BAR: return "wait at __syncthreads";
        case F_WAIT_WARP:
            if (f.wait_op == KL_EMU_W_EXEC) return strf("wait at a warp-wide operation (mask %s)", mask_str(w, f.wait_mask).c_str());
            return strf("wait at %s (mask %s)", kOpNames[f.wait_op], mask_str(w, f.wait_mask).c_str());
        case F_DONE: return "have returned";
        default: return "are ready";
        }
    };
    uint32_t i = 0;
    int groups = 0;
    while (i < w->n) {
        std::string d = desc(w->fibers[i]);
        uint32_t j = i;
        while (j + 1 < w->n && desc(w->fibers[j + 1]) == d) j++;
        if (groups == 8) {
            out += "; ...";
            break;
        }
        out += groups ? "; " : "";
        out += j > i ? strf("threads %u-%u %s", i, j, d.c_str()) : strf("thread %u %s", i, d.c_str());
        groups++;
        i = j + 1;
    }
}

// __activemask is a convergence point: the lanes that reach the same call site wait until no
// other lane of their warp can run (each has arrived, returned, or waits elsewhere), and the mask
// is the set that arrived. active_check runs whenever a lane of the warp stops running.
void active_check(Worker *w, unsigned warp, Fiber *self) {
    WarpState &ws = w->warps[warp];
    if (ws.active_pending == 0) return;
    const int base = (int)(warp * w->g->warp);
    for (lanemask m = ws.exist & ~ws.exited; m; m &= m - 1)
        if (w->fibers[base + __builtin_ctzll(m)].state == F_READY) return;
    for (uint64_t u = ws.used; u; u &= u - 1) {
        Coll &c = ws.coll[__builtin_ctzll(u)];
        if (c.complete || c.cls != C_ACTIVE) continue;
        c.complete = true;
        c.readers = __builtin_popcountll(c.arrived);
        ws.active_pending--;
        for (lanemask m = c.arrived; m; m &= m - 1) {
            int l = __builtin_ctzll(m);
            Fiber &o = w->fibers[base + l];
            if (&o == self) {
                o.state = F_READY; // the caller goes on without switching
            } else if (o.state == F_WAIT_WARP) {
                o.state = F_READY;
                rq_push(w, base + l);
            }
        }
    }
}

uint32_t bar_arrive(Worker *w, Fiber *f, int pred) {
    if (w->exited) {
        uint32_t first = 0;
        while (first < w->n && w->fibers[first].state != F_DONE) first++;
        fail_self(w, KL_EMU_ERR_DIVERGENCE,
                  strf("barrier divergence: thread %s reached __syncthreads after %u thread(s) of its block had "
                       "returned (the first: thread %s). Every thread of a block must reach every __syncthreads: "
                       "instead of returning early, guard the work with an if and keep the barriers outside it",
                       tid_str(f).c_str(), w->exited, tid_str(&w->fibers[first]).c_str()));
    }
    w->bar_count++;
    if (pred) w->bar_acc++;
    if (w->bar_count == w->n) {
        w->bar_res = w->bar_acc;
        w->bar_count = 0;
        w->bar_acc = 0;
        for (int i : w->bar_waiters) {
            w->fibers[i].state = F_READY;
            rq_push(w, i);
        }
        w->bar_waiters.clear();
    } else {
        f->state = F_WAIT_BAR;
        w->bar_waiters.push_back((int)f->info.linear);
        active_check(w, f->info.warp, f);
        suspend(w);
    }
    return w->bar_res;
}

uint64_t coll_result(const Coll &c, int op, unsigned lane, uint64_t val, int arg, int width, unsigned warp) {
    const unsigned wd = (unsigned)width;
    const unsigned base = lane & ~(wd - 1u);
    unsigned src = lane;
    switch (op) {
    case KL_EMU_W_SHFL_IDX: src = base + ((unsigned)arg & (wd - 1u)); break;
    case KL_EMU_W_SHFL_UP: src = ((lane & (wd - 1u)) >= (unsigned)arg) ? lane - (unsigned)arg : lane; break;
    case KL_EMU_W_SHFL_DOWN: src = ((lane & (wd - 1u)) + (unsigned)arg < wd) ? lane + (unsigned)arg : lane; break;
    case KL_EMU_W_SHFL_XOR:
        src = lane ^ (unsigned)arg;
        if (src > base + wd - 1u) src = lane;
        break;
    default: break;
    }
    lanemask ballot = 0;
    switch (op) {
    case KL_EMU_W_SHFL_IDX:
    case KL_EMU_W_SHFL_UP:
    case KL_EMU_W_SHFL_DOWN:
    case KL_EMU_W_SHFL_XOR:
        if (src >= warp || !(c.mask & lane_bit(src))) return val; // reading an inactive lane: undefined on a GPU
        return c.vals[src];
    case KL_EMU_W_BALLOT:
    case KL_EMU_W_ANY:
    case KL_EMU_W_ALL:
    case KL_EMU_W_UNI:
        for (unsigned l = 0; l < warp; l++)
            if ((c.mask & lane_bit(l)) && c.vals[l]) ballot |= lane_bit(l);
        if (op == KL_EMU_W_BALLOT) return ballot;
        if (op == KL_EMU_W_ANY) return ballot != 0;
        if (op == KL_EMU_W_ALL) return ballot == c.mask;
        return ballot == 0 || ballot == c.mask;
    case KL_EMU_W_SYNC:
    case KL_EMU_W_EXEC: return 0;
    case KL_EMU_W_MATCH_ANY:
    case KL_EMU_W_MATCH_ALL: {
        lanemask m = 0;
        for (unsigned l = 0; l < warp; l++)
            if ((c.mask & lane_bit(l)) && c.vals[l] == val) m |= lane_bit(l);
        if (op == KL_EMU_W_MATCH_ANY) return m;
        return m == c.mask ? c.mask : 0;
    }
    default: break;
    }
    // reductions over 32-bit values
    bool first = true;
    uint32_t ru = 0;
    int32_t rs = 0;
    for (unsigned l = 0; l < warp; l++) {
        if (!(c.mask & lane_bit(l))) continue;
        uint32_t u = (uint32_t)c.vals[l];
        int32_t s = (int32_t)u;
        if (first) {
            ru = u;
            rs = s;
            first = false;
            continue;
        }
        switch (op) {
        case KL_EMU_W_RED_ADD: ru += u; break;
        case KL_EMU_W_RED_MIN_U: ru = u < ru ? u : ru; break;
        case KL_EMU_W_RED_MAX_U: ru = u > ru ? u : ru; break;
        case KL_EMU_W_RED_MIN_S: rs = s < rs ? s : rs; break;
        case KL_EMU_W_RED_MAX_S: rs = s > rs ? s : rs; break;
        case KL_EMU_W_RED_AND: ru &= u; break;
        case KL_EMU_W_RED_OR: ru |= u; break;
        case KL_EMU_W_RED_XOR: ru ^= u; break;
        }
    }
    if (op == KL_EMU_W_RED_MIN_S || op == KL_EMU_W_RED_MAX_S) return (uint32_t)rs;
    return ru;
}

uint64_t warp_op(Worker *w, Fiber *f, int op, lanemask mask, uint64_t val, int arg, int width, kl_emu_warp_fn fn) {
    const unsigned lane = f->info.lane;
    const unsigned wsize = w->g->warp;
    const lanemask bit = lane_bit(lane);
    WarpState &ws = w->warps[f->info.warp];
    const char *name = kOpNames[op];
    if (!(mask & bit))
        fail_self(w, KL_EMU_ERR_MISUSE,
                  strf("thread %s (lane %u of warp %u) called %s with mask %s, which does not include the lane "
                       "itself: the mask names the lanes that take part, the caller among them%s",
                       tid_str(f).c_str(), lane, f->info.warp, name, mask_str(w, mask).c_str(),
                       wsize > 32 && lane >= 32 ? strf(" (warps have %u lanes here: a 32-bit mask such as 0xffffffff "
                                                       "leaves out lanes 32-63; use KL_FULL_MASK and kl_lanemask_t)",
                                                       wsize).c_str()
                                                : ""));
    if (class_of(op) == C_SHFL && (width < 1 || width > (int)wsize || (width & (width - 1)) != 0))
        fail_self(w, KL_EMU_ERR_MISUSE,
                  strf("thread %s called %s with width %d: the width must be a power of two from 1 to %u",
                       tid_str(f).c_str(), name, width, wsize));
    const lanemask eff = mask & ws.exist;
    if (eff & ws.exited)
        fail_self(w, KL_EMU_ERR_DIVERGENCE,
                  strf("warp divergence: thread %s (lane %u of warp %u) called %s with mask %s, but lane(s) %s "
                       "of the mask have returned and can never take part",
                       tid_str(f).c_str(), lane, f->info.warp, name, mask_str(w, mask).c_str(),
                       lanes_str(eff & ws.exited).c_str()));
    const uint8_t cls = (uint8_t)class_of(op);
    int slot = -1;
    for (uint64_t u = ws.used; u; u &= u - 1) {
        int s = __builtin_ctzll(u);
        Coll &c = ws.coll[s];
        if (!c.complete && c.cls != C_ACTIVE && c.mask == eff && !(c.arrived & bit)) {
            if (c.cls != cls)
                fail_self(w, KL_EMU_ERR_MISUSE,
                          strf("warp divergence: lanes of warp %u called different warp operations with the same "
                               "mask %s at the same time (%s and %s)",
                               f->info.warp, mask_str(w, eff).c_str(), kOpNames[c.op], name));
            slot = s;
            break;
        }
    }
    if (slot < 0) {
        uint64_t freeb = ~ws.used;
        slot = __builtin_ctzll(freeb); // at most 64 lanes, so at most 64 open collectives
        ws.used |= (uint64_t)1 << slot;
        Coll &c = ws.coll[slot];
        c.complete = false;
        c.cls = cls;
        c.op = (uint8_t)op;
        c.mask = eff;
        c.arrived = 0;
        c.readers = 0;
        c.fn = fn;
    }
    Coll &c = ws.coll[slot];
    c.vals[lane] = val;
    c.arrived |= bit;
    if (c.arrived == eff) {
        c.complete = true;
        c.readers = __builtin_popcountll(eff);
        if (c.cls == C_EXEC && c.fn) {
            static_assert(sizeof(void *) == sizeof(uint64_t), "64-bit pointers");
            c.fn(reinterpret_cast<void *const *>(c.vals), eff);
        }
        const int base = (int)(f->info.warp * wsize);
        for (lanemask m = eff & ~bit; m; m &= m - 1) {
            int l = __builtin_ctzll(m);
            Fiber &o = w->fibers[base + l];
            o.state = F_READY;
            rq_push(w, base + l);
        }
    } else {
        f->state = F_WAIT_WARP;
        f->inst = slot;
        f->wait_op = (uint8_t)op;
        f->wait_mask = eff;
        active_check(w, f->info.warp, f);
        suspend(w);
    }
    uint64_t r = coll_result(c, op, lane, val, arg, width, wsize);
    if (--c.readers == 0) ws.used &= ~((uint64_t)1 << slot);
    return r;
}

// Called when a fiber's kernel function returns. Returns false on divergence (block_err set).
bool fiber_exit(Worker *w, Fiber *f) {
    f->state = F_DONE;
    w->done++;
    w->exited++;
    WarpState &ws = w->warps[f->info.warp];
    const lanemask bit = lane_bit(f->info.lane);
    ws.exited |= bit;
    if (w->bar_count > 0) {
        w->block_err = KL_EMU_ERR_DIVERGENCE;
        w->block_msg = strf("barrier divergence: thread %s returned while %u thread(s) of its block wait at "
                            "__syncthreads for it. Every thread of a block must reach every __syncthreads: instead "
                            "of returning early, guard the work with an if and keep the barriers outside it",
                            tid_str(f).c_str(), w->bar_count);
        return false;
    }
    active_check(w, f->info.warp, f);
    for (uint64_t u = ws.used; u; u &= u - 1) {
        const Coll &c = ws.coll[__builtin_ctzll(u)];
        if (!c.complete && c.cls != C_ACTIVE && (c.mask & bit) && !(c.arrived & bit)) {
            w->block_err = KL_EMU_ERR_DIVERGENCE;
            w->block_msg = strf("warp divergence: thread %s (lane %u of warp %u) returned while lane(s) %s wait for "
                                "it at %s (mask %s)",
                                tid_str(f).c_str(), f->info.lane, f->info.warp, lanes_str(c.arrived).c_str(),
                                kOpNames[c.op], mask_str(w, c.mask).c_str());
            return false;
        }
    }
    return true;
}

void fiber_entry(bctx::transfer_t t) {
    Fiber *f = static_cast<Fiber *>(t.data);
    Worker *w = f->w;
    w->sched_ctx = t.fctx;
    std::atomic_signal_fence(std::memory_order_seq_cst);
    w->in_rt = 0;
    w->g->entry->tramp(w->g->argv.data());
    w->in_rt = 1;
    std::atomic_signal_fence(std::memory_order_seq_cst);
    intptr_t mark = fiber_exit(w, f) ? MARK_DONE : MARK_ABORT;
    bctx::jump_fcontext(w->sched_ctx, reinterpret_cast<void *>(mark));
    __builtin_unreachable();
}

// ---- stacks ----
size_t stack_bytes() {
    static size_t s = [] {
        size_t kib = 128;
        if (const char *e = getenv("LABRUN_EMU_STACK_KIB")) {
            long v = atol(e);
            if (v >= 16 && v <= 16384) kib = (size_t)v;
        }
        return kib * 1024;
    }();
    return s;
}

bool prepare_stacks(Worker *w, uint32_t n) {
    if (!w->stacks) {
        w->stack_size = stack_bytes();
        w->stack_stride = w->stack_size + kPage;
        size_t total = w->stack_stride * KL_EMU_MAX_THREADS_PER_BLOCK;
        void *p = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED) return false;
        w->stacks = static_cast<char *>(p);
        w->fibers.resize(KL_EMU_MAX_THREADS_PER_BLOCK);
        w->rq.resize(KL_EMU_MAX_THREADS_PER_BLOCK);
        w->bar_waiters.reserve(KL_EMU_MAX_THREADS_PER_BLOCK);
        w->warps.resize(KL_EMU_MAX_THREADS_PER_BLOCK / 32); // enough for the narrowest warps
    }
    while (w->stacks_prepared < n) {
        // The lowest page of each fiber's stack is a guard: an overflow faults instead of
        // silently running into the next fiber's stack.
        mprotect(w->stacks + (size_t)w->stacks_prepared * w->stack_stride, kPage, PROT_NONE);
        w->stacks_prepared++;
    }
    return true;
}

inline void *stack_top(Worker *w, uint32_t i) {
    return w->stacks + (size_t)i * w->stack_stride + w->stack_stride;
}

// ---- running a block ----
void resume(Worker *w, Fiber *f) {
    w->cur = f;
    kl_emu_cur = &f->info;
    bctx::transfer_t t = bctx::jump_fcontext(f->ctx, f);
    w->cur = nullptr;
    const intptr_t mark = reinterpret_cast<intptr_t>(t.data);
    if (mark == MARK_SUSPEND) {
        f->ctx = t.fctx;
    } else if (mark == MARK_FAULT) {
        const uintptr_t a = reinterpret_cast<uintptr_t>(w->fault_addr);
        const uintptr_t fb = reinterpret_cast<uintptr_t>(w->stacks) + (uintptr_t)f->info.linear * w->stack_stride;
        const char *what = "a fault";
        int code = KL_EMU_ERR_FAULT;
        switch (w->fault_sig) {
        case SIGSEGV: what = "an illegal memory access (SIGSEGV)"; break;
        case SIGBUS: what = "an illegal memory access (SIGBUS)"; break;
        case SIGFPE:
            what = "an arithmetic trap (SIGFPE: an integer division by zero?)";
            code = KL_EMU_ERR_ARITH;
            break;
        case SIGILL:
            what = "an illegal instruction (SIGILL: __builtin_trap or unreachable code reached?)";
            code = KL_EMU_ERR_TRAP;
            break;
        }
        if ((w->fault_sig == SIGSEGV || w->fault_sig == SIGBUS) && a >= fb && a < fb + kPage) {
            w->block_err = KL_EMU_ERR_STACK;
            w->block_msg = strf("thread %s overflowed its stack (%zu KiB per thread on the emulator): large local "
                                "arrays or deep recursion; make them smaller, or raise LABRUN_EMU_STACK_KIB",
                                tid_str(f).c_str(), w->stack_size / 1024);
        } else if (w->fault_gp) {
            // The CPU names no address for a general-protection fault: an aligned 16-byte SSE
            // access off a 16-byte boundary (where a GPU reports a misaligned address), or an
            // address outside the address space.
            w->block_err = KL_EMU_ERR_MISALIGNED;
            w->block_msg = strf("thread %s made a general-protection fault (SIGSEGV, no address): most likely a "
                                "16-byte vector load or store at an address that is not a multiple of 16, which a "
                                "GPU reports as a misaligned address; else a wild pointer",
                                tid_str(f).c_str());
        } else {
            w->block_err = code;
            if (code == KL_EMU_ERR_FAULT)
                w->block_msg = strf("thread %s made %s: %s address 0x%llx", tid_str(f).c_str(), what,
                                    w->fault_write == 1 ? "write to" : (w->fault_write == 0 ? "read from" : "access to"),
                                    (unsigned long long)a);
            else
                w->block_msg = strf("thread %s hit %s", tid_str(f).c_str(), what);
        }
    }
    // MARK_DONE: finished; MARK_ABORT: block_err is set, or the grid was cancelled.
}

struct kl_tls_index {
    unsigned long ti_module, ti_offset;
};
extern "C" void *__tls_get_addr(kl_tls_index *);

void poison_shared(const SharedImage &s) {
    if (s.modid == 0 || s.len == 0) return;
    kl_tls_index ti{s.modid, 0};
    char *base = static_cast<char *>(__tls_get_addr(&ti)); // allocates this thread's block if needed
    if (base) memset(base + s.off, 0xFF, s.len);
}

void run_block(Worker *w, Grid *g, uint64_t b) {
    const dim3 gd = g->gdim, bd = g->bdim;
    poison_shared(g->shared);
    // Each block's random stream depends on the seed, the launch and the block alone, not on the
    // worker that runs it: the same grade makes the same choices inside every block.
    w->rng = (g->sched.seed ^ (g->seq * 0x9E3779B97F4A7C15ULL) ^ ((b + 1) * 0xBF58476D1CE4E5B9ULL)) | 1;
    if (g->sched.adversarial && next_rand(w) % 3 == 0) {
        usleep((useconds_t)(100 + next_rand(w) % 2000)); // this block starts late
    }
    w->binfo.idx = uint3{(unsigned)(b % gd.x), (unsigned)((b / gd.x) % gd.y), (unsigned)(b / ((uint64_t)gd.x * gd.y))};
    w->binfo.dim = bd;
    w->binfo.grid = gd;
    const uint32_t n = g->nthreads;
    w->n = n;
    w->done = w->exited = 0;
    w->bar_count = w->bar_acc = w->bar_res = 0;
    w->bar_waiters.clear();
    w->rq_head = w->rq_len = 0;
    w->block_err = 0;
    w->block_msg.clear();
    const uint32_t W = g->warp;
    const uint32_t nwarps = (n + W - 1) / W;
    for (uint32_t i = 0; i < nwarps; i++) {
        WarpState &ws = w->warps[i];
        uint32_t lanes = n - i * W >= W ? W : n - i * W;
        ws.exist = lanes == 64 ? ~(lanemask)0 : lane_bit(lanes) - 1;
        ws.exited = 0;
        ws.used = 0;
        ws.active_pending = 0;
    }
    for (uint32_t i = 0; i < n; i++) {
        Fiber &f = w->fibers[i];
        f.info.tid = uint3{i % bd.x, (i / bd.x) % bd.y, i / (bd.x * bd.y)};
        f.info.blk = &w->binfo;
        f.info.lane = i % W;
        f.info.warp = i / W;
        f.info.linear = i;
        f.info.ticks = 0;
        f.w = w;
        f.state = F_READY;
        f.inst = -1;
        f.ctx = bctx::make_fcontext(stack_top(w, i), w->stack_size, fiber_entry);
        rq_push(w, (int)i); // rq_pop takes them in a random order under an adversarial schedule
    }
    w->in_rt = 1;
    while (!w->block_err && w->done < n) {
        if (g->cancel.load(std::memory_order_relaxed)) break;
        if (w->rq_len == 0) {
            std::string d;
            describe_waits(w, d);
            w->block_err = KL_EMU_ERR_DEADLOCK;
            w->block_msg = "deadlock: every thread of the block waits and none can go on: " + d;
            break;
        }
        resume(w, &w->fibers[rq_pop(w)]);
    }
    kl_emu_cur = nullptr;
    if (w->block_err) {
        const uint3 bi = w->binfo.idx;
        grid_fail(g, w, w->block_err, strf("block (%u,%u,%u): ", bi.x, bi.y, bi.z) + w->block_msg,
                  w->block_err == KL_EMU_ERR_FAULT ? reinterpret_cast<uintptr_t>(w->fault_addr) : 0,
                  w->block_err == KL_EMU_ERR_FAULT ? w->fault_write : -1);
    }
}

void run_grid(Worker *w, Grid *g) {
    w->g = g;
    w->running_seq.store(g->seq);
    if (!prepare_stacks(w, g->nthreads)) {
        grid_fail(g, w, KL_EMU_ERR_INTERNAL, "cannot map the fibers' stacks (out of memory?)");
    } else {
        while (!g->cancel.load()) {
            uint64_t b = g->next.fetch_add(1);
            if (b >= g->nblocks) break;
            if (g->sched.adversarial) b = (g->perm_a * b + g->perm_c) % g->nblocks;
            w->cur_block.store((int64_t)b);
            w->block_runs++;
            run_block(w, g, b);
        }
    }
    w->cur_block.store(-1);
    w->running_seq.store(0);
    w->g = nullptr;
}

// ---- the worker pool ----
std::mutex g_pool_mu;
std::vector<Worker *> g_pool;

void release_worker(Worker *w) {
    std::lock_guard<std::mutex> lk(g_pool_mu);
    w->busy = false;
}

void *worker_main(void *arg) {
    Worker *w = static_cast<Worker *>(arg);
    w->tid.store(gettid_());
    g_slot_tids[w->slot].store(w->tid.load(), std::memory_order_release);
    // An alternate signal stack, so that a fiber's stack overflow can still be reported.
    w->altstack.resize(64 * 1024);
    stack_t ss{};
    ss.ss_sp = w->altstack.data();
    ss.ss_size = w->altstack.size();
    sigaltstack(&ss, nullptr);
    // Asynchronous signals go to the Go threads; the worker takes only its own.
    sigset_t set;
    sigfillset(&set);
    sigdelset(&set, SIGSEGV);
    sigdelset(&set, SIGBUS);
    sigdelset(&set, SIGFPE);
    sigdelset(&set, SIGILL);
    sigdelset(&set, g_cancel_sig);
    pthread_sigmask(SIG_SETMASK, &set, nullptr);
    for (;;) {
        std::shared_ptr<Grid> g;
        {
            std::unique_lock<std::mutex> lk(w->mu);
            w->cv.wait(lk, [&] { return w->job != nullptr; });
            g = w->job;
        }
        run_grid(w, g.get());
        {
            std::lock_guard<std::mutex> lk(w->mu);
            w->job = nullptr;
        }
        release_worker(w);
        {
            std::lock_guard<std::mutex> lk(g->mu);
            g->running--;
        }
        g->cv.notify_all();
    }
    return nullptr;
}

Worker *new_worker_locked() {
    int slot = -1;
    for (int i = 0; i < kMaxWorkers; i++)
        if (g_slots[i].load() == nullptr) {
            slot = i;
            break;
        }
    if (slot < 0) return nullptr;
    Worker *w = new Worker();
    w->slot = slot;
    g_slots[slot].store(w, std::memory_order_release);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 1 << 20);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&w->th, &attr, worker_main, w);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        g_slots[slot].store(nullptr);
        delete w;
        return nullptr;
    }
    g_pool.push_back(w);
    return w;
}

bool acquire_workers(int k, std::vector<Worker *> &out) {
    std::lock_guard<std::mutex> lk(g_pool_mu);
    for (Worker *w : g_pool) {
        if ((int)out.size() == k) break;
        if (!w->busy && !w->lost) {
            w->busy = true;
            out.push_back(w);
        }
    }
    while ((int)out.size() < k) {
        Worker *w = new_worker_locked();
        if (!w) {
            for (Worker *o : out) o->busy = false;
            out.clear();
            return false;
        }
        w->busy = true;
        out.push_back(w);
    }
    return true;
}

// ---- signals ----
void chain(int sig, siginfo_t *si, void *uc) {
    struct sigaction *o = &g_old_actions[sig];
    if (o->sa_flags & SA_SIGINFO) {
        if (o->sa_sigaction) o->sa_sigaction(sig, si, uc);
        return;
    }
    if (o->sa_handler == SIG_IGN) return;
    if (o->sa_handler == SIG_DFL) {
        // Restore the default action; a synchronous fault re-raises when the instruction reruns.
        signal(sig, SIG_DFL);
        if (sig == g_cancel_sig) return;
        if (si == nullptr || si->si_code <= 0) raise(sig);
        return;
    }
    o->sa_handler(sig);
}

void on_signal(int sig, siginfo_t *si, void *uc) {
    const int saved = errno;
    Worker *w = find_worker(gettid_());
    if (sig == g_cancel_sig) {
        if (w == nullptr) {
            chain(sig, si, uc);
        } else if (w->cur && !w->in_rt && w->g && si->si_code == SI_QUEUE &&
                   reinterpret_cast<uintptr_t>(si->si_value.sival_ptr) == (uintptr_t)w->g->seq &&
                   w->g->cancel.load()) {
            w->in_rt = 1;
            errno = saved;
            bctx::jump_fcontext(w->sched_ctx, reinterpret_cast<void *>(MARK_ABORT));
        }
        errno = saved;
        return;
    }
    if (w && w->cur && (!w->in_rt || w->in_fmt)) {
        w->fault_sig = sig;
        w->fault_addr = si ? si->si_addr : nullptr;
        w->fault_gp = sig == SIGSEGV && si && si->si_code == SI_KERNEL;
        w->fault_write = -1;
#if defined(__x86_64__)
        if (sig == SIGSEGV && uc) {
            const ucontext_t *u = static_cast<const ucontext_t *>(uc);
            w->fault_write = (u->uc_mcontext.gregs[REG_ERR] & 2) ? 1 : 0;
        }
#endif
        w->in_rt = 1;
        w->in_fmt = 0;
        errno = saved;
        bctx::jump_fcontext(w->sched_ctx, reinterpret_cast<void *>(MARK_FAULT));
    }
    errno = saved;
    chain(sig, si, uc);
}

void install(int sig) {
    struct sigaction sa{};
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, &g_old_actions[sig]);
}

void init_once() {
    static std::once_flag once;
    std::call_once(once, [] {
        g_cancel_sig = SIGRTMIN + 6;
        install(g_cancel_sig);
        const char *e = getenv("LABRUN_EMU_NO_FAULT_HANDLER");
        if (!(e && *e && *e != '0')) {
            install(SIGSEGV);
            install(SIGBUS);
            install(SIGFPE);
            install(SIGILL);
            g_fault_handlers = true;
        }
    });
}

std::atomic<uint64_t> g_seq{0};

void set_msg(kl_emu_launch_params *p, const std::string &m) {
    size_t n = m.size() < KL_EMU_MESSAGE_LEN - 1 ? m.size() : KL_EMU_MESSAGE_LEN - 1;
    memcpy(p->message, m.data(), n);
    p->message[n] = 0;
}

} // namespace

// ---------------------------------------------------------------------------------------------
// Entry points called by kernel code.
extern "C" {

void kl_emu_syncthreads(void) {
    Fiber *f = cur_fiber();
    Worker *w = f->w;
    RtScope rt(w);
    bar_arrive(w, f, 0);
}

int kl_emu_syncthreads_op(int op, int pred) {
    Fiber *f = cur_fiber();
    Worker *w = f->w;
    RtScope rt(w);
    uint32_t c = bar_arrive(w, f, pred != 0);
    switch (op) {
    case KL_EMU_B_COUNT: return (int)c;
    case KL_EMU_B_AND: return c == w->n;
    case KL_EMU_B_OR: return c > 0;
    default: return 0;
    }
}

uint64_t kl_emu_warp(int op, uint64_t mask, uint64_t val, int arg, int width) {
    Fiber *f = cur_fiber();
    Worker *w = f->w;
    RtScope rt(w);
    if (op < 0 || op >= KL_EMU_W_EXEC) fail_self(w, KL_EMU_ERR_INTERNAL, "bad warp operation");
    return warp_op(w, f, op, mask, val, arg, width, nullptr);
}

void kl_emu_warp_exec(uint64_t mask, void *mine, kl_emu_warp_fn fn, const char *what) {
    (void)what;
    Fiber *f = cur_fiber();
    Worker *w = f->w;
    RtScope rt(w);
    warp_op(w, f, KL_EMU_W_EXEC, mask, reinterpret_cast<uint64_t>(mine), 0, (int)w->g->warp, fn);
}

uint64_t kl_emu_activemask(void) {
    const uintptr_t site = reinterpret_cast<uintptr_t>(__builtin_return_address(0));
    Fiber *f = cur_fiber();
    Worker *w = f->w;
    RtScope rt(w);
    const unsigned lane = f->info.lane;
    const lanemask bit = lane_bit(lane);
    WarpState &ws = w->warps[f->info.warp];
    int slot = -1;
    for (uint64_t u = ws.used; u; u &= u - 1) {
        int s = __builtin_ctzll(u);
        const Coll &c = ws.coll[s];
        if (!c.complete && c.cls == C_ACTIVE && c.site == site && !(c.arrived & bit)) {
            slot = s;
            break;
        }
    }
    if (slot < 0) {
        slot = __builtin_ctzll(~ws.used);
        ws.used |= (uint64_t)1 << slot;
        Coll &c = ws.coll[slot];
        c.complete = false;
        c.cls = C_ACTIVE;
        c.op = KL_EMU_W_ACTIVE;
        c.mask = ws.exist & ~ws.exited;
        c.arrived = 0;
        c.readers = 0;
        c.fn = nullptr;
        c.site = site;
        ws.active_pending++;
    }
    Coll &c = ws.coll[slot];
    c.arrived |= bit;
    f->state = F_WAIT_WARP;
    f->inst = slot;
    f->wait_op = KL_EMU_W_ACTIVE;
    f->wait_mask = c.mask;
    active_check(w, f->info.warp, f);
    if (f->state != F_READY) suspend(w); // else completed by this lane's own arrival
    const lanemask r = c.arrived;
    if (--c.readers == 0) ws.used &= ~((uint64_t)1 << slot);
    return r;
}

void kl_emu_poll(void) {
    Fiber *f = cur_fiber();
    if (!f) return;
    Worker *w = f->w;
    RtScope rt(w);
    if (w->g->cancel.load(std::memory_order_relaxed)) abort_self(w);
    if (w->g->sched.adversarial && next_rand(w) % 16 == 0) usleep((useconds_t)(10 + next_rand(w) % 200));
    if (w->rq_len > 0) {
        f->state = F_READY;
        rq_push(w, (int)f->info.linear);
        suspend(w);
    } else if ((++w->poll_spins & 63u) == 0) {
        sched_yield(); // alone on this worker: let other workers (other blocks, devices) run
    }
}

int kl_emu_printf(const char *fmt, ...) {
    Fiber *f = cur_fiber();
    va_list ap;
    if (!f) {
        va_start(ap, fmt);
        int n = vprintf(fmt, ap);
        va_end(ap);
        return n;
    }
    Worker *w = f->w;
    RtScope rt(w);
    char buf[1024];
    w->in_fmt = 1;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    std::string big;
    if (n >= (int)sizeof buf) {
        big.resize((size_t)n + 1);
        va_start(ap, fmt);
        vsnprintf(&big[0], (size_t)n + 1, fmt, ap);
        va_end(ap);
        big.resize((size_t)n);
    }
    w->in_fmt = 0;
    if (n <= 0) return n;
    Grid *g = w->g;
    std::lock_guard<std::mutex> lk(g->out_mu);
    if (g->out.size() + (size_t)n > kOutputLimit) {
        g->out_truncated = true;
    } else {
        g->out.append(big.empty() ? buf : big.data(), (size_t)n);
    }
    return n;
}

void kl_emu_fail(int code, const char *msg) {
    Fiber *f = cur_fiber();
    if (!f) {
        fprintf(stderr, "kl_emu: %s\n", msg);
        abort();
    }
    Worker *w = f->w;
    w->in_rt = 1;
    fail_self(w, code, strf("thread %s: %s", tid_str(f).c_str(), msg));
}

void kl_emu_assert_fail(const char *expr, const char *file, int line, const char *func) {
    char buf[1024];
    snprintf(buf, sizeof buf, "assertion failed at %s:%d in %s: %s", file, line, func, expr);
    kl_emu_fail(KL_EMU_ERR_TRAP, buf);
}

long long kl_emu_clock64(void) {
#if defined(__x86_64__)
    return (long long)__builtin_ia32_rdtsc();
#else
    return (long long)std::chrono::steady_clock::now().time_since_epoch().count();
#endif
}

// kl_smid() on the emulator: the index of the worker ("SM") that runs the calling block, 0 to the
// launch's number of workers minus 1.
uint64_t kl_emu_block_run(void) {
    Fiber *f = cur_fiber();
    return f ? f->w->block_runs : 0;
}

unsigned int kl_emu_smid(void) {
    Fiber *f = cur_fiber();
    return f ? f->w->grid_index : 0u;
}

// kl_globaltimer_ns() on the emulator: the host's steady clock in nanoseconds, shared by all
// workers (like %globaltimer, a clock of the whole device, not of one SM).
unsigned long long kl_emu_globaltimer_ns(void) {
    return (unsigned long long)std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// ---------------------------------------------------------------------------------------------
// Entry points called by the Go backend.

KL_EMU_EXPORT int kl_emu_abi_version(void) { return KL_EMU_ABI_VERSION; }

KL_EMU_EXPORT void kl_emu_free(void *p) { free(p); }

namespace {
// shared_image_of finds the .tbss of the module that defines e (its TLS segment past the
// initialised part), once per module.
SharedImage shared_image_of(const kl_emu_entry *e) {
    static std::mutex mu;
    static std::vector<std::pair<const void *, SharedImage>> known;
    Dl_info di{};
    if (!dladdr(reinterpret_cast<const void *>(e->tramp), &di) || !di.dli_fbase) return {};
    std::lock_guard<std::mutex> lk(mu);
    for (auto &k : known)
        if (k.first == di.dli_fbase) return k.second;
    SharedImage img;
    struct Find {
        const void *base;
        size_t filesz = 0, memsz = 0;
        bool found = false;
    } f{di.dli_fbase};
    dl_iterate_phdr(
        [](struct dl_phdr_info *info, size_t, void *data) -> int {
            Find *f = static_cast<Find *>(data);
            if (reinterpret_cast<const void *>(info->dlpi_addr) != f->base) return 0;
            for (int i = 0; i < info->dlpi_phnum; i++) {
                if (info->dlpi_phdr[i].p_type == PT_TLS) {
                    f->filesz = info->dlpi_phdr[i].p_filesz;
                    f->memsz = info->dlpi_phdr[i].p_memsz;
                    f->found = true;
                }
            }
            return 1;
        },
        &f);
    if (f.found && f.memsz > f.filesz) {
        void *h = dlopen(di.dli_fname, RTLD_NOW | RTLD_NOLOAD);
        size_t modid = 0;
        if (h && dlinfo(h, RTLD_DI_TLS_MODID, &modid) == 0 && modid) {
            img.modid = modid;
            img.off = f.filesz;
            img.len = f.memsz - f.filesz;
        }
        if (h) dlclose(h);
    }
    known.push_back({di.dli_fbase, img});
    return img;
}

Schedule schedule_setting() {
    static Schedule s = [] {
        Schedule r;
        const char *e = getenv("LABRUN_EMU_SCHEDULE");
        if (e && strncmp(e, "adversarial", 11) == 0) {
            r.adversarial = true;
            r.seed = 0x5DEECE66DULL;
            if (e[11] == ':') r.seed ^= strtoull(e + 12, nullptr, 10) * 0x9E3779B97F4A7C15ULL;
        }
        return r;
    }();
    return s;
}

} // namespace

KL_EMU_EXPORT int kl_emu_launch(kl_emu_launch_params *p) {
    init_once();
    p->output = nullptr;
    p->output_len = 0;
    p->output_truncated = 0;
    p->fault_addr = 0;
    p->fault_write = -1;
    p->sticky = 0;
    p->message[0] = 0;
    const kl_emu_entry *e = p->entry;
    if (!e || !e->tramp) {
        set_msg(p, "no kernel entry");
        return KL_EMU_ERR_INVALID;
    }
    const uint64_t nthreads = (uint64_t)p->block[0] * p->block[1] * p->block[2];
    const uint64_t nblocks = (uint64_t)p->grid[0] * p->grid[1] * p->grid[2];
    if (nblocks == 0 || nthreads == 0 || nthreads > KL_EMU_MAX_THREADS_PER_BLOCK || p->block[0] > KL_EMU_MAX_BLOCK_X ||
        p->block[1] > KL_EMU_MAX_BLOCK_Y || p->block[2] > KL_EMU_MAX_BLOCK_Z || p->grid[1] > KL_EMU_MAX_GRID_Y ||
        p->grid[2] > KL_EMU_MAX_GRID_Z || p->shared_bytes > KL_EMU_MAX_DYN_SHARED) {
        set_msg(p, strf("invalid launch: grid (%u,%u,%u) block (%u,%u,%u) shared %u", p->grid[0], p->grid[1], p->grid[2],
                        p->block[0], p->block[1], p->block[2], p->shared_bytes));
        return KL_EMU_ERR_INVALID;
    }
    if (e->warp_size != 32 && e->warp_size != 64) {
        set_msg(p, strf("kernel %s was built for %d-lane warps: the emulator runs 32 or 64", e->name, e->warp_size));
        return KL_EMU_ERR_INVALID;
    }
    auto g = std::make_shared<Grid>();
    g->seq = ++g_seq;
    g->warp = (uint32_t)e->warp_size;
    g->entry = e;
    g->shared = shared_image_of(e);
    g->sched = schedule_setting();
    if (g->sched.adversarial && nblocks > 1) {
        uint64_t r = g->sched.seed ^ (g->seq * 0xD1B54A32D192ED03ULL);
        uint64_t a = 1 + r % (nblocks - 1);
        while (std::gcd(a, nblocks) != 1) a = a % (nblocks - 1) + 1;
        g->perm_a = a;
        g->perm_c = (r >> 17) % nblocks;
    }
    g->gdim = dim3(p->grid[0], p->grid[1], p->grid[2]);
    g->bdim = dim3(p->block[0], p->block[1], p->block[2]);
    g->nblocks = nblocks;
    g->nthreads = (uint32_t)nthreads;
    g->argbuf.resize((size_t)e->nparams);
    g->argv.resize((size_t)e->nparams + 1);
    for (int i = 0; i < e->nparams; i++) {
        const unsigned char *src = static_cast<const unsigned char *>(p->args[i]);
        g->argbuf[i].assign(src, src + e->sizes[i]);
        g->argv[i] = g->argbuf[i].data();
    }
    uint64_t nw = p->workers ? p->workers : 1;
    if (nw > nblocks) nw = nblocks;
    if (!acquire_workers((int)nw, g->workers)) {
        set_msg(p, "cannot start the emulator's worker threads");
        return KL_EMU_ERR_INTERNAL;
    }
    g->running = (int)g->workers.size();
    for (size_t i = 0; i < g->workers.size(); i++) {
        Worker *w = g->workers[i];
        {
            std::lock_guard<std::mutex> lk(w->mu);
            w->grid_index = (unsigned int)i; // read by the worker after it takes the job
            w->job = g;
        }
        w->cv.notify_one();
    }

    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    const auto deadline = start + std::chrono::milliseconds(p->timeout_ms);
    auto cancelled_at = clock::time_point{}, last_signal = clock::time_point{};
    bool lost = false;
    std::string timeout_note;
    {
        std::unique_lock<std::mutex> lk(g->mu);
        while (g->running > 0) {
            const auto now = clock::now();
            if (p->timeout_ms && now >= deadline && !g->err) {
                // Past the limit: say what was running, then cancel.
                std::string running;
                int nrun = 0;
                for (Worker *w : g->workers) {
                    int64_t b = w->cur_block.load();
                    if (b < 0 || w->running_seq.load() != g->seq) continue;
                    if (nrun < 8) {
                        uint64_t ub = (uint64_t)b;
                        running += strf("%s(%llu,%llu,%llu)", nrun ? ", " : "", (unsigned long long)(ub % g->gdim.x),
                                        (unsigned long long)((ub / g->gdim.x) % g->gdim.y),
                                        (unsigned long long)(ub / ((uint64_t)g->gdim.x * g->gdim.y)));
                    }
                    nrun++;
                }
                uint64_t started = g->next.load();
                if (started > nblocks) started = nblocks;
                g->err = KL_EMU_ERR_TIMEOUT;
                g->msg = strf("the kernel did not finish within %.1f s (the emulator's time limit). At the limit, "
                              "%d block(s) were running [%s] and %llu of %llu had not started. A block that "
                              "spin-waits for a block that is not resident never finishes: this emulated device "
                              "runs %u block(s) at a time (one per SM). A thread that spin-waits for another thread "
                              "of its own block must call __threadfence(), __nanosleep() or an atomic in its loop",
                              p->timeout_ms / 1000.0, nrun, running.c_str(),
                              (unsigned long long)(nblocks - started), (unsigned long long)nblocks,
                              (unsigned)p->workers);
                g->cancel.store(true);
            }
            if (g->cancel.load()) {
                if (cancelled_at == clock::time_point{}) cancelled_at = now;
                if (now - last_signal >= std::chrono::milliseconds(100)) {
                    lk.unlock();
                    signal_workers(g.get(), nullptr);
                    lk.lock();
                    last_signal = now;
                }
                if (now - cancelled_at > std::chrono::seconds(3)) {
                    lost = true;
                    break;
                }
                g->cv.wait_for(lk, std::chrono::milliseconds(20));
            } else if (p->timeout_ms) {
                auto wait = deadline - now;
                if (wait > std::chrono::milliseconds(500)) wait = std::chrono::milliseconds(500);
                g->cv.wait_for(lk, wait);
            } else {
                g->cv.wait_for(lk, std::chrono::milliseconds(500));
            }
        }
    }
    if (lost) {
        // Some worker could not be stopped (its fiber never left the runtime): keep it out of the
        // pool and lower its priority; the process should be replaced.
        std::lock_guard<std::mutex> lk(g_pool_mu);
        for (Worker *w : g->workers)
            if (w->running_seq.load() == g->seq) {
                w->lost = true;
                setpriority(PRIO_PROCESS, (id_t)w->tid.load(), 19);
            }
        p->sticky = 1;
    }
    std::lock_guard<std::mutex> lk(g->mu);
    {
        std::lock_guard<std::mutex> lo(g->out_mu);
        if (!g->out.empty()) {
            p->output = static_cast<char *>(malloc(g->out.size()));
            if (p->output) {
                memcpy(p->output, g->out.data(), g->out.size());
                p->output_len = g->out.size();
            }
        }
        p->output_truncated = g->out_truncated;
    }
    if (g->err) {
        set_msg(p, g->msg + (lost ? " (a worker thread could not be stopped)" : ""));
        p->fault_addr = g->fault_addr;
        p->fault_write = g->fault_write;
        if (g->err == KL_EMU_ERR_TIMEOUT) p->sticky = 1;
    }
    return g->err;
}

} // extern "C"
