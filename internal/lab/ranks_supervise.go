package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kernel-labs/kernellabs/internal/ranks"
	"github.com/kernel-labs/kernellabs/internal/results"
)

// The parent side of a lab of ranks: the rank processes of one group of jobs, started together,
// watched together and killed together. labrun either starts every rank of the node itself (as
// torchrun does), or, as one rank of a job that mpirun, srun or torchrun started, starts its own
// rank's process and meets the other ranks' labrun processes between groups (extRanks).

// extRanks is labrun's place in a job that another launcher started: every rank's labrun runs
// the same jobs, each its own rank process, and they meet between groups of jobs to agree on
// what happened; rank 0 alone prints and records.
type extRanks struct {
	world ranks.World
	group ranks.Group // the labrun processes of the job
	gen   int         // groups of rank processes started so far
}

// externalWorld reads, for a lab of ranks, the job that another launcher started labrun in
// (nil when labrun runs on its own or started this process itself).
func externalWorld() (*ranks.World, error) {
	w, ok, err := ranks.FromEnv(os.Getenv)
	if err != nil || !ok || w.Launcher == "labrun" {
		return nil, err
	}
	return &w, nil
}

// ranksFor is the world size of the run: --ranks, the launcher's world, or the lab's default.
func (r *runner) ranksFor(gpus int) (int, error) {
	if !r.man.HasRanks() {
		if r.o.Ranks > 0 {
			return 0, &UsageError{fmt.Sprintf("--ranks: lab %s runs as one process (only labs of ranks, whose lab.yaml declares ranks:, take --ranks)", r.man.Name)}
		}
		return 0, nil
	}
	if r.o.InProcess && r.o.Ranks != 1 {
		// One rank is a world that labrun's own process can hold (profilers see it there).
		return 0, &UsageError{fmt.Sprintf("--in-process: lab %s runs one process per rank, and one process holds a world of one rank only: add --ranks 1, or run it without --in-process", r.man.Name)}
	}
	if r.o.Ranks > maxRanks {
		return 0, &UsageError{fmt.Sprintf("--ranks %d: at most %d ranks", r.o.Ranks, maxRanks)}
	}
	if r.ext != nil {
		if r.o.Ranks > 0 && r.o.Ranks != r.ext.world.Size {
			return 0, &UsageError{fmt.Sprintf("--ranks %d, but %s started %d ranks: leave --ranks out under a launcher", r.o.Ranks, r.ext.world.Launcher, r.ext.world.Size)}
		}
		return r.ext.world.Size, nil
	}
	if r.o.Ranks > 0 {
		return r.o.Ranks, nil
	}
	return r.man.DefaultRanks(r.info.Emulated, gpus), nil
}

// meetExternal joins the other labrun processes of an external job (before any work).
func meetExternal(ctx context.Context, w ranks.World) (*extRanks, error) {
	mctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	g, err := ranks.Meet(mctx, w)
	if err != nil {
		return nil, &EnvError{fmt.Errorf("rank %d of %d (started by %s) could not meet the other ranks: %w", w.Rank, w.Size, w.Launcher, err)}
	}
	return &extRanks{world: w, group: g}, nil
}

// workerRendezvous is where the rank processes of the next group meet: a fresh port on this node
// for the ranks labrun starts; for an external job the port after the launcher's (or a folder of
// its own under the launcher's folder), the groups of jobs running one after the other.
func (r *runner) workerRendezvous() (string, error) {
	if r.ext == nil {
		port, err := ranks.FreePort()
		if err != nil {
			return "", fmt.Errorf("finding a free port for the ranks' rendezvous: %w", err)
		}
		return "127.0.0.1:" + strconv.Itoa(port), nil
	}
	r.ext.gen++
	rv := r.ext.world.Rendezvous
	if dir, ok := strings.CutPrefix(rv, "file:"); ok {
		return "file:" + filepath.Join(dir, fmt.Sprintf("group%04d", r.ext.gen)), nil
	}
	host, port, err := net.SplitHostPort(rv)
	if err != nil {
		return "", err
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return "", fmt.Errorf("rendezvous port %q: %w", port, err)
	}
	return net.JoinHostPort(host, strconv.Itoa(p+1)), nil
}

// rankProc is one rank process of a group.
type rankProc struct {
	rank int
	cmd  *exec.Cmd
	out  *tail
	// What the parent saw of it: the jobs it finished, and why it stopped when that was early.
	mu       sync.Mutex
	finished int
	atKill   int    // finished when the group was killed (-1: not killed)
	waiting  string // the meeting of the ranks it waits at ("": it is not waiting for the others)
	waitKill string // waiting, when the group was killed
	exited   bool
	failure  string
	drained  chan struct{} // closed when all its events are read (nil for the group's root)
}

// rankEnv is the environment of rank `rank` of n: the run's, without any launcher's variables of
// labrun's own job, with torchrun's for this rank (labrun-started), or the launcher's with this
// group's rendezvous (external).
func (r *runner) rankEnv(base []string, rank, n int, rendezvous string) []string {
	env := withoutEnv(base, SecretSeedEnv)
	if r.ext == nil {
		for _, k := range []string{ranks.EnvRank, ranks.EnvWorldSize, ranks.EnvLocalRank, ranks.EnvLocalSize, ranks.EnvMasterAddr,
			ranks.EnvMasterPort, ranks.EnvRendezvous, ranks.EnvLauncher, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
			"OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"} {
			env = withoutEnv(env, k)
		}
		env = append(env, ranks.Env(rank, n, rendezvous)...)
	} else {
		env = append(withoutEnv(env, ranks.EnvRendezvous), ranks.EnvRendezvous+"="+rendezvous)
	}
	for _, kv := range rankEnvFixed {
		name, _, _ := strings.Cut(kv, "=")
		env = append(withoutEnv(env, name), kv)
	}
	return env
}

// runRanks runs a group of jobs of one world size as rank processes: rank 0's events are the
// group's (it sends the merged entries); every other rank is watched, and the first that dies or
// says it cannot go on ends the group on every rank, named in the failure.
func (r *runner) runRanks(ctx context.Context, spec WorkerSpec, timeout time.Duration, total, offset int) workerResult {
	var res workerResult
	n := spec.Ranks
	rendezvous, err := r.workerRendezvous()
	if err != nil {
		res.failure, res.fatal = err.Error(), "rendezvous"
		return res
	}
	local := make([]int, n)
	for i := range local {
		local[i] = i
	}
	if r.ext != nil {
		local = []int{r.ext.world.Rank}
	}
	specJSON, _ := json.Marshal(spec)
	procs := make([]*rankProc, 0, len(local))
	var pipes []*os.File
	killAll := func() {
		for _, p := range procs { // what each had finished, before the dying ranks notice
			p.mu.Lock()
			if p.atKill < 0 && !(p.cmd.Process != nil && exitedOnItsOwn(p.cmd.Process.Pid)) {
				p.atKill, p.waitKill = p.finished, p.waiting
			}
			p.mu.Unlock()
		}
		for _, p := range procs {
			if p.cmd.Process != nil {
				_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			}
		}
	}
	var rootEvents <-chan Event
	for _, rank := range local {
		cmd := r.workerCmd()
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		prefix := "  | "
		if rank != 0 || r.ext != nil {
			prefix = fmt.Sprintf("  | rank %d: ", rank)
		}
		p := &rankProc{rank: rank, cmd: cmd, out: &tail{w: prefixWriter(r.o.Progress, prefix)}, atKill: -1}
		cmd.Stdout, cmd.Stderr = p.out, p.out
		cmd.Stdin = strings.NewReader(string(specJSON))
		cmd.Env = r.rankEnv(cmd.Env, rank, n, rendezvous)
		pr, fatal, err := r.startWorker(cmd, spec, fmt.Sprintf("rank %d", rank))
		if err != nil {
			killAll()
			res.failure, res.fatal = err.Error(), fatal
			return res
		}
		pipes = append(pipes, pr)
		procs = append(procs, p)
		events := readEvents(pr)
		if p.rank == local[0] {
			rootEvents = r.watchRoot(events, p)
		} else {
			p.drained = make(chan struct{})
			go r.watchPeer(events, p)
		}
	}

	// The first rank to fail (other than the one whose events are the group's) ends the group;
	// the failure reported is that of the lowest rank that failed for a reason of its own, not
	// because it lost a peer that had died.
	var failMu sync.Mutex
	failed := map[int]string{}
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Add(1)
		go func(p *rankProc) {
			defer wg.Done()
			err := p.cmd.Wait()
			if p.drained != nil { // its last words ("fatal": why it stopped) may still be in the pipe
				select {
				case <-p.drained:
				case <-time.After(2 * time.Second): // a child of it may hold the pipe open
				}
			}
			p.mu.Lock()
			p.exited = true
			early := p.finished < len(spec.Jobs)
			why := p.failure
			if err != nil && why == "" {
				why = describeExit(err, p.out.String())
				if t := crashExcerpt(p.out.String()); t != "" {
					why += "\nlast output of the worker:\n" + t
				}
			}
			sticky := p.cmd.ProcessState != nil && p.cmd.ProcessState.ExitCode() == workerSticky
			killedByUs := p.atKill >= 0 && p.failure == "" // the group was ended, not by this rank
			p.mu.Unlock()
			if p.rank == local[0] || sticky || killedByUs || (!early && err == nil) {
				return
			}
			if why == "" {
				why = "the worker exited early"
			}
			failMu.Lock()
			if len(failed) == 0 {
				killAll()
			}
			failed[p.rank] = why
			failMu.Unlock()
		}(p)
	}
	current := r.collect(ctx, &res, rootEvents, spec, timeout, total, offset, killAll)
	root := procs[0]
	// The others finish their last job's agreement within moments of rank 0; then they go.
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		killAll()
		<-done
	}
	for _, pr := range pipes {
		pr.Close()
	}
	culprit := pickCulprit(failed)
	if res.timedOut {
		res.failure += r.unfinishedRanks(procs, current, offset, len(res.entries))
	}
	if res.failure == "" && len(res.entries) < len(spec.Jobs) {
		exit := root.cmd.ProcessState
		switch {
		case culprit != "":
			res.failure = culprit
		case exit != nil && exit.ExitCode() == workerSticky && current < 0:
			// stopped on purpose after a sticky error; the parent starts a fresh group
		case res.fatal != "":
			res.failure = res.fatal
		default:
			res.failure = root.failure
			if res.failure == "" {
				res.failure = describeExit(waitErr(exit), root.out.String())
			}
			if t := crashExcerpt(root.out.String()); t != "" {
				res.failure += "\nlast output of the worker:\n" + t
			}
		}
		if r.ext == nil && res.failure != "" && !strings.HasPrefix(res.failure, "rank ") {
			res.failure = "rank 0: " + res.failure
		}
	} else if culprit != "" && res.failure != "" && !res.timedOut {
		res.failure = culprit // rank 0 was killed because another rank died first
	}
	if r.ext != nil {
		r.agreeGroup(&res)
	}
	return res
}

func waitErr(ps *os.ProcessState) error {
	if ps == nil || ps.Success() {
		return nil
	}
	return &exec.ExitError{ProcessState: ps}
}

// watchRoot passes on the events of the rank whose events are the group's, counting its results.
func (r *runner) watchRoot(in <-chan Event, p *rankProc) <-chan Event {
	out := make(chan Event)
	go func() {
		defer close(out)
		for e := range in {
			p.note(e)
			if e.Type == "wait" {
				continue
			}
			out <- e
		}
	}()
	return out
}

// watchPeer reads another rank's events: its progress, its log lines (prefixed with its rank) and
// why it could not go on.
func (r *runner) watchPeer(in <-chan Event, p *rankProc) {
	defer close(p.drained)
	for e := range in {
		p.note(e)
		if e.Type == "log" {
			fmt.Fprintf(r.o.Progress, "  rank %d: %s\n", p.rank, e.Msg)
		}
	}
}

// note keeps what the supervisor reads of a rank's event: a finished job, the meeting it waits
// at, why it could not go on (read for the ranks other than the root, whose events are the group's).
func (p *rankProc) note(e Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch e.Type {
	case "result":
		p.finished++
	case "wait":
		p.waiting = e.Msg
	case "fatal":
		p.failure = e.Msg
	}
}

// unfinishedRanks names, for a timed-out group, the ranks that had not finished the job in
// flight: those that were not waiting for the others at one of their meetings hung.
func (r *runner) unfinishedRanks(procs []*rankProc, current, offset, done int) string {
	var hung, waited []string
	at := ""
	for _, p := range procs {
		p.mu.Lock()
		finished, waiting := p.finished, p.waiting
		if p.atKill >= 0 {
			finished, waiting = p.atKill, p.waitKill
		}
		p.mu.Unlock()
		switch {
		case finished > done:
		case waiting == "":
			hung = append(hung, strconv.Itoa(p.rank))
		default:
			waited, at = append(waited, strconv.Itoa(p.rank)), waiting
		}
	}
	switch {
	case r.ext != nil || len(hung)+len(waited) == 0:
		return ""
	case len(hung) == 0:
		return fmt.Sprintf(" (ranks %s waited for each other at %q)", strings.Join(waited, ", "), at)
	case len(waited) == 0:
		return fmt.Sprintf(" (ranks still in it: %s)", strings.Join(hung, ", "))
	}
	return fmt.Sprintf(" (rank %s never reached the ranks' next meeting; ranks %s waited for it at %q)", strings.Join(hung, ", "), strings.Join(waited, ", "), at)
}

// groupReport is what each labrun of an external job says of its group of jobs.
type groupReport struct {
	Entries  []*results.Entry `json:"entries"`
	Failure  string           `json:"failure"`
	Fatal    string           `json:"fatal"`
	Started  bool             `json:"started"`
	TimedOut bool             `json:"timed_out"`
}

// agreeGroup makes every labrun of an external job take rank 0's account of the group (rank 0's
// worker sent the merged entries), with the first other rank whose own process failed named when
// rank 0's account is a failure.
func (r *runner) agreeGroup(res *workerResult) {
	mine, _ := json.Marshal(groupReport{res.entries, res.failure, res.fatal, res.started, res.timedOut})
	raw, err := r.ext.group.AllGather(context.Background(), mine)
	if err != nil {
		res.failure = fmt.Sprintf("rank %d lost the other ranks' labrun: %v", r.ext.world.Rank, err)
		res.fatal = res.failure
		return
	}
	reps := make([]groupReport, len(raw))
	for i, b := range raw {
		json.Unmarshal(b, &reps[i])
	}
	root := reps[0]
	res.entries, res.failure, res.fatal, res.started, res.timedOut = root.Entries, root.Failure, root.Fatal, root.Started, root.TimedOut
	if res.failure == "" {
		return
	}
	for i := 1; i < len(reps); i++ {
		f := reps[i].Failure
		if f != "" && !strings.Contains(f, lostMark) {
			res.failure = fmt.Sprintf("rank %d: %s", i, f)
			return
		}
	}
	if !strings.HasPrefix(res.failure, "rank ") {
		res.failure = "rank 0: " + res.failure
	}
}

// joinExternal makes labrun one rank of a job that another launcher started, for a lab of ranks:
// the labrun processes meet, take rank 0's seed, and all but rank 0 stay silent and save nothing.
func joinExternal(ctx context.Context, man *Manifest, o *Options) (*extRanks, error) {
	if !man.HasRanks() {
		return nil, nil
	}
	w, err := externalWorld()
	if err != nil {
		return nil, &UsageError{err.Error()}
	}
	if w == nil {
		return nil, nil
	}
	if len(o.Plan) > 0 || o.Grade != nil || o.InProcess {
		return nil, &UsageError{fmt.Sprintf("labrun under %s runs a lab's variants; grading and --in-process start their own processes", w.Launcher)}
	}
	x, err := meetExternal(ctx, *w)
	if err != nil {
		return nil, err
	}
	all, err := x.group.AllGather(ctx, []byte(strconv.FormatUint(o.Seed, 10)))
	if err != nil {
		return nil, &EnvError{err}
	}
	if o.Seed, err = strconv.ParseUint(string(all[0]), 10, 64); err != nil {
		return nil, &EnvError{fmt.Errorf("rank 0's seed %q: %w", all[0], err)}
	}
	o.SeedSet = true
	if w.Rank != 0 {
		o.Progress, o.NoSave = io.Discard, true // rank 0 alone prints and records
	}
	return x, nil
}

// reportRanks says how the ranks run.
func (r *runner) reportRanks(gpus int) {
	if r.ranks == 0 || len(r.o.Plan) > 0 { // a grader's jobs name their own world sizes
		return
	}
	switch {
	case r.ext != nil:
		fmt.Fprintf(r.o.Progress, "rank %d of %d, started by %s; rank 0 prints and records\n", r.ext.world.Rank, r.ranks, r.ext.world.Launcher)
	case r.info.Emulated:
		fmt.Fprintf(r.o.Progress, "%d ranks, one process each, each with its own emulated device\n", r.ranks)
	case r.ranks > gpus:
		fmt.Fprintf(r.o.Progress, "%d ranks, one process each, on %d GPU(s): several ranks share a GPU, so their times are labelled %q and not recorded, and NCCL is skipped\n",
			r.ranks, gpus, SharedGPULabel)
	default:
		fmt.Fprintf(r.o.Progress, "%d ranks, one process per GPU\n", r.ranks)
	}
}

// SharedGPU says whether an entry was measured with several ranks on one GPU (its times are no
// performance figures).
func SharedGPU(e *results.Entry) bool { v, _ := e.Data["shared_gpu"].(bool); return v }

// sharedGPURun says whether any entry of the run had ranks sharing a GPU: such a run is saved
// where unrecorded runs go (results/local/, which neither git nor the site reads), so that its
// times never stand for performance results, nor replace the entries of a run on one GPU per rank.
func (r *runner) sharedGPURun(es []results.Entry) bool {
	for i := range es {
		if SharedGPU(&es[i]) && !r.info.Emulated {
			fmt.Fprintf(r.o.Progress, "several ranks shared a GPU: the times are %q, and the results go to results/%s/, not to the recorded results\n",
				SharedGPULabel, results.LocalDir)
			return true
		}
	}
	return false
}

// lostMark is in the failure of a rank that stopped because it lost another.
const lostMark = "lost the other ranks"

// pickCulprit names the failure of a group: the lowest rank that failed for a reason of its own,
// else the lowest that failed ("" when none did).
func pickCulprit(failed map[int]string) string {
	ranksFailed := make([]int, 0, len(failed))
	for r := range failed {
		ranksFailed = append(ranksFailed, r)
	}
	slices.Sort(ranksFailed)
	for _, r := range ranksFailed {
		if !strings.Contains(failed[r], lostMark) {
			return fmt.Sprintf("rank %d: %s", r, failed[r])
		}
	}
	if len(ranksFailed) > 0 {
		return fmt.Sprintf("rank %d: %s", ranksFailed[0], failed[ranksFailed[0]])
	}
	return ""
}
