//go:build cgo && linux

package cuda

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

// Communicators of processes (gpu.RankCommunicatorProvider): one rank per process, as NCCL's
// users run it. Rank 0 makes an id (ncclGetUniqueId), the ranks pass it around through their
// rendezvous, and each joins with ncclCommInitRankConfig on its own device.
//
// The communicator is non-blocking (ncclConfig_t.blocking = 0), so that no call waits forever
// for a rank that never comes or has died: initialisation and every call are polled with
// ncclCommGetAsyncError for at most the timeout (NCCLTimeoutEnv), after which the communicator
// is aborted (ncclCommAbort) and the call fails saying so.
//
// NCCL needs one GPU per rank. Two ranks of one communicator on the same GPU are caught before
// NCCL starts: each rank claims its GPU under the communicator's id with an abstract Unix socket
// (named after the id and the GPU's UUID, gone when the process is), and a second rank that finds
// the claim taken tells the first one through it; both then fail with ErrRanksShareGPU's message
// instead of one waiting for the other inside NCCL.

// DefaultNCCLTimeout is the wait when NCCLTimeoutEnv is not set: long enough for the ranks of
// several nodes to start, short enough that a lost rank ends the run.
const DefaultNCCLTimeout = 2 * time.Minute

// ErrRanksShareGPU is gpu.ErrRanksShareGPU: two ranks of one communicator on the same GPU.
var ErrRanksShareGPU = gpu.ErrRanksShareGPU

const ncclInProgress = 7

func ncclTimeout() (time.Duration, error) {
	t, err := gpu.DurationEnv(NCCLTimeoutEnv, DefaultNCCLTimeout)
	if err != nil {
		return 0, fmt.Errorf("nccl: %w", err)
	}
	return t, nil
}

// loadNCCLRanks loads NCCL and checks that it can make communicators of processes.
func loadNCCLRanks() error {
	if err := ncclLib.load(); err != nil {
		return err
	}
	if s := C.kl_nccl_missing_rank_symbol(); s != nil {
		return fmt.Errorf("nccl: %w: this NCCL lacks %s; communicators of processes need NCCL 2.17 or newer", gpu.ErrLibraryMissing, C.GoString(s))
	}
	return nil
}

// ncclCommError is ncclError with NCCL's own account of the failure (ncclGetLastError), which
// says far more than the result code ("Duplicate GPU detected", "Communicator does not support
// symmetric memory").
func ncclCommError(call string, r C.ncclResult_t, comm C.ncclComm_t) error {
	err := ncclError(call, r)
	last := ""
	if s := C.kl_nccl_last_error(comm); s != nil {
		last = strings.TrimSpace(C.GoString(s))
	}
	if last == "" {
		return err
	}
	var ce *gpu.CallError
	if errors.As(err, &ce) {
		ce.Message = strings.TrimSpace(ce.Message + ": " + last)
	}
	return err
}

var _ gpu.RankCommunicatorProvider = (*device)(nil)

// NewCommID makes the id of a new communicator (on rank 0): NCCL's 128-byte ncclUniqueId, which
// names rank 0's bootstrap address.
func (d *device) NewCommID() ([]byte, error) {
	if err := loadNCCLRanks(); err != nil {
		return nil, err
	}
	var id C.kl_nccl_id
	if r := C.kl_nccl_get_unique_id(&id); r != 0 {
		return nil, ncclError("ncclGetUniqueId", r)
	}
	return C.GoBytes(unsafe.Pointer(&id.internal[0]), C.int(len(id.internal))), nil
}

// rankComm is this process's rank of a communicator of processes.
type rankComm struct {
	mu      sync.Mutex // NCCL's group calls are per thread; one call at a time
	comm    C.ncclComm_t
	d       *device
	rank    int
	ranks   int
	timeout time.Duration
	claim   *gpuClaim
}

var _ gpu.RankCommunicator = (*rankComm)(nil)

// OpenRankCommunicator joins, as rank of ranks, the communicator that id (from NewCommID on
// rank 0) names, on this device. It returns once every rank has joined, or fails after the
// timeout (NCCLTimeoutEnv).
func (d *device) OpenRankCommunicator(id []byte, rank, ranks int) (gpu.RankCommunicator, error) {
	switch {
	case ranks < 1:
		return nil, fmt.Errorf("nccl: a communicator of %d ranks (at least 1)", ranks)
	case rank < 0 || rank >= ranks:
		return nil, fmt.Errorf("nccl: rank %d of %d (ranks are 0..%d)", rank, ranks, ranks-1)
	case len(id) != C.sizeof_kl_nccl_id:
		return nil, fmt.Errorf("nccl: the communicator id has %d bytes, NCCL's has %d (make it with NewCommID on rank 0 and pass it on unchanged)", len(id), C.sizeof_kl_nccl_id)
	}
	timeout, err := ncclTimeout()
	if err != nil {
		return nil, err
	}
	if err := loadNCCLRanks(); err != nil {
		return nil, err
	}
	claim, err := claimGPU(id, rank, d)
	if err != nil {
		return nil, err
	}
	var cid C.kl_nccl_id
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&cid.internal[0])), len(id)), id)

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var comm C.ncclComm_t
	r := C.kl_nccl_comm_init_rank(d.ctx, &comm, C.int(ranks), &cid, C.int(rank))
	fail := func(err error) (gpu.RankCommunicator, error) {
		if comm != nil {
			C.kl_nccl_comm_abort(comm)
		}
		claim.release()
		return nil, fmt.Errorf("nccl: rank %d of %d on device %d: %w", rank, ranks, d.info.Index, err)
	}
	if r != 0 && r != ncclInProgress {
		return fail(ncclCommError("ncclCommInitRankConfig", r, comm))
	}
	// Poll in slices, so that a rank that claims this GPU after us is noticed while we wait.
	deadline := time.Now().Add(timeout)
	for {
		r = C.kl_nccl_wait(comm, r, 50)
		if r != C.KL_NCCL_TIMEOUT {
			break
		}
		if other := claim.intruder(); other >= 0 {
			return fail(sharedGPUError(rank, other, d))
		}
		if time.Now().After(deadline) {
			return fail(fmt.Errorf("ncclCommInitRank: not every rank joined within %v (is every rank started with the same id? can they reach rank 0's address? NCCL_DEBUG=INFO says more; %s sets the wait)", timeout, NCCLTimeoutEnv))
		}
		r = ncclInProgress
	}
	if r != 0 {
		err := ncclCommError("ncclCommInitRankConfig", r, comm)
		if strings.Contains(err.Error(), "Duplicate GPU") {
			err = fmt.Errorf("%w: two ranks of the communicator are on device %d (%s): %v", ErrRanksShareGPU, d.info.Index, gpuKey(d), err)
		}
		return fail(err)
	}
	return &rankComm{comm: comm, d: d, rank: rank, ranks: ranks, timeout: timeout, claim: claim}, nil
}

func sharedGPUError(rank, other int, d *device) error {
	return fmt.Errorf("%w: ranks %d and %d of the communicator are both on device %d (%s) of this node; "+
		"give each rank its own GPU (run at most as many ranks as the node has GPUs), or skip the NCCL baselines when ranks share a GPU",
		ErrRanksShareGPU, min(rank, other), max(rank, other), d.info.Index, gpuKey(d))
}

// gpuKey names the GPU the same way in every process of the node.
func gpuKey(d *device) string {
	if d.info.UUID != "" {
		return d.info.UUID
	}
	return "PCI " + d.info.PCIBusID
}

// gpuClaim is a rank's claim on its GPU for one communicator: a listening abstract Unix socket.
type gpuClaim struct {
	l     *net.UnixListener
	other atomic.Int64 // the rank that found the claim taken, or -1
	done  chan struct{}
}

// claimGPU claims d for rank of the communicator id. When another rank holds the claim, it tells
// that rank who came and returns ErrRanksShareGPU.
func claimGPU(id []byte, rank int, d *device) (*gpuClaim, error) {
	sum := sha256.Sum256(id)
	name := "@kernellabs-nccl-" + hex.EncodeToString(sum[:12]) + "-" + strings.ReplaceAll(gpuKey(d), " ", "")
	addr := &net.UnixAddr{Name: name, Net: "unix"}
	l, err := net.ListenUnix("unix", addr)
	if err != nil {
		// Taken: tell the holder, so that it stops waiting for us inside NCCL.
		holder := -1
		if c, cerr := net.DialUnix("unix", nil, addr); cerr == nil {
			c.SetDeadline(time.Now().Add(5 * time.Second))
			fmt.Fprintf(c, "%d\n", rank)
			var b [16]byte
			if n, _ := c.Read(b[:]); n > 0 {
				holder, _ = strconv.Atoi(strings.TrimSpace(string(b[:n])))
			}
			c.Close()
		}
		if holder < 0 {
			// Not a claim we can talk to: leave the check to NCCL.
			return &gpuClaim{done: make(chan struct{})}, nil
		}
		return nil, fmt.Errorf("nccl: rank %d: %w", rank, sharedGPUError(rank, holder, d))
	}
	c := &gpuClaim{l: l, done: make(chan struct{})}
	c.other.Store(-1)
	go c.serve(rank)
	return c, nil
}

// serve answers ranks that find the claim taken: it records their rank and replies with ours.
func (c *gpuClaim) serve(rank int) {
	defer close(c.done)
	for {
		conn, err := c.l.Accept()
		if err != nil {
			return
		}
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		var b [16]byte
		n, _ := io.ReadAtLeast(conn, b[:], 1)
		if other, err := strconv.Atoi(strings.TrimSpace(string(b[:n]))); err == nil {
			c.other.CompareAndSwap(-1, int64(other))
		}
		fmt.Fprintf(conn, "%d\n", rank)
		conn.Close()
	}
}

// intruder is the rank that found this claim taken, or -1.
func (c *gpuClaim) intruder() int {
	if c == nil || c.l == nil {
		return -1
	}
	return int(c.other.Load())
}

func (c *gpuClaim) release() {
	if c == nil || c.l == nil {
		return
	}
	c.l.Close()
	<-c.done
}

func (c *rankComm) Rank() int  { return c.rank }
func (c *rankComm) Ranks() int { return c.ranks }

// streamFor returns s as a CUDA stream of the communicator's device.
func (c *rankComm) streamFor(op string, s gpu.Stream) (C.CUstream, error) {
	if s == nil {
		return nil, nil
	}
	st, ok := s.(*stream)
	if !ok {
		return nil, fmt.Errorf("nccl: %s: the stream is a %T, not a CUDA stream", op, s)
	}
	if st.d.ctx != c.d.ctx {
		return nil, fmt.Errorf("nccl: %s: the stream belongs to device %d, rank %d is on device %d", op, st.d.info.Index, c.rank, c.d.info.Index)
	}
	return st.s, nil
}

// call runs issue (which enqueues NCCL work) with the communicator locked on one OS thread and
// waits until NCCL has enqueued it: non-blocking communicators may still be working on it when
// the call returns. A call that does not complete within the timeout aborts the communicator.
func (c *rankComm) call(op string, issue func() (C.ncclResult_t, string)) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.comm == nil {
		return fmt.Errorf("nccl: %s: the communicator is closed", op)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	r, failed := issue()
	if failed == "" {
		failed = op
	}
	if r != 0 && r != ncclInProgress {
		return ncclCommError(failed, r, c.comm)
	}
	r = C.kl_nccl_wait(c.comm, r, C.double(c.timeout.Milliseconds()))
	if r == C.KL_NCCL_TIMEOUT {
		C.kl_nccl_comm_abort(c.comm)
		c.comm = nil
		c.claim.release()
		return fmt.Errorf("nccl: %s on rank %d did not complete within %v (a rank has stopped or is far behind); the communicator is aborted", op, c.rank, c.timeout)
	}
	if r != 0 {
		return ncclCommError(failed, r, c.comm)
	}
	return nil
}

// enqueue resolves a call's NCCL data type and stream, then runs issue through call; issue
// returns NCCL's result and, when it failed, the name of the NCCL function that did.
func (c *rankComm) enqueue(op string, t gpu.DataType, s gpu.Stream, issue func(dt C.int, st C.CUstream) (C.ncclResult_t, string)) error {
	dt, err := ncclDataType(t)
	if err != nil {
		return err
	}
	st, err := c.streamFor(op, s)
	if err != nil {
		return err
	}
	return c.call(op, func() (C.ncclResult_t, string) { return issue(dt, st) })
}

// goName is a C string the shim set to the NCCL function that failed ("" for none).
func goName(failed *C.char) string {
	if failed == nil {
		return ""
	}
	return C.GoString(failed)
}

func (c *rankComm) collective(op int, name string, send, recv gpu.Ptr, count int, t gpu.DataType, s gpu.Stream) error {
	if count < 0 {
		return fmt.Errorf("nccl: %s: negative count %d", name, count)
	}
	if count > 0 && (send == 0 || recv == 0) {
		return fmt.Errorf("nccl: %s: a null buffer on rank %d", name, c.rank)
	}
	return c.enqueue(name, t, s, func(dt C.int, st C.CUstream) (C.ncclResult_t, string) {
		return C.kl_nccl_rank_collective(c.d.ctx, C.int(op), C.CUdeviceptr(send), C.CUdeviceptr(recv), C.size_t(count), dt, c.comm, st), ""
	})
}

// AllReduce sums count elements over the ranks into recv (send may equal recv).
func (c *rankComm) AllReduce(send, recv gpu.Ptr, count int, t gpu.DataType, s gpu.Stream) error {
	return c.collective(0, "ncclAllReduce", send, recv, count, t, s)
}

// AllGather concatenates the ranks' count elements into recv (Ranks()·count elements).
func (c *rankComm) AllGather(send, recv gpu.Ptr, count int, t gpu.DataType, s gpu.Stream) error {
	return c.collective(1, "ncclAllGather", send, recv, count, t, s)
}

// ReduceScatter sums Ranks()·count elements over the ranks and leaves this rank's block of count.
func (c *rankComm) ReduceScatter(send, recv gpu.Ptr, count int, t gpu.DataType, s gpu.Stream) error {
	return c.collective(2, "ncclReduceScatter", send, recv, count, t, s)
}

// AllToAllV exchanges blocks of varying sizes with every rank (grouped ncclSend/ncclRecv).
func (c *rankComm) AllToAllV(send gpu.Ptr, sendCounts, sendOffsets []int, recv gpu.Ptr, recvCounts, recvOffsets []int, t gpu.DataType, s gpu.Stream) error {
	const op = "AllToAllV"
	for _, l := range []struct {
		name string
		v    []int
	}{{"send counts", sendCounts}, {"send offsets", sendOffsets}, {"receive counts", recvCounts}, {"receive offsets", recvOffsets}} {
		if len(l.v) != c.ranks {
			return fmt.Errorf("nccl: %s: %d %s for %d ranks (one per rank)", op, len(l.v), l.name, c.ranks)
		}
		for j, x := range l.v {
			if x < 0 {
				return fmt.Errorf("nccl: %s: negative %s[%d] = %d", op, l.name, j, x)
			}
		}
	}
	for j := range c.ranks {
		if (sendCounts[j] > 0 && send == 0) || (recvCounts[j] > 0 && recv == 0) {
			return fmt.Errorf("nccl: %s: a null buffer on rank %d", op, c.rank)
		}
	}

	// C arrays: cgo may not keep Go memory that the call does not own past the call, and these
	// are read only during it, but size_t and int differ in width.
	toC := func(v []int) []C.size_t {
		out := make([]C.size_t, len(v))
		for i, x := range v {
			out[i] = C.size_t(x)
		}
		return out
	}
	sc, so, rc, ro := toC(sendCounts), toC(sendOffsets), toC(recvCounts), toC(recvOffsets)
	return c.enqueue(op, t, s, func(dt C.int, st C.CUstream) (C.ncclResult_t, string) {
		var failed *C.char
		r := C.kl_nccl_all_to_allv(c.d.ctx, C.int(c.ranks), C.CUdeviceptr(send), &sc[0], &so[0], C.CUdeviceptr(recv),
			&rc[0], &ro[0], C.size_t(ncclTypes[t].bytes), dt, c.comm, st, (**C.char)(unsafe.Pointer(&failed)))
		return r, goName(failed)
	})
}

// ReduceScatterV sums shard j of send (counts[j] elements, packed in rank order) over the ranks
// into rank j's recv: one ncclReduce per shard, grouped (NCCL has no uneven reduce-scatter).
func (c *rankComm) ReduceScatterV(send gpu.Ptr, counts []int, recv gpu.Ptr, t gpu.DataType, s gpu.Stream) error {
	const op = "ReduceScatterV"
	if len(counts) != c.ranks {
		return fmt.Errorf("nccl: %s: %d shard sizes for %d ranks (one per rank)", op, len(counts), c.ranks)
	}
	cs := make([]C.size_t, len(counts))
	for j, x := range counts {
		if x < 0 {
			return fmt.Errorf("nccl: %s: negative shard size counts[%d] = %d", op, j, x)
		}
		cs[j] = C.size_t(x)
	}
	if send == 0 || (counts[c.rank] > 0 && recv == 0) {
		return fmt.Errorf("nccl: %s: a null buffer on rank %d", op, c.rank)
	}
	return c.enqueue(op, t, s, func(dt C.int, st C.CUstream) (C.ncclResult_t, string) {
		var failed *C.char
		r := C.kl_nccl_reduce_scatter_v(c.d.ctx, C.int(c.ranks), C.CUdeviceptr(send), &cs[0], C.CUdeviceptr(recv),
			C.size_t(ncclTypes[t].bytes), dt, c.comm, st, (**C.char)(unsafe.Pointer(&failed)))
		return r, goName(failed)
	})
}

// Close finalizes and destroys the communicator (every rank must close it); it is safe to call
// twice. A communicator that fails to finalize in time is aborted.
func (c *rankComm) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.comm == nil {
		return nil
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	comm := c.comm
	c.comm = nil
	defer c.claim.release()
	r := C.kl_nccl_wait(comm, C.kl_nccl_comm_finalize(comm), C.double(c.timeout.Milliseconds()))
	if r == C.KL_NCCL_TIMEOUT {
		C.kl_nccl_comm_abort(comm)
		return fmt.Errorf("nccl: ncclCommFinalize on rank %d did not complete within %v; the communicator is aborted", c.rank, c.timeout)
	}
	if r != 0 {
		err := ncclCommError("ncclCommFinalize", r, comm)
		C.kl_nccl_comm_abort(comm)
		return err
	}
	// After a finalize, destroying only frees; InProgress (non-blocking) leaves nothing to wait for.
	if r := C.kl_nccl_comm_destroy(comm); r != 0 && r != ncclInProgress {
		return ncclError("ncclCommDestroy", r)
	}
	return nil
}
