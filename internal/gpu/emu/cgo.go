//go:build cgo

package emu

/*
#cgo CFLAGS: -I${SRCDIR}/../../../emu -O2
#cgo LDFLAGS: -ldl
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "kl_emu_abi.h"

static void *kl_go_dlopen(const char *path, char **err) {
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *e = dlerror();
		*err = strdup(e ? e : "dlopen failed");
	}
	return h;
}
static void *kl_go_dlsym(void *h, const char *name) { return dlsym(h, name); }
static int kl_go_call_int(void *fn) { return ((int (*)(void))fn)(); }
static int kl_go_launch(void *fn, kl_emu_launch_params *p) { return ((int (*)(kl_emu_launch_params *))fn)(p); }
static void kl_go_call_free(void *fn, void *p) { ((void (*)(void *))fn)(p); }
static const kl_emu_entry *kl_go_entry(const void *table, int i) { return ((const kl_emu_entry *)table) + i; }
static const char *kl_go_entry_type(const kl_emu_entry *e, int i) { return e->types ? e->types[i] : NULL; }
static size_t kl_go_entry_size(const kl_emu_entry *e, int i) { return e->sizes[i]; }

// Device memory. Each allocation is a memfd of its own, mapped at an address that labrun
// chooses, so that another process (the sandboxed launcher that runs a submission's kernels, or
// a rank) can map the same memory at the same address and pointers mean the same everywhere:
//   [PROT_NONE fence][inner: the memfd, RW = front slack | data | back slack][PROT_NONE fence]
// The data is 256-byte aligned as cudaMalloc's and placed as late in the inner mapping as that
// allows, so a read or a write past its end meets the fence within 255 bytes and faults. The
// slack on both sides holds 0xFF (NaN in every float format) and is checked after each launch: a
// kernel that reads a little past its input computes NaN, one that writes there is reported.
#define KL_GUARD 256
#define KL_FENCE (64 * 1024)
#define KL_SLACK_BYTE 0xFF
static size_t kl_page(void) {
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	return pg > KL_FENCE ? pg : KL_FENCE;
}
static size_t kl_inner(size_t bytes) {
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	return (KL_GUARD + bytes + pg - 1) / pg * pg;
}
// kl_data_off is where the data starts in the inner mapping.
static size_t kl_data_off(size_t bytes) { return (kl_inner(bytes) - bytes) / 256 * 256; }
static size_t kl_reserve(size_t bytes) { return kl_page() + kl_inner(bytes) + kl_page(); }

// kl_go_alloc maps a new allocation of bytes with its fences at base (kl_reserve(bytes) bytes,
// not mapped yet), held by the file *fd (a new memfd when *fd < 0). It returns the data's address,
// or 0.
static uintptr_t kl_go_alloc(uintptr_t base, size_t bytes, int *fd) {
	size_t pg = kl_page(), inner = kl_inner(bytes), total = kl_reserve(bytes);
	char *b = mmap((void *)base, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
	if (b == MAP_FAILED) return 0;
	if (b != (char *)base) { munmap(b, total); return 0; }
	int f = *fd >= 0 ? *fd : memfd_create("kl-emu-device-memory", MFD_CLOEXEC);
	if (f < 0) { munmap(b, total); return 0; }
	if (ftruncate(f, (off_t)inner) != 0 ||
	    mmap(b + pg, inner, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, f, 0) == MAP_FAILED) {
		if (*fd < 0) close(f);
		munmap(b, total);
		return 0;
	}
	size_t off = kl_data_off(bytes);
	memset(b + pg, KL_SLACK_BYTE, off);
	memset(b + pg + off + bytes, KL_SLACK_BYTE, inner - off - bytes);
	*fd = f;
	return (uintptr_t)(b + pg + off);
}

// kl_go_map maps an allocation another process made (its memfd) at the same address.
static int kl_go_map(uintptr_t base, size_t bytes, int fd) {
	size_t pg = kl_page(), inner = kl_inner(bytes), total = kl_reserve(bytes);
	char *b = mmap((void *)base, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
	if (b == MAP_FAILED) return errno;
	if (b != (char *)base) { munmap(b, total); return EEXIST; }
	if (mmap(b + pg, inner, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED) {
		int e = errno;
		munmap(b, total);
		return e;
	}
	return 0;
}

static void kl_go_unmap(uintptr_t base, size_t bytes) { munmap((void *)base, kl_reserve(bytes)); }

// kl_go_guard_check returns how many slack bytes changed; *lo and *hi get the offsets (from p)
// of the first and the last changed byte. With repair, the slack is filled again.
static long long kl_go_guard_check(uintptr_t p, size_t bytes, long long *lo, long long *hi, int repair) {
	size_t off = kl_data_off(bytes), inner = kl_inner(bytes);
	unsigned char *start = (unsigned char *)p - off;
	long long bad = 0;
	for (size_t i = 0; i < inner; i++) {
		if (i == off) {
			i += bytes - 1;
			continue;
		}
		if (start[i] != KL_SLACK_BYTE) {
			long long o = (long long)i - (long long)off;
			if (!bad) *lo = o;
			*hi = o;
			bad++;
			if (repair) start[i] = KL_SLACK_BYTE;
		}
	}
	return bad;
}

static size_t kl_go_guard_page(void) { return kl_page(); }
static size_t kl_go_inner(size_t bytes) { return kl_inner(bytes); }
static size_t kl_go_data_off(size_t bytes) { return kl_data_off(bytes); }
static size_t kl_go_reserve(size_t bytes) { return kl_reserve(bytes); }

static void kl_go_copy(uintptr_t dst, uintptr_t src, size_t n) { memmove((void *)dst, (const void *)src, n); }
static void kl_go_copy_in(uintptr_t dst, const void *src, size_t n) { memcpy((void *)dst, src, n); }
static void kl_go_copy_out(void *dst, uintptr_t src, size_t n) { memcpy(dst, (const void *)src, n); }
static void kl_go_set8(uintptr_t dst, unsigned char v, size_t n) { memset((void *)dst, v, n); }
static void kl_go_set32(uintptr_t dst, uint32_t v, size_t n) {
	uint32_t *d = (uint32_t *)dst;
	for (size_t i = 0; i < n; i++) d[i] = v;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

// The emulated device's limits (from kl_emu_abi.h).
const (
	maxThreadsPerBlock = C.KL_EMU_MAX_THREADS_PER_BLOCK
	maxBlockX          = C.KL_EMU_MAX_BLOCK_X
	maxBlockY          = C.KL_EMU_MAX_BLOCK_Y
	maxBlockZ          = C.KL_EMU_MAX_BLOCK_Z
	maxGridX           = C.KL_EMU_MAX_GRID_X
	maxGridY           = C.KL_EMU_MAX_GRID_Y
	maxGridZ           = C.KL_EMU_MAX_GRID_Z
	defaultDynShared   = C.KL_EMU_DEFAULT_DYN_SHARED
	maxDynShared       = C.KL_EMU_MAX_DYN_SHARED
	abiVersion         = C.KL_EMU_ABI_VERSION
)

// Launch status codes.
const (
	stOK         = C.KL_EMU_OK
	stInvalid    = C.KL_EMU_ERR_INVALID
	stDivergence = C.KL_EMU_ERR_DIVERGENCE
	stDeadlock   = C.KL_EMU_ERR_DEADLOCK
	stTimeout    = C.KL_EMU_ERR_TIMEOUT
	stFault      = C.KL_EMU_ERR_FAULT
	stArith      = C.KL_EMU_ERR_ARITH
	stTrap       = C.KL_EMU_ERR_TRAP
	stMisuse     = C.KL_EMU_ERR_MISUSE
	stStack      = C.KL_EMU_ERR_STACK
	stInternal   = C.KL_EMU_ERR_INTERNAL
	stMisaligned = C.KL_EMU_ERR_MISALIGNED
)

// cAllocIn maps a new allocation of bytes at base (see cReserve), its memory held by the file fd
// (a shared-memory file), or a new memfd when fd < 0; it returns the data's address and the memfd
// that holds it (0 and -1 when the host refused).
func cAllocIn(base uintptr, bytes int64, file int) (gpu.Ptr, int) {
	fd := C.int(file)
	p := C.kl_go_alloc(C.uintptr_t(base), C.size_t(bytes), &fd)
	if p == 0 {
		return 0, -1
	}
	return gpu.Ptr(p), int(fd)
}

// cMap maps another process's allocation (its memfd) at the same place; 0 or an errno.
func cMap(base uintptr, bytes int64, fd int) int {
	return int(C.kl_go_map(C.uintptr_t(base), C.size_t(bytes), C.int(fd)))
}

// cUnmap removes an allocation's mapping (data and fences) from this process.
func cUnmap(base uintptr, bytes int64) { C.kl_go_unmap(C.uintptr_t(base), C.size_t(bytes)) }

// cReserve is the address space an allocation of bytes takes, fences included.
func cReserve(bytes int64) int64 { return int64(C.kl_go_reserve(C.size_t(bytes))) }

// cGuardCheck reports the changed slack bytes of an allocation and repairs them.
func cGuardCheck(p gpu.Ptr, bytes int64) (bad, lo, hi int64) {
	var clo, chi C.longlong
	n := C.kl_go_guard_check(C.uintptr_t(p), C.size_t(bytes), &clo, &chi, 1)
	return int64(n), int64(clo), int64(chi)
}

func fenceSize() int64 { return int64(C.kl_go_guard_page()) }

// dataOffset is where an allocation's data starts in its readable mapping.
func dataOffset(bytes int64) int64 { return int64(C.kl_go_data_off(C.size_t(bytes))) }

// innerSize is the size of the readable part of an allocation's mapping (slack included).
func innerSize(bytes int64) int64 { return int64(C.kl_go_inner(C.size_t(bytes))) }

func cCopy(dst, src gpu.Ptr, n int64) { C.kl_go_copy(C.uintptr_t(dst), C.uintptr_t(src), C.size_t(n)) }
func cCopyIn(dst gpu.Ptr, src unsafe.Pointer, n int64) {
	C.kl_go_copy_in(C.uintptr_t(dst), src, C.size_t(n))
}
func cCopyOut(dst unsafe.Pointer, src gpu.Ptr, n int64) {
	C.kl_go_copy_out(dst, C.uintptr_t(src), C.size_t(n))
}
func cSet8(dst gpu.Ptr, v uint8, n int64) { C.kl_go_set8(C.uintptr_t(dst), C.uchar(v), C.size_t(n)) }
func cSet32(dst gpu.Ptr, v uint32, n int64) {
	C.kl_go_set32(C.uintptr_t(dst), C.uint32_t(v), C.size_t(n))
}

func cMalloc(n int64) unsafe.Pointer { return C.malloc(C.size_t(n)) }
func cFreeHost(p unsafe.Pointer)     { C.free(p) }

// lib is a loaded kernel module.
type lib struct {
	handle   unsafe.Pointer
	launchFn unsafe.Pointer
	freeFn   unsafe.Pointer
	entries  []entryInfo
}

type entryInfo struct {
	name       string
	index      int             // its place in the module's registry
	ptr        *C.kl_emu_entry // nil in a module loaded by a launcher
	sizes      []int
	types      []string // nil when the registry's types do not match the sizes
	maxThreads int
	warpSize   int // lanes of a warp the entry was compiled for (KL_EMU_WARP_SIZE)
}

func dlopenModule(path string) (*lib, error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var cerr *C.char
	h := C.kl_go_dlopen(cpath, &cerr)
	if h == nil {
		msg := C.GoString(cerr)
		C.free(unsafe.Pointer(cerr))
		return nil, errors.New(msg)
	}
	sym := func(name string) unsafe.Pointer {
		cn := C.CString(name)
		defer C.free(unsafe.Pointer(cn))
		return C.kl_go_dlsym(h, cn)
	}
	l := &lib{handle: h, launchFn: sym("kl_emu_launch"), freeFn: sym("kl_emu_free")}
	abiFn := sym("kl_emu_abi_version")
	modAbi := sym("kl_emu_module_abi")
	table := sym("kl_emu_entries")
	num := sym("kl_emu_num_entries")
	if l.launchFn == nil || l.freeFn == nil || abiFn == nil || modAbi == nil || table == nil || num == nil {
		return nil, fmt.Errorf("%s is not an emulator kernel module (no kl_emu registry or runtime): build it with the toolchain's c++ builder", path)
	}
	if v := int(C.kl_go_call_int(abiFn)); v != abiVersion {
		return nil, fmt.Errorf("%s links an emulator runtime of ABI %d, this labrun expects %d: rebuild it", path, v, abiVersion)
	}
	if v := int(*(*C.int)(modAbi)); v != abiVersion {
		return nil, fmt.Errorf("%s was built for emulator ABI %d, this labrun expects %d: rebuild it", path, v, abiVersion)
	}
	n := int(*(*C.int)(num))
	for i := 0; i < n; i++ {
		e := C.kl_go_entry(table, C.int(i))
		info := entryInfo{name: C.GoString(e.name), index: i, ptr: e, maxThreads: int(e.max_threads), warpSize: int(e.warp_size)}
		np := int(e.nparams)
		for j := 0; j < np; j++ {
			info.sizes = append(info.sizes, int(C.kl_go_entry_size(e, C.int(j))))
		}
		if int(e.ntypes) == np && e.types != nil {
			for j := 0; j < np; j++ {
				info.types = append(info.types, C.GoString(C.kl_go_entry_type(e, C.int(j))))
			}
		}
		l.entries = append(l.entries, info)
	}
	return l, nil
}

// launchResult is what one kl_emu_launch returned.
type launchResult struct {
	status     int
	message    string
	output     []byte
	truncated  bool
	faultAddr  uint64
	faultWrite int
	sticky     bool
}

// cLaunch runs a grid to its end (or its error) on the calling thread's behalf.
func cLaunch(l *lib, e *entryInfo, args [][]byte, grid, block gpu.Dim3, shared, workers int, timeoutMs int64) launchResult {
	// The argument bytes live in C memory for the call (the runtime copies them).
	total := 0
	for _, a := range args {
		total += len(a)
	}
	var mem unsafe.Pointer
	if total > 0 {
		mem = C.malloc(C.size_t(total))
		defer C.free(mem)
	}
	argvMem := C.malloc(C.size_t(len(args)+1) * C.size_t(unsafe.Sizeof(uintptr(0))))
	defer C.free(argvMem)
	argv := unsafe.Slice((*unsafe.Pointer)(argvMem), len(args)+1)
	off := 0
	for i, a := range args {
		p := unsafe.Add(mem, off)
		if len(a) > 0 {
			C.memcpy(p, unsafe.Pointer(&a[0]), C.size_t(len(a)))
		}
		argv[i] = p
		off += len(a)
	}
	var p C.kl_emu_launch_params
	p.entry = e.ptr
	p.args = &argv[0]
	p.grid = [3]C.uint32_t{C.uint32_t(grid.X), C.uint32_t(grid.Y), C.uint32_t(grid.Z)}
	p.block = [3]C.uint32_t{C.uint32_t(block.X), C.uint32_t(block.Y), C.uint32_t(block.Z)}
	p.shared_bytes = C.uint32_t(shared)
	p.workers = C.uint32_t(workers)
	p.timeout_ms = C.uint64_t(timeoutMs)
	rc := C.kl_go_launch(l.launchFn, &p)
	r := launchResult{
		status:     int(rc),
		message:    C.GoString(&p.message[0]),
		truncated:  p.output_truncated != 0,
		faultAddr:  uint64(p.fault_addr),
		faultWrite: int(p.fault_write),
		sticky:     p.sticky != 0,
	}
	if p.output != nil {
		r.output = C.GoBytes(unsafe.Pointer(p.output), C.int(p.output_len))
		C.kl_go_call_free(l.freeFn, unsafe.Pointer(p.output))
	}
	return r
}
