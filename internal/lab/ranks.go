package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/kernel-labs/kernellabs/internal/check"
	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/ranks"
	"github.com/kernel-labs/kernellabs/internal/results"
)

// Labs of ranks (lab.yaml ranks:): one process per rank, as NCCL, nccl-tests and every training
// framework run. The engine starts the rank processes of one node itself (ranks_supervise.go),
// or each labrun of a job that mpirun, srun or torchrun started runs one of them. Every rank
// process runs the same jobs in the same order; the engine keeps them in step with host-side
// agreements (after Prepare, after each checked run, between timed batches), merges what they
// found (the worst rank's check, the slowest rank's time) and rank 0 alone reports and records.

// RankSpec is lab.yaml's ranks: declaration.
type RankSpec struct {
	// Emu is the world size on the emulator when --ranks is not given (default 2). On GPUs it is
	// the number of GPUs of the machine.
	Emu int `yaml:"emu"`
	// Grade is the world size of a grading test that names none (default 2).
	Grade int `yaml:"grade"`
}

func (s *RankSpec) validate() error {
	if s == nil {
		return nil
	}
	for _, n := range []struct {
		name string
		v    int
	}{{"emu", s.Emu}, {"grade", s.Grade}} {
		if n.v < 0 || n.v > maxRanks {
			return fmt.Errorf("%s: %d must be 1 to %d ranks", n.name, n.v, maxRanks)
		}
	}
	return nil
}

// maxRanks bounds a job of ranks that labrun starts itself or that a launcher started.
const maxRanks = 64

// DefaultRanks is the world size of a run of the lab without --ranks: the emulator's from
// lab.yaml (2 unless it says otherwise), else the GPUs of the machine. 0 for a lab of one process.
func (m *Manifest) DefaultRanks(emulated bool, gpus int) int {
	if m.Ranks == nil {
		return 0
	}
	if emulated {
		return max(m.Ranks.Emu, 2)
	}
	return max(gpus, 1)
}

// GradeRanks is the world size of a grading test that names none.
func (m *Manifest) GradeRanks() int {
	if m.Ranks == nil {
		return 0
	}
	return max(m.Ranks.Grade, 2)
}

// HasRanks says whether the lab runs as a job of ranks.
func (m *Manifest) HasRanks() bool { return m.Ranks != nil }

// rankEnvFixed is what labrun adds to the environment of every rank process: NVLink SHARP
// (multicast objects) is off, because the machines the course is measured on lend GPUs without
// the fabric manager's multicast support, and NCCL, PyTorch's symmetric memory and NVSHMEM would
// each fail to create their communicators trying it.
var rankEnvFixed = []string{"NCCL_NVLS_ENABLE=0", "TORCH_SYMM_MEM_DISABLE_MULTICAST=1", "NVSHMEM_DISABLE_NVLS=1"}

// SharedGPULabel marks times measured with several ranks on one GPU.
const SharedGPULabel = "ranks share a GPU, not a performance figure"

// ---- the worker side: a rank process ----

// rankState is a rank worker's place in its job and the per-case state of the collectives.
type rankState struct {
	world     ranks.World
	group     ranks.Group
	hosts     []string // by rank: which node each rank runs on
	gpus      int      // devices this node's backend has
	sharedGPU bool     // several ranks of this node on one GPU (never on the emulator)
	job       int      // the job in flight, for the agreements' step check

	// Vendor communicator of the ranks (NCCL), opened on first use.
	comm     gpu.RankCommunicator
	commErr  error
	commOpen bool
}

// rankMsg is one rank's message in an agreement.
type rankMsg struct {
	Job   int             `json:"job"`
	Tag   string          `json:"tag"`
	Done  bool            `json:"done,omitempty"` // the rank has finished the job (its entry follows)
	Err   string          `json:"err,omitempty"`
	Skip  bool            `json:"skip,omitempty"`
	Data  json.RawMessage `json:"data,omitempty"`
	Entry *results.Entry  `json:"entry,omitempty"`
}

// peerEnded is the error of a rank whose job another rank ended (it failed, or was skipped).
type peerEnded struct {
	rank int
	why  string
}

// peerEndedMark is in the error of every job a peer ended, so that rank 0 reports the cause.
const peerEndedMark = " ended this variant ("

func (e *peerEnded) Error() string {
	return fmt.Sprintf("rank %d%s%s)", e.rank, peerEndedMark, e.why)
}

// joinRanks puts the worker in its job of ranks: the World from the launcher's environment,
// the rendezvous met, the ranks' nodes exchanged.
func (w *worker) joinRanks(gpus int) error {
	world, ok, err := ranks.FromEnv(os.Getenv)
	if err != nil {
		return err
	}
	if !ok {
		world = ranks.World{Size: 1, LocalSize: 1, Launcher: "labrun"}
	}
	if w.spec.Ranks > 0 && world.Size != w.spec.Ranks {
		return fmt.Errorf("this rank process is rank %d of %d (from %s), but its jobs are for %d ranks", world.Rank, world.Size, world.Launcher, w.spec.Ranks)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	g, err := ranks.Meet(ctx, world)
	if err != nil {
		return fmt.Errorf("rank %d of %d: meeting the other ranks: %w", world.Rank, world.Size, err)
	}
	w.rk = &rankState{world: world, group: g, gpus: gpus}
	// Every rank says where it runs and on which GPU (its UUID: with a GPU per task, as srun can
	// bind them, every process sees "device 0"), so that all agree whether some share one.
	type place struct{ Host, GPU string }
	info := w.dev.Info()
	gpuID := info.UUID
	if gpuID == "" {
		gpuID = fmt.Sprintf("%s#%d", info.PCIBusID, info.Index)
	}
	mine, _ := json.Marshal(place{ranks.Hostname(), gpuID})
	all, err := g.AllGather(ctx, mine)
	if err != nil {
		g.Close()
		return err
	}
	seen := map[place]bool{}
	for r, b := range all {
		var p place
		if err := json.Unmarshal(b, &p); err != nil {
			g.Close()
			return fmt.Errorf("rank %d's place: %w", r, err)
		}
		w.rk.hosts = append(w.rk.hosts, p.Host)
		w.rk.sharedGPU = w.rk.sharedGPU || (seen[p] && !info.Emulated)
		seen[p] = true
	}
	return nil
}

// rankDevice is the device a rank process takes: its rank on the node modulo the node's
// devices, so that several ranks share a GPU when there are more ranks than GPUs.
func rankDevice(be gpu.Backend) (int, int, error) {
	n, err := be.DeviceCount()
	if err != nil {
		return 0, 0, err
	}
	if n < 1 {
		return 0, 0, fmt.Errorf("the %s backend has no device", be.Name())
	}
	world, _, err := ranks.FromEnv(os.Getenv)
	if err != nil {
		return 0, 0, err
	}
	return world.LocalRank % n, n, nil
}

func (rk *rankState) close() {
	if rk == nil {
		return
	}
	if rk.comm != nil {
		rk.comm.Close()
	}
	rk.group.Close()
}

// agree sends this rank's message of step tag and returns every rank's. A rank that has already
// finished the job ends it here for every other (a *peerEnded error); ranks at different steps
// are a bug of the engine or the driver, which ends the worker.
func (w *worker) agree(tag string, m rankMsg) ([]rankMsg, error) {
	rk := w.rk
	m.Job, m.Tag = rk.job, tag
	b, _ := json.Marshal(m)
	// The parent learns where each rank waits, to name the rank that hangs when a job times out.
	w.emit(Event{Type: "wait", Msg: tag})
	raw, err := rk.group.AllGather(context.Background(), b)
	w.emit(Event{Type: "wait"})
	if err != nil {
		// A rank died (or its connection did): no job can run on this group any more. Stop, so
		// that the parent blames the job in flight and starts a fresh group for the rest.
		w.emit(Event{Type: "fatal", Msg: fmt.Sprintf("rank %d %s at %s: %v", rk.world.Rank, lostMark, tag, err)})
		os.Exit(2)
	}
	all := make([]rankMsg, len(raw))
	for r, x := range raw {
		if err := json.Unmarshal(x, &all[r]); err != nil {
			return nil, fmt.Errorf("rank %d sent a message rank %d cannot read: %w", r, rk.world.Rank, err)
		}
	}
	for r, x := range all {
		if x.Done && !m.Done {
			why := "it finished first"
			if x.Entry != nil && x.Entry.Error != "" {
				why = firstLine(x.Entry.Error)
			}
			return all, &peerEnded{rank: r, why: why}
		}
		if x.Job != m.Job || (x.Tag != tag && !x.Done && !m.Done) {
			w.emit(Event{Type: "fatal", Msg: fmt.Sprintf("ranks out of step: rank %d is at job %d, %s; rank %d at job %d, %s",
				rk.world.Rank, m.Job, tag, r, x.Job, x.Tag)})
			os.Exit(2)
		}
	}
	return all, nil
}

// agreeErr shares this rank's outcome of a step and returns the first rank's failure (by rank),
// a skip staying a skip: every rank then goes on, or stops, together.
func (w *worker) agreeErr(tag string, err error) error {
	m := rankMsg{}
	if err != nil {
		m.Err = err.Error()
		_, m.Skip = skipReason(err)
	}
	all, aerr := w.agree(tag, m)
	if aerr != nil {
		return aerr
	}
	r := causeOf(all)
	switch {
	case r < 0:
		return nil
	case r == w.rk.world.Rank:
		return err
	case all[r].Skip:
		return Skip("%s", all[r].Err)
	}
	return fmt.Errorf("rank %d: %s", r, all[r].Err)
}

// causeOf is the rank whose error the ranks agree on (-1 when none failed): the first that
// failed, but a rank whose kernel faulted stops signalling, and the ranks waiting for it in a
// device barrier run out of time, so a time-out is the answer only when no rank failed otherwise.
func causeOf(all []rankMsg) int {
	cause := -1
	for r, x := range all {
		if x.Err != "" && (cause < 0 || timedOut(all[cause].Err) && !timedOut(x.Err)) {
			cause = r
		}
	}
	return cause
}

// timedOut reports whether an error is a kernel's running past the device's time limit (the
// watchdog's, or the emulator's).
func timedOut(err string) bool {
	return strings.Contains(err, "EMU_TIMEOUT") || strings.Contains(err, "CUDA_ERROR_LAUNCH_TIMEOUT")
}

// endRankJob ends job i on this rank: it waits until every rank has finished it (answering the
// agreements of ranks that have not, which ends their job), and on rank 0 returns the job's
// entry: the first rank's failure of its own (by rank), else rank 0's.
func (w *worker) endRankJob(i int, e results.Entry) results.Entry {
	rk := w.rk
	rk.job = i
	var all []rankMsg
	for {
		var err error
		if all, err = w.agree("done", rankMsg{Done: true, Entry: &e}); err != nil {
			e.Status, e.Error = results.StatusFailed, err.Error()
			return e
		}
		finished := true
		for _, x := range all {
			finished = finished && x.Done
		}
		if finished {
			break
		}
	}
	e.Data = withRankData(e.Data, rk)
	if e.Status == results.StatusOK {
		e.Data = withTiming(e.Data, w.timing)
	}
	w.timing = nil
	if rk.world.Rank != 0 {
		return e
	}
	for r, x := range all {
		if x.Entry == nil || x.Entry.Status == results.StatusOK || x.Entry.Status == results.StatusSkipped {
			continue
		}
		if strings.Contains(x.Entry.Error, peerEndedMark) {
			continue // ended by another rank's failure: that rank's entry says why
		}
		if r == 0 {
			return e
		}
		out := e
		out.Status, out.Check = x.Entry.Status, x.Entry.Check
		out.Error = fmt.Sprintf("rank %d: %s", r, x.Entry.Error)
		out.Data = x.Entry.Data
		out.Time, out.GBps, out.TFLOPs, out.PerOpUs = nil, 0, 0, 0
		return out
	}
	return e
}

// withRankData records the world size (and that the ranks shared a GPU) in an entry's data.
func withRankData(d map[string]any, rk *rankState) map[string]any {
	if d == nil {
		d = map[string]any{}
	}
	d["ranks"] = rk.world.Size
	if rk.sharedGPU {
		d["shared_gpu"] = true
		d["note"] = SharedGPULabel
	}
	return d
}

// rankDriver keeps the ranks in step around a driver: each rank prepares its part, and they go
// on only if every rank could.
type rankDriver struct {
	Driver
	w *worker
}

func (d rankDriver) Prepare(env *Env, s *Suite, p Problem) (Case, error) {
	c, err := d.Driver.Prepare(env, s, p)
	if aerr := d.w.agreeErr("prepare", err); aerr != nil {
		return nil, aerr // the engine frees what the case allocated
	}
	return &rankCase{Case: c, w: d.w}, nil
}

// rankCase runs a case on every rank: a run ends when every rank's work is done, and the check
// is the worst rank's.
type rankCase struct {
	Case
	w *worker
}

// Run launches the variant, waits for this rank's stream and then for every rank.
func (c *rankCase) Run(v *Variant) error {
	err := c.Case.Run(v)
	if err == nil {
		err = c.w.env.Stream.Synchronize()
	}
	return c.w.agreeErr("run", err)
}

// Record passes on the case's own data beyond the timings (Recorder; nothing for a case that
// keeps none): each rank records its own, and rank 0's become the entry's, as all its data.
func (c *rankCase) Record(v *Variant) (map[string]any, error) {
	if r, ok := c.Case.(Recorder); ok {
		return r.Record(v)
	}
	return nil, nil
}

// Check checks this rank's outputs and returns the worst rank's report (the first failing one,
// else the one with the largest error), the same on every rank.
func (c *rankCase) Check(v *Variant, out *Outputs) (check.Report, error) {
	rep, err := c.Case.Check(v, out)
	m := rankMsg{}
	if err != nil {
		m.Err = err.Error()
	} else {
		m.Data, _ = json.Marshal(jsonSafeReport(rep))
	}
	all, aerr := c.w.agree("check", m)
	if aerr != nil {
		return check.Report{}, aerr
	}
	return mergeReports(all, c.w.rk.world.Rank, rep, err)
}

func jsonSafeReport(r check.Report) check.Report {
	e := jsonSafeEntry(results.Entry{Check: &r})
	return *e.Check
}

func mergeReports(all []rankMsg, me int, mine check.Report, myErr error) (check.Report, error) {
	var worst check.Report
	worstRank := -1
	for r, x := range all {
		if x.Err != "" {
			if r == me {
				return check.Report{}, myErr
			}
			return check.Report{}, fmt.Errorf("rank %d: %s", r, x.Err)
		}
		rep := mine
		if r != me {
			if err := json.Unmarshal(x.Data, &rep); err != nil {
				return check.Report{}, fmt.Errorf("rank %d's check report: %w", r, err)
			}
		}
		if worstRank < 0 || (!rep.OK && worst.OK) || (rep.OK == worst.OK && rep.RelErr > worst.RelErr) {
			worst, worstRank = rep, r
		}
	}
	if len(all) == 1 {
		return worst, nil
	}
	note := fmt.Sprintf("rank %d", worstRank)
	if worst.OK {
		note = fmt.Sprintf("all %d ranks correct; largest error on rank %d", len(all), worstRank)
	}
	if worst.Note != "" {
		note += ": " + worst.Note
	}
	worst.Note = note
	return worst, nil
}
