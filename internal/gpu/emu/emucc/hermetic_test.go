package emucc

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/sandbox"
	"github.com/kernel-labs/kernellabs/internal/toolchain"
)

// The test binary stands in for labrun when a submission's compiler is started in the sandbox
// ("labrun __sandbox POLICY -- PROGRAM").
func TestMain(m *testing.M) { os.Exit(sandbox.StandIn(m.Run)) }

// A submission built hermetically cannot read the course tree: includes the scan cannot see (a
// macro-built path that climbs from labs/common to a lab's exercises) fail the dependency audit.
func TestSubmissionBuildCannotIncludeTheCourse(t *testing.T) {
	root, inc := emuRepo(t)
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	sub := &toolchain.Submission{Protect: []string{root}}
	sandboxed := sandbox.Check() == nil
	if sandboxed {
		sub.Sandbox = true
	} else {
		t.Logf("the sandbox is not available here (%v): the dependency audit alone keeps the course out", sandbox.Check())
	}
	try := func(name, body string) error {
		src := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(src, []byte(body), 0o644))
		_, err := build(context.Background(), toolchain.Request{Source: src, IncludeDirs: inc, Submission: sub}, cache)
		return err
	}
	// The course's own shared headers are fine.
	require.NoError(t, try("ok.cu", "#include \"kl.cuh\"\n#include \"gemm_common.cuh\"\nextern \"C\" __global__ void k(float* x) { x[0] = 1; }\n"))

	err := try("macro.cu", "#include \"kl.cuh\"\n#define Q(x) #x\n#define P(x) Q(x)\n#include P(../02_gemm/exercises/ex1_smem_tiling.cu)\n")
	var ce *toolchain.CompileError
	require.True(t, errors.As(err, &ce), "%v", err)
	assert.Contains(t, err.Error(), "02_gemm/exercises/ex1_smem_tiling.cu")
	if sandboxed {
		assert.Contains(t, err.Error(), "Permission denied", "the sandbox denies the compiler the course tree")
	} else {
		assert.Contains(t, err.Error(), "outside the shared headers", "the dependency audit")
	}
	// Without the sandbox the audit is what refuses it.
	unconfined := *sub
	unconfined.Sandbox = false
	src := filepath.Join(dir, "macro2.cu")
	require.NoError(t, os.WriteFile(src, []byte("#include \"kl.cuh\"\n#define Q(x) #x\n#define P(x) Q(x)\n#include P(../02_gemm/exercises/ex1_smem_tiling.cu)\n"), 0o644))
	_, err = build(context.Background(), toolchain.Request{Source: src, IncludeDirs: inc, Submission: &unconfined}, cache)
	require.True(t, errors.As(err, &ce), "%v", err)
	assert.Contains(t, err.Error(), "outside the shared headers")

	// The lab's own folder is not on the include path any more.
	err = try("lab.cu", "#include \"kl.cuh\"\n#include \"kernels/01_naive.cu\"\n")
	require.True(t, errors.As(err, &ce), "%v", err)
	assert.Contains(t, err.Error(), "kernels/01_naive.cu")

	err = try("abs.cu", "#include \""+filepath.Join(root, "labs", "02_gemm", "exercises", "ex1_smem_tiling.cu")+"\"\n")
	require.True(t, errors.As(err, &ce), "%v", err)
	first, _ := ce.First()
	assert.Equal(t, filepath.Join(dir, "abs.cu"), first.File, "the message names the submitted file, not its scratch copy")
	assert.Equal(t, 1, first.Line)
}

// On the emulator a submission must also be CUDA device code: host-only C++ in a kernel fails
// with clang's message at the submission's file:line.
func TestSubmissionDeviceCheck(t *testing.T) {
	root, inc := emuRepo(t)
	if err := toolchain.CheckDeviceCompiler(); err != nil {
		t.Skipf("the device-code check cannot run here: %v", err)
	}
	dir := t.TempDir()
	sub := &toolchain.Submission{Protect: []string{root}, DeviceCheck: true, Sandbox: sandbox.Check() == nil}
	src := filepath.Join(dir, "host_only.cu")
	require.NoError(t, os.WriteFile(src, []byte("#include \"kl.cuh\"\n#include <vector>\n\nextern \"C\" __global__ void k(float* x) {\n    std::vector<float> v(4);\n    x[threadIdx.x] = v[0];\n}\n"), 0o644))
	_, err := build(context.Background(), toolchain.Request{Source: src, IncludeDirs: inc, Submission: sub}, filepath.Join(dir, "cache"))
	requireErrorAt(t, err, src, 5)
	assert.Contains(t, err.Error(), "device-code check")

	// Without the check, the host compiler accepts it.
	_, err = build(context.Background(), toolchain.Request{Source: src, IncludeDirs: inc, Submission: &toolchain.Submission{Protect: []string{root}}}, filepath.Join(dir, "cache"))
	assert.NoError(t, err)
}

// Correct device code passes the device-code check: every exercise file of the course (the
// reference solutions) and the emulator's own test kernels, which use its whole CUDA surface
// (hostile.cu is host code on purpose).
func TestDeviceCheckAcceptsCorrectKernels(t *testing.T) {
	root, inc := emuRepo(t)
	clang, err := toolchain.DeviceCompiler()
	if err != nil {
		t.Skipf("the device-code check cannot run here: %v", err)
	}
	emuDir, err := Dir(inc)
	require.NoError(t, err)
	files, _ := filepath.Glob(filepath.Join(root, "labs", "*", "exercises", "*.cu"))
	more, _ := filepath.Glob(filepath.Join(root, "internal", "gpu", "emu", "testdata", "*.cu"))
	require.NotEmpty(t, files)
	for _, f := range append(files, more...) {
		if filepath.Base(f) == "hostile.cu" {
			continue
		}
		args := toolchain.DeviceCheckArgs(clang, f, append(append([]string{}, inc...), emuDir), filepath.Join(t.TempDir(), "d"))
		out, err := exec.Command(clang, args...).CombinedOutput()
		assert.NoError(t, err, "%s:\n%s", f, out)
	}
}
