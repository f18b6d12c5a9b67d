//go:build cgo

package emu

/*
#cgo CFLAGS: -I${SRCDIR}/../../../emu -O2
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
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

// Device memory. Each allocation is a mapping of its own:
//   [PROT_NONE][front guard, KL_GUARD bytes | data | back guard, >= KL_GUARD bytes][PROT_NONE]
// The data is 256-byte aligned as cudaMalloc's; the guards hold a pattern that is checked after
// each launch, and a write up to KL_FENCE bytes further away hits PROT_NONE memory and faults.
#define KL_GUARD 256
#define KL_FENCE (64 * 1024)
static size_t kl_page(void) {
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	return pg > KL_FENCE ? pg : KL_FENCE;
}
static size_t kl_inner(size_t bytes) {
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	return (KL_GUARD + bytes + KL_GUARD + pg - 1) / pg * pg;
}
static unsigned char kl_pat(size_t i, int back) { return (unsigned char)((back ? 0x5Au : 0xA5u) ^ (unsigned char)(i * 37u)); }

static uintptr_t kl_go_alloc(size_t bytes) {
	size_t pg = kl_page(), inner = kl_inner(bytes), total = pg + inner + pg;
	char *base = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (base == MAP_FAILED) return 0;
	mprotect(base, pg, PROT_NONE);
	mprotect(base + pg + inner, pg, PROT_NONE);
	char *p = base + pg + KL_GUARD;
	for (size_t i = 0; i < KL_GUARD; i++) base[pg + i] = (char)kl_pat(i, 0);
	size_t back = inner - KL_GUARD - bytes;
	for (size_t i = 0; i < back; i++) p[bytes + i] = (char)kl_pat(i, 1);
	return (uintptr_t)p;
}

static void kl_go_free(uintptr_t p, size_t bytes) {
	size_t pg = kl_page();
	munmap((char *)p - KL_GUARD - pg, pg + kl_inner(bytes) + pg);
}

// kl_go_guard_check returns how many guard bytes changed; *lo and *hi get the offsets (from p)
// of the first and the last changed byte. With repair, the pattern is written back.
static long long kl_go_guard_check(uintptr_t p, size_t bytes, long long *lo, long long *hi, int repair) {
	unsigned char *q = (unsigned char *)p;
	long long bad = 0;
	for (size_t i = 0; i < KL_GUARD; i++) {
		unsigned char want = kl_pat(i, 0);
		unsigned char *b = q - KL_GUARD + i;
		if (*b != want) {
			long long off = (long long)i - KL_GUARD;
			if (!bad) *lo = off;
			*hi = off;
			bad++;
			if (repair) *b = want;
		}
	}
	size_t back = kl_inner(bytes) - KL_GUARD - bytes;
	for (size_t i = 0; i < back; i++) {
		unsigned char want = kl_pat(i, 1);
		unsigned char *b = q + bytes + i;
		if (*b != want) {
			long long off = (long long)(bytes + i);
			if (!bad) *lo = off;
			*hi = off;
			bad++;
			if (repair) *b = want;
		}
	}
	return bad;
}

static size_t kl_go_guard_page(void) { return kl_page(); }
static size_t kl_go_inner(size_t bytes) { return kl_inner(bytes); }

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

const guardBytes = C.KL_GUARD

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
)

func cAlloc(bytes int64) gpu.Ptr { return gpu.Ptr(C.kl_go_alloc(C.size_t(bytes))) }

func cFree(p gpu.Ptr, bytes int64) { C.kl_go_free(C.uintptr_t(p), C.size_t(bytes)) }

// cGuardCheck reports the changed guard bytes of an allocation and repairs them.
func cGuardCheck(p gpu.Ptr, bytes int64) (bad, lo, hi int64) {
	var clo, chi C.longlong
	n := C.kl_go_guard_check(C.uintptr_t(p), C.size_t(bytes), &clo, &chi, 1)
	return int64(n), int64(clo), int64(chi)
}

func fenceSize() int64 { return int64(C.kl_go_guard_page()) }

// innerSize is the size of the readable part of an allocation's mapping (guards included).
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
	ptr        *C.kl_emu_entry
	sizes      []int
	types      []string // nil when the registry's types do not match the sizes
	maxThreads int
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
		info := entryInfo{name: C.GoString(e.name), ptr: e, maxThreads: int(e.max_threads)}
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
