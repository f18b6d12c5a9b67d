//go:build cgo && linux

package cuda

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"sync"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

// device is an open GPU: the device's primary context, retained until Close.
type device struct {
	dev  C.CUdevice
	ctx  C.CUcontext
	info gpu.DeviceInfo

	sharedMu sync.Mutex
	shared   map[gpu.Ptr]*vmmBuffer // buffers made by MallocShared or mapped by OpenShared

	release releaser // the streams' holds (timing.go)
	flush   l2Flush

	closeOnce sync.Once
}

var _ gpu.Device = (*device)(nil)
var _ gpu.BLASProvider = (*device)(nil)

func (d *device) Info() gpu.DeviceInfo { return d.info }

// Attributes lists every CUdevice_attribute the driver answers, in enum order.
func (d *device) Attributes() ([]gpu.Attribute, error) { return readAttributes(d.dev) }

func (d *device) MemInfo() (free, total int64, err error) {
	var f, t C.size_t
	if err := check("cuMemGetInfo_v2", C.kl_mem_get_info(d.ctx, &f, &t)); err != nil {
		return 0, 0, err
	}
	return int64(f), int64(t), nil
}

// Synchronize waits for all work in the context and returns the first asynchronous error (a
// kernel's illegal address, for instance, which is sticky).
func (d *device) Synchronize() error {
	return check("cuCtxSynchronize", C.kl_ctx_synchronize(d.ctx))
}

// CanAccessPeer reports whether kernels on d can read and write peer's memory. A device can
// always access its own memory.
func (d *device) CanAccessPeer(peer gpu.Device) (bool, error) {
	p, err := asDevice(peer)
	if err != nil {
		return false, err
	}
	if p.dev == d.dev {
		return true, nil
	}
	var can C.int
	if err := check("cuDeviceCanAccessPeer", C.kl_device_can_access_peer(&can, d.dev, p.dev)); err != nil {
		return false, err
	}
	return can != 0, nil
}

// EnablePeerAccess lets kernels on d access peer's memory (one direction: call it on both
// devices for both). Enabling it twice is not an error.
func (d *device) EnablePeerAccess(peer gpu.Device) error {
	p, err := asDevice(peer)
	if err != nil {
		return err
	}
	if p.dev == d.dev {
		return nil
	}
	r := C.kl_ctx_enable_peer_access(d.ctx, p.ctx)
	if r == cudaErrorPeerAccessAlreadyEnabled {
		return nil
	}
	if err := check("cuCtxEnablePeerAccess", r); err != nil {
		return fmt.Errorf("enable access from device %d to device %d: %w", d.info.Index, p.info.Index, err)
	}
	return nil
}

// Close releases the primary context (the driver destroys it, and everything allocated in it,
// when the last user releases it). Close the BLAS handle first.
func (d *device) Close() error {
	var err error
	d.closeOnce.Do(func() {
		err = check("cuDevicePrimaryCtxRelease_v2", C.kl_primary_ctx_release(d.dev))
	})
	return err
}

// asDevice unwraps a gpu.Device of this backend.
func asDevice(g gpu.Device) (*device, error) {
	d, ok := gpu.Unwrap(g).(*device)
	if !ok || d == nil {
		return nil, fmt.Errorf("cuda: the peer is a %T, not a CUDA device", g)
	}
	return d, nil
}
