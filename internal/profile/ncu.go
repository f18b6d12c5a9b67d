// Package profile runs lab variants under Nsight Compute (ncu), reads its CSV report and records
// a curated set of its metrics beside the lab's results: results/<device>/<NN_lab>.profile.json.
//
// ncu sees only kernels launched by the process it starts, so the variant runs in labrun's own
// process (labrun run --in-process). ncu writes its report to a log file of its own (--log-file),
// so the lab's output never mixes with the CSV.
package profile

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// EnvNCU names the environment variable that points at the ncu executable.
const EnvNCU = "NCU"

// MissingError says that no ncu was found, and where labrun looked.
type MissingError struct{ Looked []string }

func (e *MissingError) Error() string {
	return "Nsight Compute (ncu) was not found (looked at " + strings.Join(e.Looked, ", ") + "); " +
		"install it with the CUDA toolkit (it is in /usr/local/cuda/bin) or from developer.nvidia.com/nsight-compute, " +
		"then put it on PATH or name it with NCU=/path/to/ncu"
}

// FindNCU returns the ncu to run: $NCU when set (it must exist), else ncu on PATH, else the CUDA
// toolkit's and Nsight Compute's usual install folders.
func FindNCU(getenv func(string) string) (string, error) {
	if p := getenv(EnvNCU); p != "" {
		if st, err := os.Stat(p); err != nil || st.IsDir() {
			return "", fmt.Errorf("NCU=%s: no such program; point NCU at the ncu executable, or unset it to use ncu from PATH", p)
		}
		return p, nil
	}
	looked := []string{"$PATH"}
	if p, err := exec.LookPath("ncu"); err == nil {
		return p, nil
	}
	var candidates []string
	if home := getenv("CUDA_HOME"); home != "" {
		candidates = append(candidates, filepath.Join(home, "bin", "ncu"))
	}
	candidates = append(candidates, "/usr/local/cuda/bin/ncu")
	installs, _ := filepath.Glob("/opt/nvidia/nsight-compute/*/ncu")
	sort.Sort(sort.Reverse(sort.StringSlice(installs))) // the newest version first
	candidates = append(candidates, installs...)
	for _, c := range candidates {
		looked = append(looked, c)
		if st, err := os.Stat(c); err == nil && !st.IsDir() {
			return c, nil
		}
	}
	looked = append(looked, "/opt/nvidia/nsight-compute/*/ncu")
	return "", &MissingError{Looked: looked}
}

// Version returns the first line of `ncu --version` that names a version.
func Version(ncu string) (string, error) {
	out, err := exec.Command(ncu, "--version").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s --version: %v: %s", ncu, err, strings.TrimSpace(string(out)))
	}
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "Version") {
			return strings.TrimSpace(l), nil
		}
	}
	return strings.TrimSpace(string(out)), nil
}

// ListSections returns the section identifiers this ncu knows (`ncu --list-sections`: a table
// whose first column is the identifier), or nil when its output cannot be read.
func ListSections(ncu string) []string {
	out, err := exec.Command(ncu, "--list-sections").Output()
	if err != nil {
		return nil
	}
	return parseSectionList(string(out))
}

var identRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`)

func parseSectionList(out string) []string {
	var ids []string
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) == 0 || f[0] == "Identifier" || !identRE.MatchString(f[0]) {
			continue
		}
		ids = append(ids, f[0])
	}
	return ids
}

// Available keeps the sections that ncu knows (all of them when known is nil) and names the
// others: ncu refuses a whole run for one section it does not have.
func Available(sections, known []string) (keep, missing []string) {
	if known == nil {
		return sections, nil
	}
	for _, s := range sections {
		if slices.Contains(known, s) {
			keep = append(keep, s)
		} else {
			missing = append(missing, s)
		}
	}
	if len(keep) == 0 {
		return sections, nil // a list that names none of them was not read right: let ncu say
	}
	return keep, missing
}

// Invocation is one ncu run of one labrun command.
type Invocation struct {
	NCU     string
	LogFile string // ncu's own output, the CSV report included
	Kernel  string // ncu --kernel-name filter ("regex:^sgemm_dbuf$"); "" profiles every kernel
	Count   int    // kernel launches to profile (--launch-count)
	Skip    int    // matching launches to let pass first (--launch-skip)
	Kind    Kind   // which sections to collect
	// Sections overrides Kind's sections (those this ncu has, from Available).
	Sections []string
	Target   []string // the program and its arguments
	// ClockControl is ncu's --clock-control; labrun passes "none" so that the GPU runs at the
	// clocks it has (ncu's default locks them to base clocks, which other users of the GPU and
	// the course's timings do not see).
	ClockControl string
}

// Args returns ncu's arguments (without the program name).
func (iv Invocation) Args() []string {
	args := []string{"--csv", "--page", "raw", "--print-units", "base", "--log-file", iv.LogFile}
	if iv.ClockControl != "" {
		args = append(args, "--clock-control", iv.ClockControl)
	}
	sections := iv.Sections
	if sections == nil {
		sections = iv.Kind.Sections()
	}
	for _, s := range sections {
		args = append(args, "--section", s)
	}
	if iv.Kernel != "" {
		args = append(args, "--kernel-name", iv.Kernel)
	}
	if iv.Skip > 0 {
		args = append(args, "--launch-skip", fmt.Sprint(iv.Skip))
	}
	args = append(args, "--launch-count", fmt.Sprint(max(iv.Count, 1)))
	return append(args, iv.Target...)
}

// CommandLine is the invocation as a shell would show it, for the record and for messages.
func (iv Invocation) CommandLine() string {
	parts := append([]string{iv.NCU}, iv.Args()...)
	for i, p := range parts {
		if strings.ContainsAny(p, " ×…*()^$|") {
			parts[i] = "'" + p + "'"
		}
	}
	return strings.Join(parts, " ")
}

// Error kinds that ncu reports in its log. Each says what to do.
var (
	// ErrPermission: the driver refuses the performance counters to this user.
	ErrPermission = errors.New("ncu may not read the GPU's performance counters (ERR_NVGPUCTRPERM): run labrun profile as root, " +
		"or let every user read them (as root: echo 'options nvidia NVreg_RestrictProfilingToAdminUsers=0' > /etc/modprobe.d/ncu.conf, " +
		"then reload the nvidia module or reboot); see https://developer.nvidia.com/ERR_NVGPUCTRPERM")
	// ErrReplay: ncu could not profile (replay) a kernel.
	ErrReplay = errors.New("ncu could not profile the kernel")
	// ErrNoKernel: the filter matched no launch.
	ErrNoKernel = errors.New("ncu profiled no kernel")
	// ErrProfiler: ncu itself failed (could not start, unknown section, no counters on this machine).
	ErrProfiler = errors.New("ncu failed")
)

// LogError is an error that ncu reported, with the lines of its log that say so.
type LogError struct {
	Kind  error    // ErrPermission, ErrReplay, ErrNoKernel or ErrProfiler
	Lines []string // ncu's ==ERROR== / ==WARNING== lines
}

func (e *LogError) Error() string {
	msg := e.Kind.Error()
	switch e.Kind {
	case ErrReplay:
		msg += " (it faulted or could not be replayed under the profiler; the variant's results are untouched): " +
			"check it with labrun run first, or profile it with fewer sections"
	case ErrNoKernel:
		msg += ": no launch matched the kernel filter (the variant was skipped, failed before it launched, or " +
			"launches a kernel of another name: give --kernel REGEX)"
	}
	if len(e.Lines) > 0 {
		msg += "\nncu said:\n  " + strings.Join(e.Lines, "\n  ")
	}
	return msg
}

func (e *LogError) Unwrap() error { return e.Kind }

// classify maps ncu's diagnostic lines to an error, or nil when they report none.
func classify(lines []string, profiled int) error {
	var errs, warns []string
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "==ERROR=="):
			errs = append(errs, l)
		case strings.HasPrefix(l, "==WARNING=="):
			warns = append(warns, l)
		}
	}
	all := append(append([]string(nil), errs...), warns...)
	has := func(ls []string, subs ...string) bool {
		for _, l := range ls {
			for _, s := range subs {
				if strings.Contains(l, s) {
					return true
				}
			}
		}
		return false
	}
	switch {
	case has(all, "ERR_NVGPUCTRPERM"):
		return &LogError{Kind: ErrPermission, Lines: all}
	case has(errs, "Failed to profile", "Failed to prepare kernel", "replay", "Replay"):
		return &LogError{Kind: ErrReplay, Lines: all}
	case len(errs) > 0:
		return &LogError{Kind: ErrProfiler, Lines: all}
	case profiled == 0:
		return &LogError{Kind: ErrNoKernel, Lines: all}
	}
	return nil
}
