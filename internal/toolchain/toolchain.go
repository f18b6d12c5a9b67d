// Package toolchain compiles kernel files: nvcc for CUDA (a cubin for the detected device), the
// host C++ compiler for the CPU emulator (emu*.go). Builds are cached by a hash of the source,
// the headers it can include, the flags and the compiler's version, and compile errors come back
// as file:line with the compiler's own message.
package toolchain

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
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
}

func (e *CompileError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "compiling %s failed", e.Source)
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

// FindNVCC locates nvcc: $NVCC, then PATH, then /usr/local/cuda/bin.
func FindNVCC() (string, error) {
	if p := os.Getenv("NVCC"); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("nvcc"); err == nil {
		return p, nil
	}
	for _, p := range []string{"/usr/local/cuda/bin/nvcc", "/opt/cuda/bin/nvcc"} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", errors.New("nvcc not found: install the CUDA toolkit (or put nvcc on PATH, or set NVCC=/path/to/nvcc)")
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

// HeaderFiles lists the files a kernel can include from dirs (their contents enter the cache key).
func HeaderFiles(dirs []string) []string {
	var files []string
	for _, d := range dirs {
		entries, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range entries {
			n := e.Name()
			if e.Type().IsRegular() && (strings.HasSuffix(n, ".h") || strings.HasSuffix(n, ".cuh") || strings.HasSuffix(n, ".hpp")) {
				files = append(files, filepath.Join(d, n))
			}
		}
	}
	sort.Strings(files)
	return files
}

// Request is one kernel file to build for CUDA.
type Request struct {
	Source      string   // the .cu file
	IncludeDirs []string // labs/common and the lab's own folder
	Arch        string   // "sm_90", or "sm_90a" for Hopper-only instructions
	Flags       []string // extra nvcc flags from the manifest
}

// NVCCArgs is the nvcc command line for r (without the program name).
func NVCCArgs(r Request, out string) []string {
	arch := strings.TrimPrefix(r.Arch, "sm_")
	args := []string{"-cubin", "-O3", "-std=c++17", "-lineinfo", "-Xptxas", "-v",
		fmt.Sprintf("-gencode=arch=compute_%s,code=sm_%s", arch, arch)}
	for _, d := range r.IncludeDirs {
		args = append(args, "-I", d)
	}
	args = append(args, r.Flags...)
	return append(args, "-o", out, r.Source)
}

// BuildCUDA compiles r to a cubin, reusing a cached one when nothing it depends on changed.
func BuildCUDA(ctx context.Context, r Request) (Artifact, error) {
	nvcc, err := FindNVCC()
	if err != nil {
		return Artifact{}, err
	}
	ver, err := CompilerVersion(nvcc)
	if err != nil {
		return Artifact{}, err
	}
	files := append([]string{r.Source}, HeaderFiles(r.IncludeDirs)...)
	key, err := Key(append([]string{"cuda", ver, r.Arch}, r.Flags...), files)
	if err != nil {
		return Artifact{}, err
	}
	base := strings.TrimSuffix(filepath.Base(r.Source), filepath.Ext(r.Source))
	dir := filepath.Join(CacheDir(), "cuda")
	out := filepath.Join(dir, fmt.Sprintf("%s-%s-%s.cubin", base, r.Arch, key))
	logPath := out + ".log"
	if _, err := os.Stat(out); err == nil {
		log, _ := os.ReadFile(logPath)
		return Artifact{Path: out, Log: string(log), Cached: true}, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Artifact{}, err
	}
	// A unique temporary name: two processes (or goroutines) may build the same file at once;
	// the rename below makes whichever finishes last win with an identical image.
	tf, err := os.CreateTemp(dir, base+"-*.cubin.tmp")
	if err != nil {
		return Artifact{}, err
	}
	tmp := tf.Name()
	tf.Close()
	args := NVCCArgs(r, tmp)
	cmd := exec.CommandContext(ctx, nvcc, args...)
	var stderr bytes.Buffer
	cmd.Stdout = &stderr
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		os.Remove(tmp)
		return Artifact{}, &CompileError{Source: r.Source, Command: nvcc + " " + strings.Join(args, " "),
			Diagnostics: ParseDiagnostics(stderr.String()), Output: stderr.String()}
	}
	if err := os.WriteFile(logPath, stderr.Bytes(), 0o644); err != nil {
		return Artifact{}, err
	}
	if err := os.Rename(tmp, out); err != nil {
		return Artifact{}, err
	}
	return Artifact{Path: out, Log: stderr.String()}, nil
}
