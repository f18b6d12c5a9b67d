package lab

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kernel-labs/kernellabs/internal/results"
)

// supervise runs jobs in worker processes, restarting a worker after a crash, a hang or an
// error that spoils the context, and returns one entry per job.
func (r *runner) supervise(ctx context.Context, jobs []Job, images map[string]string) ([]results.Entry, map[string]any) {
	timeout := r.man.Timeout
	if r.o.Timeout > 0 {
		timeout = r.o.Timeout
	}
	done := make([]*results.Entry, len(jobs))
	r.lastReport = time.Now()
	r.unfinished = map[string]bool{}
	var extra map[string]any
	_, wantDeviceRecord := driverOf(r.man).(DeviceRecorder)
	wantDeviceRecord = wantDeviceRecord && len(r.o.Plan) == 0 // grading does not describe the device
	// A lab of ranks: every job at the run's world size unless it names one.
	if r.ranks > 0 {
		for i := range jobs {
			if jobs[i].Ranks == 0 {
				jobs[i].Ranks = r.ranks
			}
		}
	}
	next := 0
	for next < len(jobs) && ctx.Err() == nil {
		// A worker's jobs share one world size.
		end := next + 1
		for end < len(jobs) && jobs[end].Ranks == jobs[next].Ranks {
			end++
		}
		spec := WorkerSpec{Root: r.o.Root, Lab: r.man.Name, Backend: r.be.Name(), Device: r.o.Device,
			Seed: r.o.Seed, Quick: r.o.Quick, RecordDevice: wantDeviceRecord && extra == nil, Images: images, Jobs: jobs[next:end],
			Grade: r.o.Grade, NoSandbox: r.o.UnsafeNoSandbox, Ranks: jobs[next].Ranks, Graph: r.o.Graph}
		for path := range r.untrusted {
			spec.Untrusted = append(spec.Untrusted, path)
		}
		run := r.runWorker
		if spec.Ranks > 0 && !r.o.InProcess {
			run = r.runRanks // one process per rank (ranks_supervise.go); in-process: a world of one
		}
		res := run(ctx, spec, timeout, len(jobs), next)
		for i, e := range res.entries {
			done[next+i] = e
		}
		if res.describe != nil {
			extra = res.describe
		}
		wantDeviceRecord = false
		finished := len(res.entries)
		if finished < len(spec.Jobs) && res.failure != "" {
			// The job in flight when the worker died takes the blame.
			j := spec.Jobs[finished]
			status := results.StatusCrashed
			if res.timedOut {
				status = results.StatusTimeout
			}
			if res.fatal != "" && !res.started {
				// The worker could not start at all: every remaining job fails the same way.
				for i := finished; i < len(spec.Jobs); i++ {
					done[next+i] = r.lostEntry(spec.Jobs[i], results.StatusFailed, res.failure)
				}
				break
			}
			failure := res.failure
			if ctx.Err() != nil {
				// Killed by the interrupt (or the run's total time limit), not by its own fault:
				// not a crash, and not a result to keep.
				if why, total := stopReason(ctx); !total {
					status, failure = results.StatusFailed, "not finished: the run was "+why+" while this job ran"
				}
			}
			done[next+finished] = r.lostEntry(j, status, failure)
			if ctx.Err() != nil {
				r.unfinished[entryKey(done[next+finished])] = true
			}
			r.report(next+finished, len(jobs), done[next+finished])
			finished++
		}
		if finished == 0 && ctx.Err() == nil {
			break // no progress: do not loop forever
		}
		next += finished
	}
	var out []results.Entry
	for i, e := range done {
		if e == nil {
			reason := "not run: the worker stopped before reaching it"
			status := results.StatusFailed
			if ctx.Err() != nil {
				why, total := stopReason(ctx)
				reason = "not run: " + why
				if why == "interrupted" {
					reason = "not run: the run was interrupted"
				}
				if total {
					status = results.StatusTimeout
				}
			}
			e = r.lostEntry(jobs[i], status, reason)
			r.unfinished[entryKey(e)] = true
		}
		out = append(out, *e)
	}
	return out, extra
}

func entryKey(e *results.Entry) string { return e.Suite + "\x00" + e.Variant + "\x00" + e.Problem }

func (r *runner) lostEntry(j Job, status, reason string) *results.Entry {
	p := j.problem(r.man.Suite(j.Suite))
	return &results.Entry{Suite: j.Suite, Variant: j.Variant, Problem: j.Problem, Params: p.Params, Status: status,
		Error: reason, Seed: r.o.Seed, RunAt: time.Now().UTC(), Emulated: r.info.Emulated, Custom: j.Custom != ""}
}

type workerResult struct {
	entries  []*results.Entry
	describe map[string]any
	failure  string // why the worker stopped early ("" when it finished its jobs)
	fatal    string
	started  bool // at least one job started
	timedOut bool
}

// tail keeps the first and the last bytes written to it, for crash reports: a Go crash report
// names the signal at its start and can run on for pages of goroutine dumps.
type tail struct {
	mu   sync.Mutex
	head []byte
	buf  []byte
	w    io.Writer
}

const keepBytes = 8192

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	if room := keepBytes - len(t.head); room > 0 {
		t.head = append(t.head, p[:min(room, len(p))]...)
	}
	t.buf = append(t.buf, p...)
	if len(t.buf) > keepBytes {
		t.buf = t.buf[len(t.buf)-keepBytes:]
	}
	t.mu.Unlock()
	return t.w.Write(p)
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.head) < keepBytes {
		return strings.TrimSpace(string(t.head)) // everything fitted in the head
	}
	return strings.TrimSpace(string(t.head) + "\n…\n" + string(t.buf))
}

// WorkerArg is the argument that makes labrun (or a test binary that handles it) run as the
// engine's worker (RunWorkerFromEnv): the default Options.Worker starts this executable with it.
const WorkerArg = "__worker"

func (r *runner) workerCmd() *exec.Cmd {
	if r.o.Worker != nil {
		return r.o.Worker()
	}
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	return exec.Command(exe, WorkerArg)
}

// startWorker starts a worker process (a lone worker, or one rank of a group; what names it in
// the error) with the grading machine's environment on the emulator, and the write end of a new
// pipe as its events' descriptor. It returns the read end; on an error, fatal is the step that
// failed ("pipe", "start") and nothing is left open.
func (r *runner) startWorker(cmd *exec.Cmd, spec WorkerSpec, what string) (events *os.File, fatal string, err error) {
	if r.info.Emulated && spec.Grade != nil {
		cmd.Env = r.gradeMachineEnv(cmd.Env, spec)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, "pipe", fmt.Errorf("creating the worker pipe: %w", err)
	}
	cmd.ExtraFiles = []*os.File{pw}
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		return nil, "start", fmt.Errorf("starting %s: %w", what, err)
	}
	pw.Close()
	return pr, "", nil
}

func (r *runner) runWorker(ctx context.Context, spec WorkerSpec, timeout time.Duration, total, offset int) workerResult {
	if r.o.InProcess {
		return r.runInProcess(ctx, spec, total, offset)
	}
	var res workerResult
	cmd := r.workerCmd()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // so a kill reaches its children too
	out := &tail{w: prefixWriter(r.o.Progress, "  | ")}
	cmd.Stdout, cmd.Stderr = out, out
	specJSON, _ := json.Marshal(spec)
	cmd.Stdin = strings.NewReader(string(specJSON))
	cmd.Env = withoutEnv(cmd.Env, SecretSeedEnv)
	pr, fatal, err := r.startWorker(cmd, spec, "the worker")
	if err != nil {
		res.failure, res.fatal = err.Error(), fatal
		return res
	}
	kill := func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	current := r.collect(ctx, &res, readEvents(pr), spec, timeout, total, offset, kill)
	err = cmd.Wait()
	pr.Close()
	if res.failure == "" && len(res.entries) < len(spec.Jobs) {
		if cmd.ProcessState.ExitCode() == workerSticky && current < 0 {
			return res // it stopped on purpose after a sticky error; the parent restarts it
		}
		switch {
		case res.fatal != "":
			res.failure = res.fatal
		case err != nil:
			res.failure = describeExit(err, out.String())
		default:
			res.failure = "the worker exited early"
		}
		if t := crashExcerpt(out.String()); t != "" {
			res.failure += "\nlast output of the worker:\n" + t
		}
	}
	return res
}

// runInProcess runs the worker in this process (Options.InProcess), for profilers that do not
// follow labrun's worker processes. Nothing can stop a goroutine inside a kernel, so there is no
// time limit, an interrupt abandons the job in flight, and a crash ends labrun itself.
func (r *runner) runInProcess(ctx context.Context, spec WorkerSpec, total, offset int) workerResult {
	var res workerResult
	specJSON, _ := json.Marshal(spec)
	pr, pw := io.Pipe()
	code := make(chan int, 1)
	go func() {
		c := WorkerMain(strings.NewReader(string(specJSON)), pw)
		pw.Close()
		code <- c
	}()
	current := r.collect(ctx, &res, readEvents(pr), spec, 0, total, offset, nil)
	if ctx.Err() != nil {
		return res // the job in flight runs on until labrun exits
	}
	c := <-code
	if res.failure == "" && len(res.entries) < len(spec.Jobs) {
		switch {
		case c == workerSticky && current < 0:
			return res
		case res.fatal != "":
			res.failure = res.fatal
		default:
			res.failure = fmt.Sprintf("the worker stopped early (status %d)", c)
		}
	}
	return res
}

// readEvents decodes the worker's events, one JSON object per line, until r ends.
func readEvents(r io.Reader) <-chan Event {
	events := make(chan Event)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			var e Event
			if json.Unmarshal(sc.Bytes(), &e) == nil {
				events <- e
			}
		}
	}()
	return events
}

// collect records a worker's events into res until they end, and returns the job in flight
// (-1: none). A job that runs past timeout, or an interrupt, calls kill; timeout 0 means none.
func (r *runner) collect(ctx context.Context, res *workerResult, events <-chan Event, spec WorkerSpec,
	timeout time.Duration, total, offset int, kill func()) int {
	// The worker gets a minute to start (load modules, open libraries) before its first job.
	var deadline <-chan time.Time
	var timer *time.Timer
	if timeout > 0 {
		timer = time.NewTimer(timeout + time.Minute)
		defer timer.Stop()
		deadline = timer.C
	}
	current := -1
	for {
		select {
		case e, ok := <-events:
			if !ok {
				return current
			}
			if why := r.invalidEvent(e, spec, current, len(res.entries)); why != "" {
				// Not an event this worker can have sent for the job in flight: whatever wrote it
				// fails the job, and the worker is not trusted further.
				res.timedOut = false
				res.failure = "the grader received an event it did not ask for (" + why + "): a forged result? the worker was killed"
				if kill != nil {
					kill()
				}
				return current
			}
			switch e.Type {
			case "start":
				current, res.started = e.Job, true
				if timer != nil {
					timer.Reset(timeout)
				}
			case "result":
				res.entries = append(res.entries, e.Entry)
				r.report(offset+e.Job, total, e.Entry)
				current = -1
				if timer != nil {
					timer.Reset(timeout) // the next job's set-up gets its own time
				}
			case "describe":
				res.describe = e.Data
			case "log":
				fmt.Fprintln(r.o.Progress, "  "+e.Msg)
			case "fatal":
				res.fatal = e.Msg
			}
		case <-deadline:
			what := "starting the worker"
			if len(res.entries) > 0 {
				what = "the worker, between two jobs"
			}
			if current >= 0 {
				what = spec.Jobs[current].String()
			}
			res.timedOut = true
			res.failure = fmt.Sprintf("timed out after %s in %s (a kernel that never finishes? a deadlock between blocks?); the worker was killed", timeout, what)
			kill()
		case <-ctx.Done():
			res.failure, res.timedOut = stopReason(ctx)
			if kill == nil {
				return current // in process: nothing to kill; labrun saves and exits
			}
			kill()
			ctx = context.Background() // keep reading until the dying worker's events end
		}
	}
}

// withoutEnv returns env (the process's environment when nil) without the variable name.
func withoutEnv(env []string, name string) []string {
	if env == nil {
		env = os.Environ()
	}
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// crashExcerpt keeps the informative start of a Go crash report (the signal and the first
// frames) rather than its goroutine dump, or else the last lines of the output.
func crashExcerpt(out string) string {
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if strings.Contains(l, "SIGSEGV") || strings.Contains(l, "SIGBUS") || strings.HasPrefix(strings.TrimLeft(l, "| "), "panic:") ||
			strings.HasPrefix(strings.TrimLeft(l, "| "), "fatal error:") || strings.Contains(l, "signal arrived during cgo") {
			end := min(i+12, len(lines))
			return strings.Join(lines[i:end], "\n")
		}
	}
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}

func describeExit(err error, output string) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return fmt.Sprintf("the worker process was killed by signal %s (a crash in kernel or driver code)", ws.Signal())
		}
		// Go's runtime turns a fault into exit status 2 with a report that names the signal.
		for _, sig := range []string{"SIGSEGV", "SIGBUS", "SIGFPE", "SIGILL", "SIGABRT"} {
			if strings.Contains(output, sig) {
				return fmt.Sprintf("the worker process crashed with signal %s (a crash in kernel or driver code)", sig)
			}
		}
		if ee.ExitCode() == workerSticky {
			return "the device context was spoiled by an earlier error"
		}
		return fmt.Sprintf("the worker process exited with status %d", ee.ExitCode())
	}
	return "the worker failed: " + err.Error()
}

// The emulator's settings, as its documented environment variables (internal/gpu/emu).
const (
	emuEnvSMs      = "LABRUN_EMU_SMS"
	emuEnvDevices  = "LABRUN_EMU_DEVICES"
	emuEnvSchedule = "LABRUN_EMU_SCHEDULE"
	emuEnvWarp     = "LABRUN_EMU_WARP"
)

// gradeMachineEnv sets the emulated machine of a grade in a worker's environment, replacing
// whatever the runner set: the grading section's SMs and schedule, and enough devices.
func (r *runner) gradeMachineEnv(env []string, spec WorkerSpec) []string {
	// The warp width too: a grade runs the 32 lanes its kernels were built for, whatever the
	// runner's environment says.
	for _, k := range []string{emuEnvSMs, emuEnvDevices, emuEnvSchedule, emuEnvWarp} {
		env = withoutEnv(env, k)
	}
	g := r.o.Grade
	env = append(env, fmt.Sprintf("%s=%d", emuEnvSMs, g.EmuSMs), fmt.Sprintf("%s=%d", emuEnvDevices, 2))
	if g.EmuSchedule != "" {
		env = append(env, emuEnvSchedule+"="+g.EmuSchedule)
	}
	return env
}

// invalidEvent says why an event cannot be the worker's next one ("" when it can): the worker
// starts its jobs in order, sends one result per started job for that job's suite, variant and
// problem, and the job hook accepts the results of jobs with a mode (JobHook.Genuine).
func (r *runner) invalidEvent(e Event, spec WorkerSpec, current, done int) string {
	switch e.Type {
	case "start":
		if current >= 0 || e.Job != done || e.Job >= len(spec.Jobs) {
			return fmt.Sprintf("start of job %d while job %d runs and %d are done", e.Job, current, done)
		}
	case "result":
		if current < 0 || e.Job != current {
			return fmt.Sprintf("a result for job %d, which is not running", e.Job)
		}
		j, en := spec.Jobs[e.Job], e.Entry
		if en == nil || en.Suite != j.Suite || en.Variant != j.Variant || en.Problem != j.Problem {
			return fmt.Sprintf("a result for job %d that names another variant or problem", e.Job)
		}
		if j.Mode != "" {
			why := "a result of a grading job, and no grader is linked in to tell a genuine one"
			if h := jobHook(); h != nil {
				why = h.Genuine(j, en)
			}
			if why != "" {
				return fmt.Sprintf("job %d: %s", e.Job, why)
			}
		}
	case "describe":
		if done > 0 || current >= 0 {
			return "a device description after the jobs started"
		}
	case "log", "fatal", "wait": // wait: where a rank of a lab of ranks waits for the others
	default:
		return fmt.Sprintf("an event of unknown type %q", e.Type)
	}
	return ""
}
