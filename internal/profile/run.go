package profile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/lab"
)

// Options select what `labrun profile` profiles.
type Options struct {
	Root     string
	Lab      string
	Suites   []string // empty: every suite
	Variants []string // empty: every kernel variant of the lab
	Problems []string // empty: each variant's first --quick problem of the GPU set
	Kernel   string   // ncu kernel filter; empty: the variant's entry (regex:^entry$)
	Count    int      // launches to profile per variant and problem (default 1)
	Kind     Kind     // empty: by the suite's metric
	Backend  string   // "auto" or "cuda"
	Device   int
	Seed     uint64
	Timeout  time.Duration // one variant under ncu; default 10 minutes
	NCU      string        // the ncu to run; empty: FindNCU (after the GPU is found, so that a machine
	// without one hears that first)
	Self     string // the labrun executable that ncu starts
	Progress io.Writer
	// Info, when set, is the device instead of the one the backend describes (tests).
	Info *gpu.DeviceInfo
	// Commit is recorded in the file.
	Commit string
	// LogDir, when set, keeps each job's ncu log and program output there (to read a failure,
	// or to check the parsing against what ncu wrote).
	LogDir string

	known []string // the sections this ncu has (nil: not known)
}

// Job is one variant on one problem.
type Job struct {
	Suite   *lab.Suite
	Variant *lab.Variant
	Problem string
}

// Outcome is what a profile run recorded and what failed.
type Outcome struct {
	Path     string
	SavedTo  string
	Recorded []Profile
	Failed   []JobError
}

// JobError is one job that recorded nothing, and why.
type JobError struct {
	Job Job
	Err error
}

// NeedsGPUError: profiling reads a GPU's hardware counters.
type NeedsGPUError struct{ Why string }

func (e *NeedsGPUError) Error() string {
	return "labrun profile needs an NVIDIA GPU: Nsight Compute reads the GPU's hardware counters, which " + e.Why +
		" does not have; on the CPU emulator, labrun run checks correctness (times there are not performance figures)"
}

// Plan lists the jobs: the variants asked for (every kernel variant when none is), each on the
// problems asked for that its suite has (its first --quick GPU problem when none is).
func Plan(man *lab.Manifest, suites, variants, problems []string, kernel string) ([]Job, error) {
	var jobs []Job
	matched := map[string]bool{}
	for _, name := range suites {
		if man.Suite(name) == nil {
			return nil, &lab.UsageError{Msg: fmt.Sprintf("lab %s has no suite %q (labrun list shows them)", man.Name, name)}
		}
	}
	for _, s := range man.Suites {
		if len(suites) > 0 && !slices.Contains(suites, s.Name) {
			continue
		}
		gpuSet, _ := s.ProblemsFor("gpu")
		for _, v := range s.Variants {
			if len(variants) > 0 && !slices.Contains(variants, v.Name) {
				continue
			}
			if !v.IsKernel() && kernel == "" {
				if len(variants) > 0 {
					return nil, &lab.UsageError{Msg: fmt.Sprintf("variant %s is a library call (%s), not a kernel of the lab: "+
						"give --kernel REGEX naming the library's kernel (ncu's --kernel-name syntax, e.g. regex:gemm)", v.Name, v.Library)}
				}
				continue
			}
			var picked []string
			for _, p := range gpuSet {
				if slices.Contains(problems, p.Name) {
					picked = append(picked, p.Name)
					matched[p.Name] = true
				}
			}
			if len(problems) == 0 && len(gpuSet) > 0 {
				first := gpuSet[0].Name
				for _, p := range gpuSet {
					if p.Quick {
						first = p.Name
						break
					}
				}
				picked = []string{first}
			}
			for _, p := range picked {
				jobs = append(jobs, Job{Suite: s, Variant: v, Problem: p})
			}
		}
	}
	for _, v := range variants {
		found := false
		for _, s := range man.Suites {
			found = found || s.Variant(v) != nil
		}
		if !found {
			return nil, &lab.UsageError{Msg: fmt.Sprintf("lab %s has no variant %q (labrun list shows them)", man.Name, v)}
		}
	}
	for _, p := range problems {
		if !matched[p] {
			return nil, &lab.UsageError{Msg: fmt.Sprintf("no selected variant of lab %s has a GPU problem %q (lab.yaml lists them under problems.gpu)", man.Name, p)}
		}
	}
	if len(jobs) == 0 {
		return nil, &lab.UsageError{Msg: fmt.Sprintf("lab %s: nothing to profile", man.Name)}
	}
	return jobs, nil
}

// Run profiles each job under ncu and merges what it measured into the lab's profile file after
// every job, so that a later failure loses nothing recorded before it. A permission error on the
// counters stops the run (every later job would meet it); other failures are listed in the
// outcome and the run goes on.
func Run(ctx context.Context, o Options) (*Outcome, error) {
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	man, err := lab.Load(o.Root, o.Lab)
	if err != nil {
		return nil, err
	}
	jobs, err := Plan(man, o.Suites, o.Variants, o.Problems, o.Kernel)
	if err != nil {
		return nil, err
	}
	info, err := describe(o)
	if err != nil {
		return nil, err
	}
	if o.NCU == "" {
		if o.NCU, err = FindNCU(os.Getenv); err != nil {
			return nil, &lab.EnvError{Err: err}
		}
	}
	tool, err := Version(o.NCU)
	if err != nil {
		return nil, &lab.EnvError{Err: err}
	}
	o.known = ListSections(o.NCU)
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Minute
	}
	tmp, err := os.MkdirTemp("", "labrun-profile-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	out := &Outcome{Path: PathFor(o.Root, info, man.Name)}
	fmt.Fprintf(o.Progress, "profiling %d variant × problem pair(s) of lab %s on %s with %s\n", len(jobs), man.Name, info.Name, tool)
	for i, j := range jobs {
		if ctx.Err() != nil {
			out.Failed = append(out.Failed, JobError{j, fmt.Errorf("interrupted before it ran")})
			continue
		}
		fmt.Fprintf(o.Progress, "[%d/%d] %s/%s on %s ... ", i+1, len(jobs), j.Suite.Name, j.Variant.Name, j.Problem)
		profs, err := o.profileOne(ctx, man, j, filepath.Join(tmp, fmt.Sprintf("job%d", i)))
		if err != nil {
			fmt.Fprintln(o.Progress, "failed")
			out.Failed = append(out.Failed, JobError{j, err})
			if errors.Is(err, ErrPermission) {
				return out, nil // no later job can read the counters either
			}
			continue
		}
		fmt.Fprintf(o.Progress, "%d launch(es)\n", len(profs))
		f := &File{Lab: man.Name, Device: info, Tool: tool, Commit: o.Commit, Time: time.Now().UTC(), Profiles: profs}
		saved, err := Save(out.Path, f)
		out.SavedTo = saved
		if err != nil {
			return out, err
		}
		out.Recorded = append(out.Recorded, profs...)
	}
	return out, nil
}

func describe(o Options) (gpu.DeviceInfo, error) {
	if o.Info != nil {
		if o.Info.Emulated {
			return gpu.DeviceInfo{}, &lab.EnvError{Err: &NeedsGPUError{Why: "the CPU emulator"}}
		}
		return *o.Info, nil
	}
	if o.Backend == "emu" {
		return gpu.DeviceInfo{}, &lab.EnvError{Err: &NeedsGPUError{Why: "the CPU emulator"}}
	}
	be, _, err := gpu.Open(o.Backend)
	if err != nil {
		return gpu.DeviceInfo{}, &lab.EnvError{Err: &NeedsGPUError{Why: "this machine (" + err.Error() + ")"}}
	}
	if be.Name() == "emu" {
		return gpu.DeviceInfo{}, &lab.EnvError{Err: &NeedsGPUError{Why: "this machine (no GPU found; only the CPU emulator)"}}
	}
	info, err := be.DeviceInfo(o.Device)
	if err != nil {
		return gpu.DeviceInfo{}, &lab.EnvError{Err: err}
	}
	if info.Emulated {
		return gpu.DeviceInfo{}, &lab.EnvError{Err: &NeedsGPUError{Why: "the CPU emulator"}}
	}
	return info, nil
}

// profileOne runs one job under ncu and returns its profiles.
func (o Options) profileOne(ctx context.Context, man *lab.Manifest, j Job, dir string) ([]Profile, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	kind := o.Kind
	if kind == "" {
		kind = KindFor(j.Suite.Metric)
	}
	kernel := o.Kernel
	if kernel == "" {
		kernel = "regex:^" + j.Variant.Entry + "$"
	}
	sections, missing := Available(kind.Sections(), o.known)
	if len(missing) > 0 {
		fmt.Fprintf(o.Progress, "(this ncu has no section %s: left out) ", strings.Join(missing, ", "))
	}
	iv := Invocation{NCU: o.NCU, LogFile: filepath.Join(dir, "ncu.log"), Kernel: kernel, Count: o.Count, Kind: kind, Sections: sections,
		ClockControl: "none",
		// The job's own suite: a variant can be in several, on problems of the same name.
		Target: []string{o.Self, "run", man.ID, "--in-process", "--backend", "cuda", "--device", fmt.Sprint(o.Device),
			"--suite", j.Suite.Name,
			"--variant", j.Variant.Name, "--problem", j.Problem, "--quick", "--no-save", "--no-site",
			"--seed", fmt.Sprint(o.Seed)}}
	if man.HasRanks() {
		// A lab of ranks runs in-process as a world of one rank: ncu does not follow the rank
		// processes labrun starts (Go execs them without the libc calls its injection hooks).
		iv.Target = append(iv.Target, "--ranks", "1")
	}
	jctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	cmd := exec.CommandContext(jctx, o.NCU, iv.Args()...)
	cmd.Dir = o.Root
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	runErr := cmd.Run()
	log, readErr := os.ReadFile(iv.LogFile)
	if o.LogDir != "" {
		base := filepath.Join(o.LogDir, safeName(j.Suite.Name+"_"+j.Variant.Name+"_"+j.Problem))
		if err := os.MkdirAll(o.LogDir, 0o755); err == nil {
			os.WriteFile(base+".ncu.log", log, 0o644)
			os.WriteFile(base+".out.log", output.Bytes(), 0o644)
		}
	}
	if readErr != nil && runErr == nil {
		return nil, fmt.Errorf("%w: it wrote no log (%v)", ErrProfiler, readErr)
	}
	rep, logErr := ParseLog(log)
	if logErr != nil {
		var le *LogError
		if errors.As(logErr, &le) && le.Kind == ErrNoKernel && runErr != nil {
			// No launch because the program failed: its own output says why.
			return nil, fmt.Errorf("the variant did not run under ncu (%v):\n%s", runErr, tail(output.String(), 20))
		}
		return nil, logErr
	}
	if jctx.Err() != nil {
		return nil, fmt.Errorf("%w: the variant ran past %s under ncu", ErrReplay, o.Timeout)
	}
	if runErr != nil {
		return nil, fmt.Errorf("the variant did not pass under ncu (%v), so its profile is not recorded:\n%s", runErr, tail(output.String(), 20))
	}
	// The record names the programs plainly: the paths of this machine mean nothing elsewhere.
	shown := iv
	shown.NCU, shown.LogFile = "ncu", "ncu.log"
	shown.Target = append([]string{"labrun"}, iv.Target[1:]...)
	now := time.Now().UTC()
	var profs []Profile
	for i, l := range rep.Launches {
		profs = append(profs, Profile{Suite: j.Suite.Name, Variant: j.Variant.Name, Problem: j.Problem, Kernel: l.Kernel,
			Launch: i, Kind: kind, Block: l.Block, Grid: l.Grid, Metrics: Curate(l.Metrics), Seed: o.Seed,
			Command: shown.CommandLine(), RunAt: now})
	}
	return profs, nil
}

var unsafeRE = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// safeName turns a job's names into a file name.
func safeName(s string) string { return strings.Trim(unsafeRE.ReplaceAllString(s, "-"), "-") }

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "  " + strings.Join(lines, "\n  ")
}
