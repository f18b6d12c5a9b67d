//go:build cgo && linux

package cuda

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

// NCCLEnv names an environment variable that, when set, is the NCCL library to load before the
// usual names are tried.
const NCCLEnv = "KERNELLABS_NCCL"

// ncclNames are the sonames tried.
var ncclNames = []string{"libnccl.so.2", "libnccl.so"}

// ncclCandidates lists what to dlopen: the override, the sonames through the loader's search
// path, then the usual toolkit and distribution directories.
func ncclCandidates() []string {
	var out []string
	if p := os.Getenv(NCCLEnv); p != "" {
		out = append(out, p)
	}
	out = append(out, ncclNames...)
	var dirs []string
	for _, env := range []string{"CUDA_HOME", "CUDA_PATH", "NCCL_HOME"} {
		if root := os.Getenv(env); root != "" {
			dirs = append(dirs, filepath.Join(root, "lib64"), filepath.Join(root, "lib"))
		}
	}
	dirs = append(dirs, "/usr/local/cuda/lib64", "/usr/lib/x86_64-linux-gnu", "/usr/local/nccl/lib")
	for _, dir := range dirs {
		for _, n := range ncclNames {
			out = append(out, filepath.Join(dir, n))
		}
	}
	return out
}

var ncclLoad struct {
	sync.Mutex
	done bool
	err  error
}

// loadNCCL loads NCCL once per process; a missing library is an error wrapping
// gpu.ErrLibraryMissing.
func loadNCCL(candidates []string) error {
	ncclLoad.Lock()
	defer ncclLoad.Unlock()
	if ncclLoad.done {
		return nil
	}
	failures, ok := openFirst(candidates, func(path *C.char, err **C.char) C.int { return C.kl_nccl_load(path, err) })
	if ok {
		ncclLoad.done = true
		return nil
	}
	detail := "no libnccl.so.2 was found"
	if len(failures) > 0 {
		detail = strings.Join(failures, "; ")
	}
	return fmt.Errorf("nccl: %w: %s; install NCCL (e.g. the libnccl2 package, or pip's nvidia-nccl-cu12) or set %s to its path",
		gpu.ErrLibraryMissing, detail, NCCLEnv)
}

// ncclResultNames are the names of ncclResult_t (nccl.h).
var ncclResultNames = map[int]string{
	0: "ncclSuccess", 1: "ncclUnhandledCudaError", 2: "ncclSystemError", 3: "ncclInternalError",
	4: "ncclInvalidArgument", 5: "ncclInvalidUsage", 6: "ncclRemoteError", 7: "ncclInProgress",
}

func ncclError(call string, r C.ncclResult_t) error {
	code := int(r)
	name, ok := ncclResultNames[code]
	if !ok {
		name = fmt.Sprintf("ncclResult(%d)", code)
	}
	msg := ""
	if s := C.kl_nccl_error_string(r); s != nil {
		msg = C.GoString(s)
	}
	// An unhandled CUDA error inside NCCL usually means a sticky device fault.
	return gpu.NewCallError("nccl", call, code, name, msg, code == 1)
}

// ncclDataType maps gpu.DataType to ncclDataType_t (nccl.h: ncclFloat16 = 6, ncclFloat32 = 7,
// ncclFloat64 = 8, ncclBfloat16 = 9).
func ncclDataType(t gpu.DataType) (C.int, error) {
	switch t {
	case gpu.F16:
		return 6, nil
	case gpu.F32:
		return 7, nil
	case gpu.F64:
		return 8, nil
	case gpu.BF16:
		return 9, nil
	}
	return 0, fmt.Errorf("nccl: no NCCL type for %v", t)
}

// nccl is a single-process communicator: one rank per device, created with ncclCommInitAll.
type nccl struct {
	mu    sync.Mutex // NCCL's group calls are per thread; one collective at a time
	comms []C.ncclComm_t
	devs  []*device
}

var _ gpu.Communicator = (*nccl)(nil)
var _ gpu.CommunicatorProvider = (*device)(nil)

// OpenCommunicator creates a communicator over devs, rank i on devs[i]. NCCL picks its
// transport (NVLink, PCIe peer-to-peer, shared host memory) and algorithms itself; NVLink
// multicast (NVLS) and every other NCCL_* setting are left to the environment.
func (d *device) OpenCommunicator(devs []gpu.Device) (gpu.Communicator, error) {
	if err := loadNCCL(ncclCandidates()); err != nil {
		return nil, err
	}
	cd := make([]*device, len(devs))
	ords := make([]C.int, len(devs))
	for i, g := range devs {
		x, ok := gpu.Unwrap(g).(*device)
		if !ok {
			return nil, fmt.Errorf("nccl: rank %d is on a %s device; every rank must be a CUDA device", i, g.Info().Backend)
		}
		cd[i], ords[i] = x, C.int(x.info.Index)
	}
	// ncclCommInitAll switches the calling thread's current device; keep this goroutine on one
	// thread so the switch does not leak into another goroutine's calls.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	comms := make([]C.ncclComm_t, len(devs))
	if r := C.kl_nccl_comm_init_all(&comms[0], C.int(len(devs)), &ords[0]); r != 0 {
		return nil, ncclError("ncclCommInitAll", r)
	}
	return &nccl{comms: comms, devs: cd}, nil
}

func (n *nccl) Ranks() int { return len(n.comms) }

func (n *nccl) collective(op int, name string, send, recv []gpu.Ptr, count int, t gpu.DataType, streams []gpu.Stream) error {
	if err := gpu.CheckCollective(name, len(n.comms), send, recv, count, streams); err != nil {
		return err
	}
	dt, err := ncclDataType(t)
	if err != nil {
		return err
	}
	k := len(n.comms)
	cs := make([]C.CUdeviceptr, k)
	cr := make([]C.CUdeviceptr, k)
	ss := make([]C.CUstream, k)
	for i := range k {
		st, ok := streams[i].(*stream)
		if !ok {
			return fmt.Errorf("%s: rank %d's stream is not a CUDA stream", name, i)
		}
		if st.d != n.devs[i] {
			return fmt.Errorf("%s: rank %d's stream belongs to device %d, the rank is on device %d", name, i, st.d.info.Index, n.devs[i].info.Index)
		}
		cs[i], cr[i], ss[i] = C.CUdeviceptr(send[i]), C.CUdeviceptr(recv[i]), st.s
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.comms == nil {
		return fmt.Errorf("%s: the communicator is closed", name)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	// cgo may not be handed Go memory holding Go pointers; these slices hold only integers and
	// C handles, so passing their first elements is allowed.
	var failed *C.char
	r := C.kl_nccl_collective(C.int(op), C.int(k), &cs[0], &cr[0], C.size_t(count), dt, &n.comms[0], &ss[0],
		(**C.char)(unsafe.Pointer(&failed)))
	if r != 0 {
		call := name
		if failed != nil {
			call = C.GoString(failed)
		}
		return ncclError(call, r)
	}
	return nil
}

func (n *nccl) AllReduce(send, recv []gpu.Ptr, count int, t gpu.DataType, streams []gpu.Stream) error {
	return n.collective(0, "AllReduce", send, recv, count, t, streams)
}

func (n *nccl) AllGather(send, recv []gpu.Ptr, count int, t gpu.DataType, streams []gpu.Stream) error {
	return n.collective(1, "AllGather", send, recv, count, t, streams)
}

func (n *nccl) ReduceScatter(send, recv []gpu.Ptr, count int, t gpu.DataType, streams []gpu.Stream) error {
	return n.collective(2, "ReduceScatter", send, recv, count, t, streams)
}

// Close destroys every rank's communicator; it is safe to call twice.
func (n *nccl) Close() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	var first error
	for _, c := range n.comms {
		if r := C.kl_nccl_comm_destroy(c); r != 0 && first == nil {
			first = ncclError("ncclCommDestroy", r)
		}
	}
	n.comms = nil
	return first
}
