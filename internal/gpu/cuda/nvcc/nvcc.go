// Package nvcc is the CUDA backend's compiler: nvcc's command line for a kernel file, built into
// a cubin for one target (sm_90, or sm_90a for Hopper-only instructions; the backend's rules
// pick it), cached by toolchain's dependency cache and built hermetically for a submission. It
// needs no cgo and no CUDA install to build, so that the grader and tests can use it anywhere.
package nvcc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/kernel-labs/kernellabs/internal/toolchain"
)

// Family names the compiler in results files and the cache ("nvcc").
const Family = "nvcc"

// Find locates nvcc: $NVCC, then PATH, then /usr/local/cuda/bin and /opt/cuda/bin.
func Find() (string, error) {
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

// Version is nvcc's version line ("Cuda compilation tools, release 13.0, V13.0.48").
func Version() (string, error) {
	nvcc, err := Find()
	if err != nil {
		return "", err
	}
	return toolchain.CompilerVersion(nvcc)
}

// Args is the nvcc command line for r (without the program name).
func Args(r toolchain.Request, out string) []string {
	arch := strings.TrimPrefix(r.Arch, "sm_")
	args := []string{"-cubin", "-O3", "-std=c++17", "-lineinfo", "-Xptxas", "-v",
		fmt.Sprintf("-gencode=arch=compute_%s,code=sm_%s", arch, arch)}
	for _, d := range r.IncludeDirs {
		args = append(args, "-I", d)
	}
	args = append(args, r.Flags...)
	return append(args, "-o", out, r.Source)
}

// Build compiles r to a cubin for r.Arch, reusing a cached one while nothing it read changed
// (nvcc's dependency list). A submission (r.Submission) is built hermetically.
func Build(ctx context.Context, r toolchain.Request) (toolchain.Artifact, error) {
	nvcc, err := Find()
	if err != nil {
		return toolchain.Artifact{}, err
	}
	ver, err := toolchain.CompilerVersion(nvcc)
	if err != nil {
		return toolchain.Artifact{}, err
	}
	parts := append([]string{"cuda-2", ver, r.Arch, strings.Join(r.IncludeDirs, "\x00")}, r.Flags...)
	if r.Submission != nil {
		parts = append(parts, "submission", filepath.Base(r.Source))
	} else {
		parts = append(parts, r.Source)
	}
	key, err := toolchain.Key(parts, []string{r.Source})
	if err != nil {
		return toolchain.Artifact{}, err
	}
	base := strings.TrimSuffix(filepath.Base(r.Source), filepath.Ext(r.Source))
	dir := filepath.Join(toolchain.CacheDir(), "cuda")
	index := filepath.Join(dir, fmt.Sprintf("%s-%s-%s.deps.json", base, r.Arch, key))
	if a, ok := toolchain.Cached(index); ok {
		return a, nil
	}
	// nvcc's own tools and headers live in the CUDA toolkit's folder: readable in the sandbox.
	w, err := toolchain.NewWorkspace(dir, r.Source, r.Submission, r.IncludeDirs, []string{filepath.Dir(filepath.Dir(nvcc))})
	if err != nil {
		return toolchain.Artifact{}, err
	}
	defer w.Close()
	req := r
	req.Source = w.Source
	tmp := filepath.Join(w.Dir, base+".cubin")
	depFile := filepath.Join(w.Dir, "build.d")
	args := append(Args(req, tmp), "-MD", "-MF", depFile)
	stdout, stderr, err := w.Run(ctx, nvcc, args)
	if err != nil {
		return toolchain.Artifact{}, w.Fail(nvcc, args, stdout+stderr)
	}
	log := w.Relocate(stdout + stderr)
	if err := w.ReadDeps(depFile); err != nil {
		return toolchain.Artifact{}, err
	}
	if err := w.Audit(r.IncludeDirs); err != nil {
		return toolchain.Artifact{}, err
	}
	depHash, err := w.DepHash()
	if err != nil {
		return toolchain.Artifact{}, err
	}
	out := filepath.Join(dir, fmt.Sprintf("%s-%s-%s-%s.cubin", base, r.Arch, key, depHash))
	if err := w.Commit(index, tmp, out, log); err != nil {
		return toolchain.Artifact{}, err
	}
	return toolchain.Artifact{Path: out, Log: log}, nil
}
