//go:build cgo && linux

package cuda

/*
#include "shim.h"
*/
import "C"

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

// Buffers shared between the rank processes of one node (gpu.Sharer), with the CUDA virtual
// memory management API, as PyTorch's symmetric memory and vLLM's custom all-reduce do it:
//
//   - MallocShared creates physical memory on this device with cuMemCreate, exportable as a POSIX
//     file descriptor, maps it into a reserved address range (cuMemAddressReserve, cuMemMap) and
//     gives this device read-write access (cuMemSetAccess). cuMemExportToShareableHandle turns it
//     into a file descriptor, which this process keeps open while the buffer lives.
//   - The handle carries this process's pid and the descriptor's number (plus the size and the
//     node's boot id). Another process of the node copies the descriptor into its own table with
//     pidfd_open + pidfd_getfd (Linux 5.6+), imports it (cuMemImportFromShareableHandle), maps it
//     and gives its own device access: a kernel there reads and writes the memory through the
//     returned pointer, on the same GPU (several ranks sharing one) or on another GPU of the node
//     that has a peer path to it (NVLink or PCIe).
//
// pidfd_getfd needs ptrace access to the exporting process (PTRACE_MODE_ATTACH_REALCREDS): the
// same user, and under Yama's ptrace_scope 1 (the default of Ubuntu and others) either an ancestor
// or a process the exporter allowed. Rank processes are siblings, so the first MallocShared of a
// process allows every process of the same user to take its descriptors
// (prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY)), which is the narrowest setting Yama offers for
// peers whose pids are not known in advance. Under ptrace_scope 2 only a process with
// CAP_SYS_PTRACE can import, and under 3 none can: OpenShared then says so.
//
// Free releases a buffer on either side: the exporter unmaps it, releases its handle and closes
// the descriptor (importers that already mapped it keep the memory alive until they free it too;
// one that imports afterwards gets an error saying the buffer was freed).

// vmmBuffer is a VMM allocation of this process, made here or imported.
type vmmBuffer struct {
	size   int64  // the mapped size, a multiple of the granularity
	handle uint64 // CUmemGenericAllocationHandle
	fd     int    // the exported descriptor (-1 for an imported buffer)
}

// sharedMagic starts every handle, so that OpenShared can tell a CUDA buffer's handle from
// anything else (the emulator's, a truncated message).
var sharedMagic = [8]byte{'K', 'L', 'C', 'U', 'V', 'M', 'M', '1'}

// sharedHandleLen is the encoded size of a sharedHandle.
const sharedHandleLen = 8 + 16 + 4 + 4 + 8 + 8

// sharedHandle is what another process of the node needs to map a shared buffer.
type sharedHandle struct {
	BootID [16]byte // the node's boot id: a handle from another machine cannot be opened here
	Pid    int32    // the exporting process
	FD     int32    // the descriptor number in that process
	Size   int64    // the mapped size (granularity-rounded)
	Bytes  int64    // the size asked for
}

func (h sharedHandle) encode() []byte {
	var b bytes.Buffer
	b.Write(sharedMagic[:])
	b.Write(h.BootID[:])
	binary.Write(&b, binary.LittleEndian, h.Pid)
	binary.Write(&b, binary.LittleEndian, h.FD)
	binary.Write(&b, binary.LittleEndian, h.Size)
	binary.Write(&b, binary.LittleEndian, h.Bytes)
	return b.Bytes()
}

func decodeSharedHandle(b []byte) (sharedHandle, error) {
	var h sharedHandle
	if len(b) != sharedHandleLen || !bytes.Equal(b[:8], sharedMagic[:]) {
		return h, fmt.Errorf("cuda: OpenShared: not the handle of a CUDA shared buffer (%d bytes; a CUDA device's MallocShared makes %d, starting %q): was it made by another backend, or cut short on the way?",
			len(b), sharedHandleLen, sharedMagic[:])
	}
	copy(h.BootID[:], b[8:24])
	r := bytes.NewReader(b[24:])
	binary.Read(r, binary.LittleEndian, &h.Pid)
	binary.Read(r, binary.LittleEndian, &h.FD)
	binary.Read(r, binary.LittleEndian, &h.Size)
	binary.Read(r, binary.LittleEndian, &h.Bytes)
	if h.Pid <= 0 || h.FD < 0 || h.Size <= 0 || h.Bytes <= 0 || h.Bytes > h.Size {
		return h, fmt.Errorf("cuda: OpenShared: the handle is damaged (pid %d, descriptor %d, %d of %d bytes)", h.Pid, h.FD, h.Bytes, h.Size)
	}
	return h, nil
}

// bootID reads the kernel's boot id: equal for the processes of one machine (one boot), different
// across machines.
var bootID = sync.OnceValues(func() ([16]byte, error) {
	var id [16]byte
	raw, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return id, fmt.Errorf("cuda: reading the boot id: %w", err)
	}
	b, err := hex.DecodeString(strings.ReplaceAll(strings.TrimSpace(string(raw)), "-", ""))
	if err != nil || len(b) != len(id) {
		return id, fmt.Errorf("cuda: unexpected boot id %q in /proc/sys/kernel/random/boot_id", raw)
	}
	copy(id[:], b)
	return id, nil
})

// allowPeersToTakeFDs lets processes of the same user take this process's descriptors with
// pidfd_getfd under Yama's ptrace_scope 1 (see the file comment). It is done once, on the first
// export; where Yama is absent or set otherwise it changes nothing.
var allowPeersToTakeFDs = sync.OnceFunc(func() {
	scope, err := os.ReadFile("/proc/sys/kernel/yama/ptrace_scope")
	if err == nil && strings.TrimSpace(string(scope)) == "1" {
		unix.Prctl(unix.PR_SET_PTRACER, unix.PR_SET_PTRACER_ANY, 0, 0, 0)
	}
})

// granularity is the allocation granularity of d for exportable buffers.
func (d *device) granularity() (int64, error) {
	var g C.size_t
	if err := check("cuMemGetAllocationGranularity", C.kl_vmm_granularity(d.dev, C.KL_MEM_HANDLE_TYPE_POSIX_FD, &g)); err != nil {
		return 0, fmt.Errorf("cuda: device %d: %w", d.info.Index, err)
	}
	if g == 0 {
		return 0, fmt.Errorf("cuda: device %d reports an allocation granularity of 0", d.info.Index)
	}
	return int64(g), nil
}

// vmmSupport says why d cannot make shareable VMM buffers, or nil when it can.
func (d *device) vmmSupport() error {
	for _, a := range []struct {
		attr int
		what string
	}{
		{attrVirtualMemoryManagementSupported, "virtual memory management (cuMemCreate)"},
		{attrHandleTypePosixFileDescriptorSupported, "exporting memory as POSIX file descriptors"},
	} {
		v, err := deviceAttribute(d.dev, a.attr)
		if err != nil {
			return err
		}
		if v == 0 {
			return fmt.Errorf("cuda: device %d (%s) does not support %s, which sharing buffers between processes needs", d.info.Index, d.info.Name, a.what)
		}
	}
	return nil
}

func roundUp(n, to int64) int64 { return (n + to - 1) / to * to }

func vmmError(call *C.char, r C.CUresult) error {
	name := "cuMemCreate"
	if call != nil {
		name = C.GoString(call)
	}
	return check(name, r)
}

var _ gpu.Sharer = (*device)(nil)

// MallocShared allocates bytes (rounded up to the allocation granularity, 2 MiB on recent GPUs)
// that other processes of the node can map with OpenShared.
func (d *device) MallocShared(bytes int64) (gpu.Ptr, []byte, error) {
	if bytes <= 0 {
		return 0, nil, fmt.Errorf("cuda: MallocShared of %d bytes (the size must be positive)", bytes)
	}
	id, err := bootID()
	if err != nil {
		return 0, nil, err
	}
	if err := d.vmmSupport(); err != nil {
		return 0, nil, err
	}
	g, err := d.granularity()
	if err != nil {
		return 0, nil, err
	}
	size := roundUp(bytes, g)
	var p C.CUdeviceptr
	var handle C.ulonglong
	var failed *C.char
	if r := C.kl_vmm_alloc(d.ctx, d.dev, C.KL_MEM_HANDLE_TYPE_POSIX_FD, C.size_t(size), C.size_t(g), &p, &handle, &failed); r != cudaSuccess {
		return 0, nil, fmt.Errorf("cuda: MallocShared of %s on device %d: %w", gpu.HumanBytes(bytes), d.info.Index, vmmError(failed, r))
	}
	var fd C.int
	if r := C.kl_vmm_export_fd(d.ctx, handle, C.KL_MEM_HANDLE_TYPE_POSIX_FD, &fd); r != cudaSuccess {
		C.kl_vmm_free(d.ctx, p, C.size_t(size), handle, &failed)
		return 0, nil, fmt.Errorf("cuda: MallocShared on device %d: %w", d.info.Index, check("cuMemExportToShareableHandle", r))
	}
	unix.CloseOnExec(int(fd))
	allowPeersToTakeFDs()
	d.addShared(gpu.Ptr(p), &vmmBuffer{size: size, handle: uint64(handle), fd: int(fd)})
	h := sharedHandle{BootID: id, Pid: int32(os.Getpid()), FD: int32(fd), Size: size, Bytes: bytes}
	return gpu.Ptr(p), h.encode(), nil
}

// OpenShared maps on d the buffer that handle describes, made by MallocShared in a process of
// this node (this one included).
func (d *device) OpenShared(handle []byte) (gpu.Ptr, error) {
	h, err := decodeSharedHandle(handle)
	if err != nil {
		return 0, err
	}
	id, err := bootID()
	if err != nil {
		return 0, err
	}
	if h.BootID != id {
		return 0, fmt.Errorf("cuda: OpenShared: the buffer was made on another machine (process %d there): device memory is shared only between the processes of one node; ranks on other nodes are reached through NCCL", h.Pid)
	}
	if err := d.vmmSupport(); err != nil {
		return 0, err
	}
	g, err := d.granularity()
	if err != nil {
		return 0, err
	}
	if h.Size%g != 0 {
		return 0, fmt.Errorf("cuda: OpenShared: the buffer's size %d is not a multiple of device %d's allocation granularity %d", h.Size, d.info.Index, g)
	}
	fd, err := takeFD(int(h.Pid), int(h.FD))
	if err != nil {
		return 0, err
	}
	// The imported handle holds its own reference to the memory: the copy of the descriptor is
	// needed only for the import.
	defer unix.Close(fd)
	var p C.CUdeviceptr
	var mem C.ulonglong
	var failed *C.char
	if r := C.kl_vmm_import_fd(d.ctx, d.dev, C.int(fd), C.KL_MEM_HANDLE_TYPE_POSIX_FD, C.size_t(h.Size), C.size_t(g), &p, &mem, &failed); r != cudaSuccess {
		err := vmmError(failed, r)
		switch call := C.GoString(failed); {
		case failed == nil:
		case call == "cuMemSetAccess":
			err = fmt.Errorf("%w (device %d cannot reach the memory of process %d's GPU: is there a peer path, NVLink or PCIe, between them?)", err, d.info.Index, h.Pid)
		case call == "cuMemImportFromShareableHandle":
			// The descriptor number named another file: the buffer was freed and its number reused.
			err = fmt.Errorf("%w (descriptor %d of process %d is not a CUDA buffer: was the buffer freed there?)", err, h.FD, h.Pid)
		}
		return 0, fmt.Errorf("cuda: OpenShared of process %d's buffer on device %d: %w", h.Pid, d.info.Index, err)
	}
	d.addShared(gpu.Ptr(p), &vmmBuffer{size: h.Size, handle: uint64(mem), fd: -1})
	return gpu.Ptr(p), nil
}

// takeFD copies descriptor fd of process pid into this process (pidfd_open + pidfd_getfd).
func takeFD(pid, fd int) (int, error) {
	pidfd, err := unix.PidfdOpen(pid, 0)
	switch {
	case errors.Is(err, unix.ESRCH):
		return -1, fmt.Errorf("cuda: OpenShared: process %d, which shared the buffer, has exited (or is on another node)", pid)
	case errors.Is(err, unix.ENOSYS):
		return -1, fmt.Errorf("cuda: OpenShared: this kernel has no pidfd_open (Linux 5.6 or newer is needed to share GPU buffers between processes)")
	case err != nil:
		return -1, fmt.Errorf("cuda: OpenShared: pidfd_open(%d): %w", pid, err)
	}
	defer unix.Close(pidfd)
	got, err := unix.PidfdGetfd(pidfd, fd, 0)
	switch {
	case errors.Is(err, unix.EPERM):
		scope := "absent"
		if b, e := os.ReadFile("/proc/sys/kernel/yama/ptrace_scope"); e == nil {
			scope = strings.TrimSpace(string(b))
		}
		return -1, fmt.Errorf("cuda: OpenShared: not allowed to take descriptor %d of process %d (pidfd_getfd needs ptrace access to it: "+
			"both processes must run as the same user, and Yama's /proc/sys/kernel/yama/ptrace_scope, here %s, must be 0 or 1; "+
			"under 2 the importing process needs CAP_SYS_PTRACE; containers may also need the SYS_PTRACE capability or a seccomp profile that allows pidfd_getfd)", fd, pid, scope)
	case errors.Is(err, unix.EBADF):
		return -1, fmt.Errorf("cuda: OpenShared: process %d no longer has the buffer's descriptor %d (was the buffer freed?)", pid, fd)
	case errors.Is(err, unix.ENOSYS):
		return -1, fmt.Errorf("cuda: OpenShared: this kernel has no pidfd_getfd (Linux 5.6 or newer is needed to share GPU buffers between processes)")
	case err != nil:
		return -1, fmt.Errorf("cuda: OpenShared: pidfd_getfd(process %d, descriptor %d): %w", pid, fd, err)
	}
	unix.CloseOnExec(got)
	return got, nil
}

func (d *device) addShared(p gpu.Ptr, b *vmmBuffer) {
	d.sharedMu.Lock()
	defer d.sharedMu.Unlock()
	if d.shared == nil {
		d.shared = map[gpu.Ptr]*vmmBuffer{}
	}
	d.shared[p] = b
}

// freeShared releases p if it is a VMM buffer of d; ok is false when it is not one.
func (d *device) freeShared(p gpu.Ptr) (ok bool, err error) {
	d.sharedMu.Lock()
	b := d.shared[p]
	delete(d.shared, p)
	d.sharedMu.Unlock()
	if b == nil {
		return false, nil
	}
	var failed *C.char
	if r := C.kl_vmm_free(d.ctx, C.CUdeviceptr(p), C.size_t(b.size), C.ulonglong(b.handle), &failed); r != cudaSuccess {
		err = vmmError(failed, r)
	}
	if b.fd >= 0 {
		unix.Close(b.fd)
	}
	return true, err
}
