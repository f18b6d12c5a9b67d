package lab

import (
	"encoding/json"
	"fmt"
	"strings"
	"unsafe"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/ranks"
)

// What a driver of a lab of ranks gets from its Env: its place in the job, buffers that every
// rank of the node maps (the course's form of symmetric memory), the signal words of the device
// barrier, and the vendor communicator of the ranks.

// World is this process's place in its job of ranks: rank 0 of 1 in a lab of one process.
func (e *Env) World() ranks.World {
	if e.rk == nil {
		return ranks.World{Size: 1, LocalSize: 1}
	}
	return e.rk.world
}

// SharesGPU says whether several ranks of this job run on one GPU: their kernels are checked as
// on separate GPUs, but their times are no performance figures and NCCL cannot run.
func (e *Env) SharesGPU() bool { return e.rk != nil && e.rk.sharedGPU }

// Reachable says whether this rank can load and store rank peer's shared buffers (the ranks of
// one node can; another node's need the network, which only the NCCL baselines cross).
func (e *Env) Reachable(peer int) bool {
	if e.rk == nil {
		return peer == 0
	}
	return peer >= 0 && peer < len(e.rk.hosts) && e.rk.hosts[peer] == e.rk.hosts[e.rk.world.Rank]
}

// AllReachable says whether every rank can reach every other's shared buffers (one node), or
// why not.
func (e *Env) AllReachable() (bool, string) {
	w := e.World()
	for r := range w.Size {
		if !e.Reachable(r) {
			return false, fmt.Sprintf("rank %d runs on %s, another node than rank %d (%s): the course's kernels reach peers by load and store, "+
				"within one node; across nodes only the NCCL baselines run", r, e.rk.hosts[r], w.Rank, e.rk.hosts[w.Rank])
		}
	}
	return true, ""
}

// AllGather exchanges bytes between the ranks (every rank calls it at the same point) and returns
// every rank's, by rank.
func (e *Env) AllGather(data []byte) ([][]byte, error) {
	if e.rk == nil {
		return [][]byte{data}, nil
	}
	all, err := e.w.agree("allgather", rankMsg{Data: mustJSON(data)})
	if err != nil {
		return nil, err
	}
	out := make([][]byte, len(all))
	for r, m := range all {
		if err := json.Unmarshal(m.Data, &out[r]); err != nil {
			return nil, fmt.Errorf("rank %d's data: %w", r, err)
		}
	}
	return out, nil
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// Shared is a buffer that every rank allocates (each its own length) and every rank of the node
// maps: kernels reach a peer's part through Peers, or through Table on the device. The engine
// frees it with the case.
type Shared[T gpu.Elem] struct {
	Mine  *gpu.Buffer[T]      // this rank's part: fill it, read it, pass it to kernels
	Peers []gpu.Ptr           // every rank's part as this process maps it, by rank (0 where unreachable)
	Lens  []int               // every rank's length
	Table *gpu.Buffer[uint64] // Peers on this rank's device: the table of peer pointers a kernel takes
}

// Ptr is rank r's part, as this process maps it.
func (s *Shared[T]) Ptr(r int) gpu.Ptr { return s.Peers[r] }

// AllocShared allocates this rank's n elements of a shared buffer and maps every reachable
// peer's: every rank calls it at the same point, each with its own n. Contents undefined.
func AllocShared[T gpu.Elem](e *Env, name string, n int) (*Shared[T], error) {
	s, _, err := allocShared[T](e, name, n)
	return s, err
}

// SharedOutput is AllocShared for an output that peers write (a push): the engine fills this
// rank's part with p before every checked run (the device barrier that starts every run keeps a
// peer's writes after it), and Check reads it through Outputs.
func SharedOutput[T gpu.Elem](e *Env, name string, n int, p Poison) (*Shared[T], error) {
	return sharedPoisoned[T](e, name, n, p, true)
}

// SharedScratch is AllocShared for a buffer that peers write and the engine refills with p
// before every checked run without checking it (a staging buffer that a kernel must not read
// before its data has arrived).
func SharedScratch[T gpu.Elem](e *Env, name string, n int, p Poison) (*Shared[T], error) {
	return sharedPoisoned[T](e, name, n, p, false)
}

func sharedPoisoned[T gpu.Elem](e *Env, name string, n int, p Poison, output bool) (*Shared[T], error) {
	var zero T
	if p.fill32 && unsafe.Sizeof(zero) != 4 || p.src != nil {
		return nil, fmt.Errorf("%s: a shared output takes a byte or 32-bit poison of its own type", name)
	}
	s, cb, err := allocShared[T](e, name, n)
	if err != nil {
		return nil, err
	}
	cb.output = output
	b, st := s.Mine, e.Stream
	if p.fill32 {
		cb.poison = func() error { return b.Fill32(p.word, st) }
	} else {
		cb.poison = func() error { return b.FillBytes(p.b, st) }
	}
	return s, nil
}

func allocShared[T gpu.Elem](e *Env, name string, n int) (*Shared[T], *caseBuf, error) {
	w := e.World()
	s := &Shared[T]{Peers: make([]gpu.Ptr, w.Size), Lens: make([]int, w.Size)}
	var mine *caseBuf
	if e.rk == nil || w.Size == 1 {
		b, err := gpu.Alloc[T](e.Device, n)
		if err != nil {
			return nil, nil, fmt.Errorf("allocating %s: %w", name, err)
		}
		mine = track(e, name, b)
		s.Mine, s.Peers[0], s.Lens[0] = b, b.DevicePtr(), n
	} else {
		b, handle, err := gpu.AllocShared[T](e.Device, n)
		type offer struct {
			Handle []byte `json:"handle"`
			N      int    `json:"n"`
		}
		var msg rankMsg
		if err != nil {
			msg.Err = err.Error()
		} else {
			mine = track(e, name, b)
			msg.Data = mustJSON(offer{handle, n})
		}
		all, aerr := e.w.agree("shared", msg)
		if aerr != nil {
			return nil, nil, aerr
		}
		for r, m := range all {
			if m.Err != "" {
				return nil, nil, fmt.Errorf("rank %d: allocating %s (shared): %s", r, name, m.Err)
			}
		}
		s.Mine = b
		for r, m := range all {
			var o offer
			if err := json.Unmarshal(m.Data, &o); err != nil {
				return nil, nil, fmt.Errorf("rank %d's %s: %w", r, name, err)
			}
			s.Lens[r] = o.N
			switch {
			case r == w.Rank:
				s.Peers[r] = b.DevicePtr()
			case e.Reachable(r):
				pb, err := gpu.OpenSharedBuffer[T](e.Device, o.Handle, o.N)
				if err != nil {
					return nil, nil, fmt.Errorf("mapping rank %d's %s: %w", r, name, err)
				}
				track(e, fmt.Sprintf("%s of rank %d", name, r), pb)
				s.Peers[r] = pb.DevicePtr()
			}
		}
	}
	tab := make([]uint64, w.Size)
	for r, p := range s.Peers {
		tab[r] = uint64(p)
	}
	t, err := Upload(e, name+" (table of peer pointers)", tab)
	if err != nil {
		return nil, nil, err
	}
	s.Table = t
	return s, mine, nil
}

// SignalWords is the number of 32-bit words of one rank's signals for n ranks (kl.cuh's
// KL_SIGNAL_WORDS): the launch count, the blocks arrived, and one start and one end flag per rank.
func SignalWords(n int) int { return 2 + 2*n }

// Signals is the table of every rank's signal words for the device barrier (kl.cuh's
// kl_rank_barrier*), allocated zeroed once per case: kernels take it as `unsigned* const* sig`.
func (e *Env) Signals() (*gpu.Buffer[uint64], error) {
	if e.signals != nil && e.signalsOf == e.current {
		return e.signals.Table, nil
	}
	s, err := AllocShared[uint32](e, "signals of the device barrier", SignalWords(e.World().Size))
	if err != nil {
		return nil, fmt.Errorf("the signals of the device barrier: %w", err)
	}
	// Zeroed before any peer can write (peers write only in a run, after every rank prepared).
	if err := s.Mine.Fill32(0, e.Stream); err != nil {
		return nil, err
	}
	if err := e.Stream.Synchronize(); err != nil {
		return nil, err
	}
	e.signals, e.signalsOf = s, e.current
	return s.Table, nil
}

// BarrierEntry is the kernel of the device barrier (kl.cuh's kl_rank_barrier in a kernel file of
// the lab, listed under helpers: in lab.yaml).
const BarrierEntry = "kl_rank_barrier"

// DeviceBarrier queues on s a barrier of every rank on the device: no rank's work after it starts
// before every rank's work before it is done, with no host in between (flags with release and
// acquire semantics in the signal words).
func (e *Env) DeviceBarrier(s gpu.Stream) error {
	w := e.World()
	if w.Size == 1 {
		return nil
	}
	sig, err := e.Signals()
	if err != nil {
		return err
	}
	k, err := e.KernelByEntry(BarrierEntry)
	if err != nil {
		return fmt.Errorf("%w (list the file that defines %s under helpers: in lab.yaml)", err, BarrierEntry)
	}
	threads := (w.Size + 31) / 32 * 32
	return gpu.Launch(k, gpu.LaunchConfig{Grid: gpu.D1(1), Block: gpu.D1(threads), Stream: s}, sig, int32(w.Rank), int32(w.Size))
}

// RankCommunicator is the vendor communicator of the job's ranks (NCCL's ncclCommInitRank, the
// id made by rank 0 and sent through the rendezvous), opened on first use and kept for the
// worker's life. Every rank calls it at the same point. A job whose ranks share a GPU gets a skip:
// NCCL needs a GPU per rank.
func (e *Env) RankCommunicator() (gpu.RankCommunicator, error) {
	if e.rk == nil {
		return nil, fmt.Errorf("a communicator of ranks is for labs of ranks (lab.yaml ranks:)")
	}
	rk := e.rk
	if rk.sharedGPU {
		return nil, Skip("NCCL needs one GPU per rank: %d ranks share this node's %d GPU(s) (the course's kernels run; run one rank per GPU for NCCL)",
			rk.world.Size, rk.gpus)
	}
	if rk.commOpen {
		return rk.comm, rk.commErr
	}
	rk.commOpen = true
	var msg rankMsg
	if rk.world.Rank == 0 {
		id, err := gpu.NewCommID(e.Device)
		if err != nil {
			msg.Err = err.Error()
		}
		msg.Data = mustJSON(id)
	}
	all, err := e.w.agree("nccl-id", msg)
	if err != nil {
		return nil, err
	}
	if all[0].Err != "" {
		rk.commErr = fmt.Errorf("rank 0 could not make the communicator's id: %s", all[0].Err)
		if strings.Contains(all[0].Err, gpu.ErrNoCollectives.Error()) { // the backend has no NCCL: not a failure
			rk.commErr = Skip("%s", all[0].Err)
		}
		return nil, rk.commErr
	}
	var id []byte
	if err := json.Unmarshal(all[0].Data, &id); err != nil {
		rk.commErr = err
		return nil, err
	}
	c, err := gpu.OpenRankCommunicator(e.Device, id, rk.world.Rank, rk.world.Size)
	if aerr := e.w.agreeErr("nccl-open", err); aerr != nil {
		if c != nil {
			c.Close()
		}
		rk.commErr = aerr
		return nil, aerr
	}
	rk.comm = c
	return c, nil
}

// SideStream is a second stream on env's device, for schedules that overlap two streams of work
// (a copy beside a GEMM); it lives as long as the worker. Work on it is ordered against Stream
// with events (NewEvent).
func (e *Env) SideStream() (gpu.Stream, error) {
	if e.side != nil {
		return e.side, nil
	}
	s, err := e.Device.NewStream()
	if err != nil {
		return nil, fmt.Errorf("a second stream: %w", err)
	}
	e.side = s
	return s, nil
}

// NewEvent makes an event on env's device for the current case; the engine closes it with the case.
func NewEvent(e *Env) (gpu.Event, error) {
	ev, err := e.Device.NewEvent()
	if err != nil {
		return nil, err
	}
	a := e.arena()
	a.bufs = append(a.bufs, &caseBuf{name: "an event", free: ev.Close, read: func() ([]byte, error) { return nil, nil }})
	return ev, nil
}

// Poison32 fills every 32-bit word with w: a NaN of a payload of its own, say, so that a value
// computed from this buffer tells itself from an output left unwritten (PoisonNaN32).
func Poison32(w uint32) Poison { return Poison{word: w, fill32: true} }
