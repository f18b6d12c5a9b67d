package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kernel-labs/kernellabs/internal/bench"
	"github.com/kernel-labs/kernellabs/internal/ranks"
	"github.com/kernel-labs/kernellabs/internal/results"
)

// Peers in a lab of ranks (lab.yaml ranks:): every rank's worker starts the peer script, so the
// scripts are one process per rank as the lab's own variants are, and they form their own
// torch.distributed group (NCCL). Rank 0 picks the group's rendezvous (a free port on its node,
// or a file in the folder the ranks meet in) and shares it through the engine's; each script
// gets its rank, the world size and its local rank in the request and in torchrun's variables,
// builds its rank's inputs from the seed, checks its own output against its own reference and
// times batches of back-to-back runs between host barriers with the slowest rank's time, as the
// engine times a collective (ranks_time.go; klpeer.py does both). The worker then shares every
// rank's reply: the entry is the first rank's failure, else the worst rank's check and, per
// batch, the slowest rank's time — the same entry on every rank, which endRankJob records.

// PeerRanksDriver is implemented by the drivers of labs of ranks whose peers' problem depends on
// the world: the work of one run on n ranks, this rank's block of the inputs. A lab of ranks whose
// problem does not can implement PeerDriver alone.
type PeerRanksDriver interface {
	PeerRankProblem(s *Suite, p Problem, w ranks.World) (map[string]any, Work, error)
}

// PeerRanks is this rank's place in the job and the group its peer script forms
// (PeerRequest.Ranks).
type PeerRanks struct {
	Rank      int `json:"rank"`
	Size      int `json:"size"`
	LocalRank int `json:"local_rank"`
	LocalSize int `json:"local_size"`
	// InitMethod is torch.distributed.init_process_group's: tcp://host:port or file:///path.
	InitMethod string `json:"init_method"`
	// TimeoutS is the process group's timeout, below the job's time limit: a rank that waits on a
	// lost peer ends with an error of its own before the engine kills the job.
	TimeoutS float64 `json:"timeout_s"`
	// BatchTargetMs and MaxBatch choose the runs per timed batch, as the engine does.
	BatchTargetMs float64 `json:"batch_target_ms"`
	MaxBatch      int     `json:"max_batch"`
}

// peerMeeting is where the ranks' peer scripts meet, as rank 0 chose it.
type peerMeeting struct {
	Addr       string `json:"addr"`
	Port       int    `json:"port"`
	InitMethod string `json:"init_method"`
}

// peerOutcome is one rank's result of its peer script, shared with the other ranks.
type peerOutcome struct {
	Reply   *PeerReply `json:"reply,omitempty"`
	Err     string     `json:"err,omitempty"` // the worker's: the script died, or its reply is unreadable
	Crashed bool       `json:"crashed,omitempty"`
}

// peerSharedGPU is why a peer of ranks does not run when ranks share a GPU.
func peerSharedGPU(size, gpus int) string {
	return fmt.Sprintf("a peer of ranks runs torch.distributed on NCCL, which needs one GPU per rank: %d ranks share this node's %d GPU(s) "+
		"(the course's kernels run; run one rank per GPU for the peer)", size, gpus)
}

// runRankPeer runs a peer variant on this rank (see above); every rank of the job runs it.
func (w *worker) runRankPeer(s *Suite, v *Variant, p Problem, e results.Entry) results.Entry {
	rk := w.rk
	if rk.sharedGPU {
		e.Status, e.Error = results.StatusSkipped, peerSharedGPU(rk.world.Size, rk.gpus)
		return e
	}
	params, work, err := w.rankPeerProblem(s, p)
	if why, ok := skipReason(err); ok {
		e.Status, e.Error = results.StatusSkipped, why
		return e
	}
	if err != nil {
		e.Error = "describing the problem for the peer: " + err.Error()
		return e
	}
	meet, err := w.peerRendezvous()
	if err != nil {
		e.Error = err.Error()
		return e
	}
	req := w.rankPeerRequest(s, v, p, params, meet)
	stdout, stderr, runErr := w.startPeer(filepath.Join(w.man.Dir, v.Peer), req, peerRankEnv(rk.world, meet)...)
	mine := peerOutcomeOf(v.Peer, stdout, stderr, runErr)
	msg := rankMsg{}
	if msg.Data, err = json.Marshal(mine); err != nil {
		msg.Data = mustJSON(peerOutcome{Err: fmt.Sprintf("the peer %s: its reply cannot be sent to the other ranks: %v", v.Peer, err)})
	}
	all, err := w.agree("peer-reply", msg)
	if err != nil {
		e.Error = err.Error()
		return e
	}
	outs := make([]peerOutcome, len(all))
	for r, m := range all {
		if err := json.Unmarshal(m.Data, &outs[r]); err != nil {
			e.Error = fmt.Sprintf("rank %d's peer reply: %v", r, err)
			return e
		}
	}
	return mergePeerOutcomes(e, outs, work, s.Tolerance)
}

// rankPeerProblem is the problem as the driver describes it for this rank's peer.
func (w *worker) rankPeerProblem(s *Suite, p Problem) (map[string]any, Work, error) {
	switch d := w.labDriver().(type) {
	case PeerRanksDriver:
		return d.PeerRankProblem(s, p, w.rk.world)
	case PeerDriver:
		return d.PeerProblem(s, p)
	}
	return nil, Work{}, fmt.Errorf("lab %s has peer variants, but its driver does not describe problems for them (lab.PeerRanksDriver or lab.PeerDriver)", w.man.Name)
}

// labDriver is the lab's driver (a rank worker's w.drv is the rankDriver around it).
func (w *worker) labDriver() Driver {
	if rd, ok := w.drv.(rankDriver); ok {
		return rd.Driver
	}
	return w.drv
}

func (w *worker) rankPeerRequest(s *Suite, v *Variant, p Problem, params map[string]any, meet peerMeeting) PeerRequest {
	opts := bench.Default
	if w.spec.Quick {
		opts = bench.Quick
	}
	world := w.rk.world
	timeout := max(w.man.Timeout/2, 10*time.Second)
	return PeerRequest{Lab: w.man.Name, Suite: s.Name, Variant: v.Name, Problem: p.Name, Params: params,
		VariantParams: v.Params, Seed: w.env.RNG.Uint64(), Device: w.dev.Info().Index, Tolerance: s.Tolerance,
		FlushL2: s.FlushL2, Bench: peerBench(opts),
		Ranks: &PeerRanks{Rank: world.Rank, Size: world.Size, LocalRank: world.LocalRank, LocalSize: max(world.LocalSize, 1),
			InitMethod: meet.InitMethod, TimeoutS: timeout.Seconds(),
			BatchTargetMs: float64(batchTarget) / 1e6, MaxBatch: maxBatch}}
}

// peerRendezvous is where this job's peer scripts meet: rank 0 chooses, every rank learns it.
func (w *worker) peerRendezvous() (peerMeeting, error) {
	rk := w.rk
	var msg rankMsg
	if rk.world.Rank == 0 {
		m, err := newPeerMeeting(rk.world)
		if err != nil {
			msg.Err = err.Error()
		} else {
			msg.Data = mustJSON(m)
		}
	}
	all, err := w.agree("peer-rendezvous", msg)
	if err != nil {
		return peerMeeting{}, err
	}
	if all[0].Err != "" {
		return peerMeeting{}, fmt.Errorf("rank 0 could not set up the peers' rendezvous: %s", all[0].Err)
	}
	var m peerMeeting
	if err := json.Unmarshal(all[0].Data, &m); err != nil {
		return peerMeeting{}, fmt.Errorf("rank 0's rendezvous for the peers: %w", err)
	}
	return m, nil
}

// newPeerMeeting chooses, on rank 0, the rendezvous of the peer scripts: rank 0's address as the
// ranks reach it (the host of their own TCP rendezvous; this node's name when they meet through a
// folder; the loopback for ranks of one node) and a port free there; when the ranks meet through
// a shared folder, a fresh file in it (torch's file:// init, which needs no address).
func newPeerMeeting(world ranks.World) (peerMeeting, error) {
	host := "127.0.0.1"
	dir, viaFiles := strings.CutPrefix(world.Rendezvous, "file:")
	switch {
	case viaFiles:
		host = ranks.Hostname()
	case world.Rendezvous != "":
		h, _, err := net.SplitHostPort(world.Rendezvous)
		if err != nil {
			return peerMeeting{}, fmt.Errorf("the ranks' rendezvous %q: %w", world.Rendezvous, err)
		}
		host = h
	}
	bind := ":0" // every interface: the other nodes' ranks connect to rank 0's address
	if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) {
		bind = net.JoinHostPort(host, "0")
	}
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return peerMeeting{}, fmt.Errorf("finding a free port for the peers' torch.distributed group: %w", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	m := peerMeeting{Addr: host, Port: port, InitMethod: "tcp://" + net.JoinHostPort(host, strconv.Itoa(port))}
	if viaFiles {
		// A name no earlier group used: torch's file store must not find an old file.
		f := filepath.Join(dir, fmt.Sprintf("torch-peer-%d-%d", os.Getpid(), time.Now().UnixNano()))
		m.InitMethod = "file://" + f
	}
	return m, nil
}

// peerRankEnv is torchrun's variables for the peer script, pointing at the peers' own rendezvous
// (the worker's MASTER_ADDR and MASTER_PORT, where labrun's ranks meet, are replaced).
func peerRankEnv(world ranks.World, m peerMeeting) []string {
	return []string{
		ranks.EnvRank + "=" + strconv.Itoa(world.Rank), ranks.EnvWorldSize + "=" + strconv.Itoa(world.Size),
		ranks.EnvLocalRank + "=" + strconv.Itoa(world.LocalRank), ranks.EnvLocalSize + "=" + strconv.Itoa(max(world.LocalSize, 1)),
		ranks.EnvMasterAddr + "=" + m.Addr, ranks.EnvMasterPort + "=" + strconv.Itoa(m.Port),
	}
}

// peerOutcomeOf reads one rank's script's result: its reply, or why there is none.
func peerOutcomeOf(script string, stdout, stderr []byte, runErr error) peerOutcome {
	r, err := ParsePeerReply(stdout)
	switch {
	case runErr != nil && err != nil: // it died before its reply: a crash, as a kernel's would be
		return peerOutcome{Err: fmt.Sprintf("the peer %s: %v%s", script, runErr, tailOf(stderr)), Crashed: true}
	case err != nil:
		return peerOutcome{Err: fmt.Sprintf("the peer %s: %v%s", script, err, tailOf(stderr))}
	}
	return peerOutcome{Reply: &r}
}

// errRankTimes is the error of peers whose ranks timed different numbers of batches.
var errRankTimes = errors.New("the ranks' peers timed different numbers of batches: a peer of ranks must decide its repetitions together (klpeer.py's time does)")

// mergePeerOutcomes makes the job's entry from every rank's outcome: the first rank whose peer
// said wrong, else failed (its own words: the other ranks' errors often follow from it, a timeout
// waiting for it), else the first rank whose script died or answered badly, each with the other
// ranks' failures in a line; else the first rank that skipped; when every rank's peer is ok, the worst rank's check and per batch the slowest rank's
// time.
func mergePeerOutcomes(e results.Entry, outs []peerOutcome, work Work, tol float64) results.Entry {
	tag := func(r int) string {
		if len(outs) == 1 {
			return ""
		}
		return fmt.Sprintf("rank %d: ", r)
	}
	// The other ranks' failures, after the one the entry is: often a consequence, sometimes a clue.
	also := func(first int) string {
		var b strings.Builder
		for r, o := range outs {
			why := o.Err
			if o.Reply != nil && (o.Reply.Status == results.StatusWrong || o.Reply.Status == results.StatusFailed) {
				why = o.Reply.Error
				if why == "" {
					why = o.Reply.Status
				}
			}
			if r != first && why != "" {
				fmt.Fprintf(&b, "\n(also rank %d: %s)", r, firstLine(why))
			}
		}
		return b.String()
	}
	for _, status := range []string{results.StatusWrong, results.StatusFailed} {
		for r, o := range outs {
			if o.Reply != nil && o.Reply.Status == status {
				out := peerEntry(e, *o.Reply, work, tol)
				out.Error = tag(r) + out.Error + also(r)
				if out.Check != nil && len(outs) > 1 {
					out.Check.Note = fmt.Sprintf("rank %d", r)
				}
				return out
			}
		}
	}
	for r, o := range outs {
		if o.Reply == nil {
			e.Status, e.Error = results.StatusFailed, tag(r)+o.Err+also(r)
			if o.Crashed {
				e.Status = results.StatusCrashed
			}
			return e
		}
	}
	for r, o := range outs {
		if o.Reply.Status == results.StatusSkipped {
			e.Status, e.Error = results.StatusSkipped, tag(r)+o.Reply.Error
			return e
		}
	}
	merged := *outs[0].Reply
	merged.SamplesMs = append([]float64(nil), merged.SamplesMs...)
	worst := 0
	for r, o := range outs[1:] {
		if len(o.Reply.SamplesMs) != len(merged.SamplesMs) {
			e.Error = fmt.Sprintf("%v (rank 0: %d, rank %d: %d)", errRankTimes, len(merged.SamplesMs), r+1, len(o.Reply.SamplesMs))
			return e
		}
		for i, x := range o.Reply.SamplesMs {
			merged.SamplesMs[i] = math.Max(merged.SamplesMs[i], x)
		}
		if o.Reply.Check.RelErr > outs[worst].Reply.Check.RelErr {
			worst = r + 1
		}
	}
	merged.Check = outs[worst].Reply.Check
	out := peerEntry(e, merged, work, tol)
	if len(outs) > 1 {
		out.Check.Note = fmt.Sprintf("all %d ranks correct; largest error on rank %d", len(outs), worst)
	}
	if merged.Batch > 0 {
		out.Data["batch"] = merged.Batch
	}
	return out
}
