//go:build cgo

package emu

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/ranks"
)

// Buffers shared between rank processes: each rank is a process with its own emulated device,
// and a shared buffer lives in a shared-memory file that the other ranks map at the same address
// (so a pointer into a peer's buffer means the same in every rank). Every process allocates in a
// window of the address space of its own, chosen by its rank on the node, so that what it maps
// of its peers never collides with its own buffers.

// rankWindow is the size of each process's window of device addresses.
const rankWindow = uintptr(2) << 40 // 2 TiB

// maxLocalRanks is how many rank processes of one node the windows leave room for.
const maxLocalRanks = 40

// windowBase is where this process's window starts: after the windows of the ranks before it.
func windowBase() uintptr {
	w, _, err := ranks.FromEnv(os.Getenv)
	if err != nil || w.LocalRank <= 0 {
		return memoryWindow
	}
	return memoryWindow + uintptr(w.LocalRank%maxLocalRanks)*rankWindow
}

// sharedHandle is what another process needs to map a shared buffer.
type sharedHandle struct {
	Path  string  `json:"path"`
	Base  uintptr `json:"base"`
	Bytes int64   `json:"bytes"`
	Pid   int     `json:"pid"`
}

var sharedSeq atomic.Uint64

// shmDir is where shared-memory files go: /dev/shm where it can be written, else the temp folder.
func shmDir() string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() && syscall.Access("/dev/shm", 2) == nil {
		return "/dev/shm"
	}
	return os.TempDir()
}

// MallocShared allocates a buffer that other processes can map (OpenShared).
func (d *device) MallocShared(bytes int64) (gpu.Ptr, []byte, error) {
	if err := d.usable(); err != nil {
		return 0, nil, err
	}
	if bytes <= 0 {
		return 0, nil, callErr("MallocShared", "EMU_INVALID_VALUE", fmt.Sprintf("cannot allocate %d bytes", bytes))
	}
	path := filepath.Join(shmDir(), fmt.Sprintf("kl-emu-%d-%d", os.Getpid(), sharedSeq.Add(1)))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, nil, callErr("MallocShared", "EMU_OUT_OF_MEMORY", "creating the shared-memory file: "+err.Error())
	}
	fd, err := syscall.Dup(int(f.Fd()))
	f.Close()
	if err != nil {
		os.Remove(path)
		return 0, nil, callErr("MallocShared", "EMU_OUT_OF_MEMORY", err.Error())
	}
	syscall.CloseOnExec(fd)
	d.mu.Lock()
	if d.used+bytes > d.info.MemoryBytes {
		d.mu.Unlock()
		syscall.Close(fd)
		os.Remove(path)
		return 0, nil, callErr("MallocShared", "EMU_OUT_OF_MEMORY", fmt.Sprintf("out of memory: %s asked on emulated device %d", gpu.HumanBytes(bytes), d.info.Index))
	}
	d.used += bytes
	d.mu.Unlock()
	p, err := d.allocate(bytes, fd)
	if err != nil {
		d.mu.Lock()
		d.used -= bytes
		d.mu.Unlock()
		syscall.Close(fd)
		os.Remove(path)
		return 0, nil, err
	}
	a := d.b.find(p, 1)
	a.shmPath = path
	h, _ := json.Marshal(sharedHandle{Path: path, Base: a.base, Bytes: bytes, Pid: os.Getpid()})
	return p, h, nil
}

// OpenShared maps another process's shared buffer at its address.
func (d *device) OpenShared(handle []byte) (gpu.Ptr, error) {
	if err := d.usable(); err != nil {
		return 0, err
	}
	var h sharedHandle
	if err := json.Unmarshal(handle, &h); err != nil || h.Path == "" || h.Bytes <= 0 {
		return 0, callErr("OpenShared", "EMU_INVALID_VALUE", "not a handle of an emulated shared buffer")
	}
	f, err := os.OpenFile(h.Path, os.O_RDWR, 0)
	if err != nil {
		return 0, callErr("OpenShared", "EMU_INVALID_VALUE", fmt.Sprintf("opening the shared buffer of process %d: %v (was it freed?)", h.Pid, err))
	}
	fd, err := syscall.Dup(int(f.Fd()))
	f.Close()
	if err != nil {
		return 0, callErr("OpenShared", "EMU_INVALID_VALUE", err.Error())
	}
	syscall.CloseOnExec(fd)
	if e := cMap(h.Base, h.Bytes, fd); e != 0 {
		syscall.Close(fd)
		return 0, callErr("OpenShared", "EMU_INVALID_VALUE", fmt.Sprintf("mapping process %d's buffer of %d bytes at 0x%x: %v "+
			"(does this process allocate in the same window? the ranks of a node need distinct LOCAL_RANKs)", h.Pid, h.Bytes, h.Base, syscall.Errno(e)))
	}
	p := gpu.Ptr(h.Base + uintptr(fenceSize()+dataOffset(h.Bytes)))
	d.b.addAlloc(&allocation{ptr: p, bytes: h.Bytes, dev: d, site: fmt.Sprintf("process %d (a peer rank)", h.Pid),
		base: h.Base, fd: fd, foreign: true})
	return p, nil
}
