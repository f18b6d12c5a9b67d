//go:build cgo && linux

package cuda

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"strings"
	"sync"
	"unsafe"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

// NCCL's own symmetric memory (gpu.SymmetricWindows), the production form of the course's shared
// buffers: ncclMemAlloc + ncclCommWindowRegister(NCCL_WIN_COLL_SYMMETRIC) make a window that
// every rank's kernels reach through NCCL's device API (nccl_device.h): ncclGetLsaPointer(window,
// offset, peer) for a peer's part, and ncclLsaBarrierSession on the device communicator that
// ncclDevCommCreate returns. The device communicator is a plain struct that NCCL fills on the
// host; it is copied to device memory once, and kernels take `ncclDevComm const*`.
//
// The device API's structs changed between NCCL releases (ncclDevCommRequirements gained fields
// in 2.28.7, and a versioned header in 2.29), and this package has no nccl_device.h at build
// time: it lays out the requirements of the 2.28 releases it knows and refuses others with that
// reason. Kernels must be compiled against the nccl_device.h of the NCCL that runs them.

// ncclVersion returns NCCL's version code (NCCL_VERSION(X,Y,Z) = X·10000 + Y·100 + Z) and text.
func ncclVersion() (int, string, error) {
	var v C.int
	if r := C.kl_nccl_version(&v); r != 0 {
		return 0, "", fmt.Errorf("nccl: this NCCL has no ncclGetVersion (result %d); the device API needs NCCL 2.28", int(r))
	}
	code := int(v)
	return code, fmt.Sprintf("%d.%d.%d", code/10000, code/100%100, code%100), nil
}

// deviceAPILayout picks the ncclDevCommRequirements layout of NCCL version code (shim.c).
func deviceAPILayout(code int, text string) (int, error) {
	switch {
	case code < 22800:
		return 0, fmt.Errorf("nccl: NCCL %s has no device API (ncclDevCommCreate, LSA pointers and barriers came in NCCL 2.28)", text)
	case code < 22807:
		return 1, nil
	case code < 22900:
		return 2, nil
	}
	return 0, fmt.Errorf("nccl: NCCL %s: this backend knows the device API structs of NCCL 2.28 only (2.29 versioned them); "+
		"run NCCL 2.28 (KERNELLABS_NCCL names the library) or teach internal/gpu/cuda/shim.c the new ncclDevCommRequirements", text)
}

// symmetricSupport says why this process cannot make symmetric windows (an error wrapping
// gpu.ErrNoSymmetricMemory), or returns the layout.
func symmetricSupport() (int, error) {
	layout, err := deviceAPISupport()
	if err != nil {
		return 0, fmt.Errorf("%w: %w", gpu.ErrNoSymmetricMemory, err)
	}
	return layout, nil
}

func deviceAPISupport() (int, error) {
	if s := C.kl_nccl_missing_symmetric_symbol(); s != nil {
		_, text, _ := ncclVersion()
		return 0, fmt.Errorf("nccl: %w: NCCL %s lacks %s; symmetric windows and the device API need NCCL 2.28", gpu.ErrLibraryMissing, text, C.GoString(s))
	}
	code, text, err := ncclVersion()
	if err != nil {
		return 0, err
	}
	return deviceAPILayout(code, text)
}

// ncclNoSymmetricText is how NCCL 2.28 words its refusal (a WARN that ncclGetLastError returns)
// when the communicator has no symmetric memory: one rank, or ranks that are not all directly
// peer-accessible on one node (init.cc's comm->symmetricSupport).
const ncclNoSymmetricText = "does not support symmetric memory"

// noSymmetric marks NCCL's own refusal as gpu.ErrNoSymmetricMemory, keeping its words, so that a
// lab skips the variant with NCCL's reason instead of failing it.
func noSymmetric(err error) error {
	if err != nil && strings.Contains(err.Error(), ncclNoSymmetricText) {
		return fmt.Errorf("%w: %w", gpu.ErrNoSymmetricMemory, err)
	}
	return err
}

var _ gpu.SymmetricWindows = (*rankComm)(nil)

// symWindow is this rank's part of a symmetric window and its device communicator.
type symWindow struct {
	c       *rankComm
	once    sync.Once
	local   unsafe.Pointer // ncclMemAlloc'd
	bytes   int64
	win     unsafe.Pointer // ncclWindow_t
	host    unsafe.Pointer // the ncclDevComm as NCCL filled it (C memory, KL_NCCL_DEV_COMM_BYTES)
	devComm gpu.Ptr        // its copy in device memory
	lsa     int
}

// AllocSymmetric allocates bytes with ncclMemAlloc on every rank, registers them as a symmetric
// window and creates a device communicator with lsaBarriers LSA barriers. Every rank must call it
// (it is collective). Where NCCL cannot (a communicator of one rank, ranks that share no memory),
// the error carries NCCL's own reason and wraps gpu.ErrNoSymmetricMemory.
func (c *rankComm) AllocSymmetric(bytes int64, lsaBarriers int) (gpu.SymmetricWindow, error) {
	if bytes <= 0 {
		return nil, fmt.Errorf("nccl: a symmetric window of %d bytes (the size must be positive)", bytes)
	}
	if lsaBarriers < 0 {
		return nil, fmt.Errorf("nccl: %d LSA barriers (0 or more)", lsaBarriers)
	}
	layout, err := symmetricSupport()
	if err != nil {
		return nil, err
	}
	w := &symWindow{c: c, bytes: bytes}
	if r := C.kl_nccl_mem_alloc(c.d.ctx, &w.local, C.size_t(bytes)); r != 0 {
		return nil, fmt.Errorf("nccl: rank %d: %w", c.rank, ncclError("ncclMemAlloc", r))
	}
	fail := func(err error) (gpu.SymmetricWindow, error) {
		w.Free()
		return nil, fmt.Errorf("nccl: rank %d: symmetric window of %s: %w", c.rank, gpu.HumanBytes(bytes), err)
	}
	if err := c.call("ncclCommWindowRegister", func() (C.ncclResult_t, string) {
		return C.kl_nccl_window_register(c.d.ctx, c.comm, w.local, C.size_t(bytes), &w.win), ""
	}); err != nil {
		w.win = nil
		return fail(noSymmetric(err))
	}
	host := C.calloc(1, C.KL_NCCL_DEV_COMM_BYTES)
	if err := c.call("ncclDevCommCreate", func() (C.ncclResult_t, string) {
		return C.kl_nccl_dev_comm_create(c.d.ctx, c.comm, C.int(layout), C.int(lsaBarriers), host), ""
	}); err != nil {
		C.free(host)
		return fail(noSymmetric(err))
	}
	w.host = host
	// ncclDevComm starts {int rank, nRanks; uint32_t nRanks_rcp32; int lsaRank, lsaSize; ...}.
	fields := unsafe.Slice((*int32)(host), 5)
	if int(fields[0]) != c.rank || int(fields[1]) != c.ranks {
		return fail(fmt.Errorf("ncclDevCommCreate filled a device communicator for rank %d of %d, not %d of %d: the struct layout assumed for NCCL 2.28 does not hold", fields[0], fields[1], c.rank, c.ranks))
	}
	w.lsa = int(fields[4])
	if w.devComm, err = c.d.Malloc(C.KL_NCCL_DEV_COMM_BYTES); err != nil {
		return fail(err)
	}
	if err := c.d.CopyHtoD(w.devComm, host, C.KL_NCCL_DEV_COMM_BYTES, nil); err != nil {
		return fail(err)
	}
	return w, nil
}

func (w *symWindow) Local() gpu.Ptr   { return gpu.Ptr(uintptr(w.local)) }
func (w *symWindow) Bytes() int64     { return w.bytes }
func (w *symWindow) Window() gpu.Ptr  { return gpu.Ptr(uintptr(w.win)) }
func (w *symWindow) DevComm() gpu.Ptr { return w.devComm }
func (w *symWindow) LSARanks() int    { return w.lsa }

// Free destroys the device communicator, deregisters the window and frees the memory, on every
// rank (it is collective); it is safe to call twice.
func (w *symWindow) Free() error {
	var first error
	keep := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	w.once.Do(func() {
		c := w.c
		if w.host != nil {
			keep(c.call("ncclDevCommDestroy", func() (C.ncclResult_t, string) {
				return C.kl_nccl_dev_comm_destroy(c.d.ctx, c.comm, w.host), ""
			}))
			C.free(w.host)
		}
		if w.devComm != 0 {
			keep(c.d.Free(w.devComm))
		}
		if w.win != nil {
			keep(c.call("ncclCommWindowDeregister", func() (C.ncclResult_t, string) {
				return C.kl_nccl_window_deregister(c.d.ctx, c.comm, w.win), ""
			}))
		}
		if w.local != nil {
			if r := C.kl_nccl_mem_free(c.d.ctx, w.local); r != 0 {
				keep(ncclError("ncclMemFree", r))
			}
		}
	})
	return first
}
