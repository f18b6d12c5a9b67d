package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/kernel-labs/kernellabs/internal/gpu/hip"
	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/toolchain"
)

// hipJob is one portable kernel file of a lab compiled for one AMD target.
type hipJob struct {
	lab    *lab.Manifest
	kernel lab.KernelBuild
	target hip.Target
	err    error
}

func cmdHIPCheck(fs *flags, args []string, stdout, stderr io.Writer) int {
	targets := fs.String("targets", "", "comma-separated AMD targets (default: all of "+hipArchs()+")")
	jobs := fs.Int("jobs", runtime.NumCPU(), "compiles at once")
	packages := fs.Bool("packages", false, "print the Debian packages of the targets' compilers that are missing here, and exit")
	fs.intro = `Usage: labrun hip-check [flags] [LAB...]

Compiles every portable kernel of the labs (all labs when none is named) for AMD GPUs: the
kernel files of variants and helpers whose lab.yaml entry does not say needs: [nvidia], each
with its variants' flags. gfx90a (MI200) is built with hipcc into a device code object, gfx942
(MI300X) with clang-19 to ISA without the device libraries. Prints the kernels checked per
target; fails with the compiler's file:line on any error. Nothing runs: no AMD GPU is needed.
make hip-check installs the compilers (Debian packages) and runs this.

Flags:
`
	if code, ok := fs.parse(args); !ok {
		return code
	}
	if *jobs < 1 {
		fmt.Fprintf(stderr, "labrun hip-check: --jobs %d: give at least 1\n", *jobs)
		return exitUsage
	}
	ts := hip.Targets
	if *targets != "" {
		ts = nil
		for _, a := range strings.Split(*targets, ",") {
			t, err := hip.TargetByArch(strings.TrimSpace(a))
			if err != nil {
				fmt.Fprintf(stderr, "labrun hip-check: --targets: %v\n", err)
				return exitUsage
			}
			ts = append(ts, t)
		}
	}
	if *packages {
		for _, t := range ts {
			if _, err := t.Find(); err != nil {
				fmt.Fprintln(stdout, strings.Join(t.Packages, "\n"))
			}
		}
		return exitOK
	}
	root, code := findRoot(stderr)
	if code != exitOK {
		return code
	}
	mans, err := hipCheckLabs(root, fs.Args())
	if err != nil {
		fmt.Fprintf(stderr, "labrun hip-check: %v\n", err)
		return exitUsage
	}
	missing := false
	for _, t := range ts {
		if _, err := t.Find(); err != nil {
			fmt.Fprintf(stderr, "labrun hip-check: %v\n", err)
			missing = true
		}
	}
	if missing {
		return exitEnv
	}

	var all []*hipJob
	for _, t := range ts {
		for _, m := range mans {
			for _, k := range m.PortableKernels() {
				all = append(all, &hipJob{lab: m, kernel: k, target: t})
			}
		}
	}
	out, err := os.MkdirTemp("", "labrun-hip-check-")
	if err != nil {
		return exitFor(err, stderr)
	}
	defer os.RemoveAll(out)
	ctx, stop := interruptible()
	defer stop()
	started := time.Now()
	sem := make(chan struct{}, *jobs)
	var wg sync.WaitGroup
	// The largest files first: the longest compile starts at once instead of last.
	order := append([]*hipJob{}, all...)
	sort.SliceStable(order, func(a, b int) bool { return hipSize(order[a]) > hipSize(order[b]) })
	for _, j := range order {
		wg.Add(1)
		go func(j *hipJob) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			j.err = hip.Compile(ctx, j.target, hip.Request{
				Source:      filepath.Join(j.lab.Dir, j.kernel.File),
				IncludeDirs: []string{filepath.Join(root, "labs", "common"), j.lab.Dir},
				Flags:       j.kernel.Flags,
				OutDir:      out,
			})
		}(j)
	}
	wg.Wait()

	failed := 0
	for _, t := range ts {
		n := 0
		for _, j := range all {
			if j.target.Arch == t.Arch {
				n++
			}
		}
		fmt.Fprintf(stdout, "%s (%s, %s): %d kernel file(s)\n", t.Arch, t.GPU, t.Compiler, n)
		for _, j := range all {
			if j.target.Arch != t.Arch {
				continue
			}
			status := "ok"
			if j.err != nil {
				status = "FAILED"
				failed++
			}
			flags := ""
			if len(j.kernel.Flags) > 0 {
				flags = " " + strings.Join(j.kernel.Flags, " ")
			}
			fmt.Fprintf(stdout, "  %-6s %s/%s%s [%s]\n", status, j.lab.Name, j.kernel.File, flags, strings.Join(j.kernel.Entries, ", "))
		}
	}
	for _, j := range all {
		if j.err != nil {
			fmt.Fprintf(stderr, "\n%s for %s:\n%s\n", relTo(root, filepath.Join(j.lab.Dir, j.kernel.File)), j.target.Arch, hipErrorText(root, j.err))
		}
	}
	fmt.Fprintf(stderr, "hip-check: %d compile(s) in %.1fs, %d failed\n", len(all), time.Since(started).Seconds(), failed)
	if ctx.Err() != nil {
		return exitFailures
	}
	if failed > 0 {
		return exitFailures
	}
	return exitOK
}

func hipSize(j *hipJob) int64 {
	st, err := os.Stat(filepath.Join(j.lab.Dir, j.kernel.File))
	if err != nil {
		return 0
	}
	return st.Size() * int64(len(j.kernel.Entries))
}

func hipArchs() string {
	var a []string
	for _, t := range hip.Targets {
		a = append(a, t.Arch)
	}
	return strings.Join(a, ",")
}

// hipCheckLabs loads the named labs from root/labs (all of them when none is named).
func hipCheckLabs(root string, names []string) ([]*lab.Manifest, error) {
	dirs, err := lab.LabDirs(root)
	if err != nil {
		return nil, err
	}
	var mans []*lab.Manifest
	for _, base := range dirs {
		if len(names) > 0 && !hipNameMatches(base, names) {
			continue
		}
		m, err := lab.LoadManifest(filepath.Join(root, "labs", base))
		if err != nil {
			return nil, err
		}
		mans = append(mans, m)
	}
	if len(mans) == 0 {
		return nil, fmt.Errorf("no lab matches %s (labrun list shows them)", strings.Join(names, " "))
	}
	return mans, nil
}

// hipNameMatches accepts "2", "02" or "02_gemm" for labs/02_gemm.
func hipNameMatches(dir string, names []string) bool {
	for _, n := range names {
		if n == dir || strings.HasPrefix(dir, n+"_") || (len(n) == 1 && strings.HasPrefix(dir, "0"+n+"_")) {
			return true
		}
	}
	return false
}

// hipErrorText is a failed compile's errors as file:line: error: message, paths relative to the
// repository, or the compiler's output when it named no line.
func hipErrorText(root string, err error) string {
	var ce *toolchain.CompileError
	if !errors.As(err, &ce) {
		return "  " + err.Error()
	}
	var b strings.Builder
	for _, d := range ce.Diagnostics {
		if d.Kind != "error" {
			continue
		}
		d.File = relTo(root, d.File)
		b.WriteString("  " + d.String() + "\n")
	}
	if b.Len() == 0 {
		return "  " + strings.TrimSpace(ce.Output) + "\n  (" + ce.Command + ")"
	}
	return strings.TrimRight(b.String(), "\n")
}

func relTo(root, p string) string {
	if r, err := filepath.Rel(root, p); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return p
}
