//go:build cgo && linux

package cuda

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

func (d *device) Malloc(bytes int64) (gpu.Ptr, error) {
	if bytes <= 0 {
		return 0, fmt.Errorf("cuda: malloc of %d bytes (the size must be positive)", bytes)
	}
	var p C.CUdeviceptr
	if err := check("cuMemAlloc_v2", C.kl_mem_alloc(d.ctx, &p, C.size_t(bytes))); err != nil {
		return 0, err
	}
	return gpu.Ptr(p), nil
}

// Free releases memory from Malloc, and shared buffers (MallocShared, OpenShared): unmapped and
// released here, the memory itself lives on until every process that mapped it has freed it.
func (d *device) Free(p gpu.Ptr) error {
	if ok, err := d.freeShared(p); ok {
		return err
	}
	return check("cuMemFree_v2", C.kl_mem_free(d.ctx, C.CUdeviceptr(p)))
}

// MallocHost allocates page-locked host memory. Copies to and from it are asynchronous.
func (d *device) MallocHost(bytes int64) (gpu.HostMem, error) {
	if bytes <= 0 {
		return nil, fmt.Errorf("cuda: host malloc of %d bytes (the size must be positive)", bytes)
	}
	var p unsafe.Pointer
	if err := check("cuMemAllocHost_v2", C.kl_mem_alloc_host(d.ctx, &p, C.size_t(bytes))); err != nil {
		return nil, err
	}
	pinned.add(p, bytes)
	return &hostMem{d: d, p: p, n: bytes}, nil
}

// hostMem is page-locked host memory from cuMemAllocHost (C memory, never moved by Go).
type hostMem struct {
	d  *device
	mu sync.Mutex
	p  unsafe.Pointer
	n  int64
}

func (h *hostMem) Pointer() unsafe.Pointer { return h.p }
func (h *hostMem) Bytes() int64            { return h.n }

// Free releases the memory; it is safe to call twice.
func (h *hostMem) Free() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.p == nil {
		return nil
	}
	pinned.remove(h.p)
	err := check("cuMemFreeHost", C.kl_mem_free_host(h.d.ctx, h.p))
	h.p = nil
	return err
}

// pinned records the page-locked allocations, so that a copy can tell whether its host side
// may be used asynchronously. Page-locked memory from cuMemAllocHost is portable between
// contexts on 64-bit Linux (unified addressing), so one table serves every device.
var pinned = pinnedTable{m: map[uintptr]int64{}}

type pinnedTable struct {
	mu sync.RWMutex
	m  map[uintptr]int64 // start address → length
}

func (t *pinnedTable) add(p unsafe.Pointer, n int64) {
	t.mu.Lock()
	t.m[uintptr(p)] = n
	t.mu.Unlock()
}

func (t *pinnedTable) remove(p unsafe.Pointer) {
	t.mu.Lock()
	delete(t.m, uintptr(p))
	t.mu.Unlock()
}

// contains reports whether [p, p+n) lies inside one page-locked allocation.
func (t *pinnedTable) contains(p unsafe.Pointer, n int64) bool {
	a := uintptr(p)
	t.mu.RLock()
	defer t.mu.RUnlock()
	for start, length := range t.m {
		if a >= start && a+uintptr(n) <= start+uintptr(length) {
			return true
		}
	}
	return false
}

// streamOf returns the CUDA stream of s: NULL (the default stream) for nil.
func streamOf(s gpu.Stream) (C.CUstream, error) {
	if s == nil {
		return nil, nil
	}
	st, ok := s.(*stream)
	if !ok {
		return nil, fmt.Errorf("cuda: the stream is a %T, not a CUDA stream", s)
	}
	if st == nil {
		return nil, nil
	}
	return st.s, nil
}

// CopyHtoD copies host memory to the device: asynchronously on s when src is page-locked
// (MallocHost), synchronously otherwise (see the package comment).
func (d *device) CopyHtoD(dst gpu.Ptr, src unsafe.Pointer, bytes int64, s gpu.Stream) error {
	return hostCopy("cuMemcpyHtoD", src, bytes, s, func(cs C.CUstream, async C.int) C.CUresult {
		return C.kl_memcpy_htod(d.ctx, C.CUdeviceptr(dst), src, C.size_t(bytes), cs, async)
	})
}

// CopyDtoH copies device memory to the host, asynchronously when dst is page-locked like
// CopyHtoD.
func (d *device) CopyDtoH(dst unsafe.Pointer, src gpu.Ptr, bytes int64, s gpu.Stream) error {
	return hostCopy("cuMemcpyDtoH", dst, bytes, s, func(cs C.CUstream, async C.int) C.CUresult {
		return C.kl_memcpy_dtoh(d.ctx, dst, C.CUdeviceptr(src), C.size_t(bytes), cs, async)
	})
}

// hostCopy runs one copy of bytes between host memory and the device: run with async 1 on s
// when host is page-locked, with async 0 otherwise; name is the driver call without its suffix.
func hostCopy(name string, host unsafe.Pointer, bytes int64, s gpu.Stream, run func(cs C.CUstream, async C.int) C.CUresult) error {
	return streamOp(bytes, s, func(cs C.CUstream) (string, C.CUresult) {
		if pinned.contains(host, bytes) {
			return name + "Async_v2", run(cs, 1)
		}
		return name + "_v2", run(cs, 0)
	})
}

// streamOp runs one copy or fill of n bytes or elements on s, nothing to do being no error: run
// makes the driver call on the CUDA stream and returns the call's name and result.
func streamOp(n int64, s gpu.Stream, run func(cs C.CUstream) (string, C.CUresult)) error {
	if n <= 0 {
		return nil
	}
	cs, err := streamOf(s)
	if err != nil {
		return err
	}
	return check(run(cs))
}

func (d *device) CopyDtoD(dst, src gpu.Ptr, bytes int64, s gpu.Stream) error {
	return streamOp(bytes, s, func(cs C.CUstream) (string, C.CUresult) {
		return "cuMemcpyDtoDAsync_v2", C.kl_memcpy_dtod(d.ctx, C.CUdeviceptr(dst), C.CUdeviceptr(src), C.size_t(bytes), cs)
	})
}

// CopyPeer copies src on d to dst on dstDev, ordered on s (a stream of d). It works with or
// without peer access enabled (without, the driver stages the copy through the host).
func (d *device) CopyPeer(dst gpu.Ptr, dstDev gpu.Device, src gpu.Ptr, bytes int64, s gpu.Stream) error {
	if bytes <= 0 {
		return nil
	}
	p, err := asDevice(dstDev)
	if err != nil {
		return err
	}
	return streamOp(bytes, s, func(cs C.CUstream) (string, C.CUresult) {
		return "cuMemcpyPeerAsync", C.kl_memcpy_peer(d.ctx, C.CUdeviceptr(dst), p.ctx, C.CUdeviceptr(src), d.ctx, C.size_t(bytes), cs)
	})
}

func (d *device) MemsetD8(dst gpu.Ptr, value uint8, count int64, s gpu.Stream) error {
	return streamOp(count, s, func(cs C.CUstream) (string, C.CUresult) {
		return "cuMemsetD8Async", C.kl_memset_d8(d.ctx, C.CUdeviceptr(dst), C.uchar(value), C.size_t(count), cs)
	})
}

func (d *device) MemsetD32(dst gpu.Ptr, value uint32, count int64, s gpu.Stream) error {
	return streamOp(count, s, func(cs C.CUstream) (string, C.CUresult) {
		return "cuMemsetD32Async", C.kl_memset_d32(d.ctx, C.CUdeviceptr(dst), C.uint(value), C.size_t(count), cs)
	})
}
