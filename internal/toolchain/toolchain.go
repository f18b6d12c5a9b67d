// Package toolchain is what every backend's compiler shares: a build in a scratch folder of its
// own (Workspace), the build cache, keyed by a hash of the source, the flags and the compiler's
// version and checked against every file the compiler read (depcache.go), the hermetic,
// sandboxed build of files submitted for grading (hermetic.go, sandbox.go), the device-code
// check of emulator submissions (devcheck.go), and compile errors as file:line with the
// compiler's own message. The compilers themselves live with their backends:
// internal/gpu/cuda/nvcc (nvcc, cubins), internal/gpu/emu/emucc (the host C++ compiler, the
// emulator's shared objects), internal/gpu/hip (hipcc, the HIP compile check); package
// internal/gpu/backend says which compiler builds for which backend.
package toolchain

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// Artifact is a compiled kernel image.
type Artifact struct {
	Path   string // cubin, or the emulator's shared object
	Log    string // the compiler's report (ptxas -v: registers, shared memory, spills)
	Cached bool
}

// Diagnostic is one compiler message located in a source file.
type Diagnostic struct {
	File    string
	Line    int
	Kind    string // "error", "warning"
	Message string
}

func (d Diagnostic) String() string {
	return fmt.Sprintf("%s:%d: %s: %s", d.File, d.Line, d.Kind, d.Message)
}

// CompileError is a failed compile: the located errors first, then the compiler's full output.
type CompileError struct {
	Source      string
	Command     string
	Diagnostics []Diagnostic
	Output      string
	Stage       string // what failed when it is not the compile itself ("the device-code check")
}

func (e *CompileError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "compiling %s failed", e.Source)
	if e.Stage != "" {
		fmt.Fprintf(&b, " (%s)", e.Stage)
	}
	n := 0
	for _, d := range e.Diagnostics {
		if d.Kind != "error" {
			continue
		}
		if n == 0 {
			b.WriteString(":")
		}
		b.WriteString("\n  " + d.String())
		n++
	}
	if n == 0 {
		out := strings.TrimSpace(e.Output)
		if len(out) > 2000 {
			out = out[len(out)-2000:]
		}
		b.WriteString(":\n" + out)
	}
	return b.String()
}

// First returns the first located error, for one-line reports.
func (e *CompileError) First() (Diagnostic, bool) {
	for _, d := range e.Diagnostics {
		if d.Kind == "error" {
			return d, true
		}
	}
	return Diagnostic{}, false
}

// nvcc writes "file.cu(12): error: ..."; gcc and clang write "file.cu:12:5: error: ...".
var (
	nvccDiagRE = regexp.MustCompile(`(?m)^(.+?)\((\d+)\): (error|warning)[^:]*: (.*)$`)
	gccDiagRE  = regexp.MustCompile(`(?m)^(.+?):(\d+):(?:\d+:)? (error|fatal error|warning): (.*)$`)
)

// ParseDiagnostics finds file:line messages in compiler output (nvcc and gcc styles).
func ParseDiagnostics(output string) []Diagnostic {
	var ds []Diagnostic
	for _, re := range []*regexp.Regexp{nvccDiagRE, gccDiagRE} {
		for _, m := range re.FindAllStringSubmatch(output, -1) {
			line, _ := strconv.Atoi(m[2])
			kind := m[3]
			if kind == "fatal error" {
				kind = "error"
			}
			ds = append(ds, Diagnostic{File: m[1], Line: line, Kind: kind, Message: strings.TrimSpace(m[4])})
		}
	}
	return ds
}

// CacheDir is where compiled kernels are kept: $LABRUN_CACHE, else the user cache folder.
func CacheDir() string {
	if d := os.Getenv("LABRUN_CACHE"); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "kernellabs")
	}
	return filepath.Join(os.TempDir(), "kernellabs-cache")
}

var (
	versionMu sync.Mutex
	versions  = map[string]string{}
)

// CompilerVersion runs `compiler --version` once per process and returns its output's last
// non-empty line ("Cuda compilation tools, release 13.0, V13.0.48" for nvcc).
func CompilerVersion(compiler string) (string, error) {
	versionMu.Lock()
	defer versionMu.Unlock()
	if v, ok := versions[compiler]; ok {
		return v, nil
	}
	out, err := exec.Command(compiler, "--version").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s --version: %v", compiler, err)
	}
	v := ""
	for _, l := range strings.Split(string(out), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			v = l
			if compiler != "nvcc" && !strings.HasSuffix(compiler, "/nvcc") {
				break // gcc's first line names the version
			}
		}
	}
	versions[compiler] = v
	return v, nil
}

// Key hashes everything a build depends on.
func Key(parts []string, files []string) (string, error) {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:%s;", len(p), p)
	}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "file %s;", filepath.Base(f))
		_, err = io.Copy(h, fh)
		fh.Close()
		if err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:24], nil
}

// Request is one kernel file to build, for any backend's compiler.
type Request struct {
	Source      string   // the .cu file
	IncludeDirs []string // labs/common and the lab's own folder
	Arch        string   // the target, from the backend's rules: "sm_90", "sm_90a" (unused by the emulator)
	Flags       []string // extra compiler flags from the manifest and the backend's rules
	// Submission, when set, builds Source as a file submitted for grading: hermetically, alone in
	// an empty folder, with only IncludeDirs (labs/common) and the emulator's headers to include
	// (hermetic.go).
	Submission *Submission
}
