package toolchain

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
)

func TestScanIncludes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		src   string
		lines []int // lines refused
	}{
		{"shared and system headers", "#include \"kl.cuh\"\n#include <stdint.h>\n#include \"gemm_common.cuh\"\n", nil},
		{"absolute", "#include \"kl.cuh\"\n#include \"/course/labs/02_gemm/exercises/ex1_smem_tiling.cu\"\n", []int{2}},
		{"dot dot", "#  include \"../exercises/ex1.cu\"\n", []int{1}},
		{"dot dot inside", "#include <foo/../../etc/passwd>\n", []int{1}},
		{"include_next and import", "#include_next \"/x.h\"\n#import \"../y.h\"\n", []int{1, 2}},
		{"has_include", "#if __has_include(\"../kernels/03.cu\")\n#endif\n", []int{1}},
		{"pragma dependency", "#pragma GCC dependency \"/etc/passwd\"\n", []int{1}},
		{"continued line", "#include \\\n  \"/abs.cu\"\n", []int{1}},
		{"comment between", "# /* x */ include \"../a.cu\"\n", []int{1}},
		{"commented out", "// #include \"/abs.cu\"\n/* #include \"../b.cu\"\n*/\n", nil},
		{"in a string", "const char* s = \"#include \\\"/abs.cu\\\"\";\n", nil},
		{"macro include (the sandbox's and the audit's job)", "#define P \"/abs.cu\"\n#include P\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds := ScanIncludes("sub.cu", []byte(tc.src))
			var lines []int
			for _, d := range ds {
				lines = append(lines, d.Line)
				assert.Equal(t, "sub.cu", d.File)
				assert.Contains(t, d.Message, "a submission may include only")
			}
			assert.Equal(t, tc.lines, lines)
		})
	}
}

func TestParseDeps(t *testing.T) {
	got := parseDeps([]byte("x.o: /a/k.cu /a/kl.cuh \\\n /usr/include/c++/12/new \\\n /a/with\\ space.h\n/a/kl.cuh:\n"))
	assert.Equal(t, []string{"/a/k.cu", "/a/kl.cuh", "/usr/include/c++/12/new", "/a/with space.h"}, got)
}

// A submission built hermetically cannot read the course tree: includes the scan cannot see (a
// macro-built path that climbs from labs/common to a lab's exercises) fail the dependency audit.
func TestSubmissionBuildCannotIncludeTheCourse(t *testing.T) {
	root, inc := emuRepo(t)
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	sub := &Submission{Protect: []string{root}}
	sandboxed := sandbox.Check() == nil
	if sandboxed {
		sub.Sandbox = true
	} else {
		t.Logf("the sandbox is not available here (%v): the dependency audit alone keeps the course out", sandbox.Check())
	}
	build := func(name, body string) error {
		src := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(src, []byte(body), 0o644))
		_, _, _, err := buildEmu(context.Background(), src, inc, nil, cache, sub)
		return err
	}
	// The course's own shared headers are fine.
	require.NoError(t, build("ok.cu", "#include \"kl.cuh\"\n#include \"gemm_common.cuh\"\nextern \"C\" __global__ void k(float* x) { x[0] = 1; }\n"))

	err := build("macro.cu", "#include \"kl.cuh\"\n#define Q(x) #x\n#define P(x) Q(x)\n#include P(../02_gemm/exercises/ex1_smem_tiling.cu)\n")
	var ce *CompileError
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
	_, _, _, err = buildEmu(context.Background(), src, inc, nil, cache, &unconfined)
	require.True(t, errors.As(err, &ce), "%v", err)
	assert.Contains(t, err.Error(), "outside the shared headers")

	// The lab's own folder is not on the include path any more.
	err = build("lab.cu", "#include \"kl.cuh\"\n#include \"kernels/01_naive.cu\"\n")
	require.True(t, errors.As(err, &ce), "%v", err)
	assert.Contains(t, err.Error(), "kernels/01_naive.cu")

	err = build("abs.cu", "#include \""+filepath.Join(root, "labs", "02_gemm", "exercises", "ex1_smem_tiling.cu")+"\"\n")
	require.True(t, errors.As(err, &ce), "%v", err)
	first, _ := ce.First()
	assert.Equal(t, filepath.Join(dir, "abs.cu"), first.File, "the message names the submitted file, not its scratch copy")
	assert.Equal(t, 1, first.Line)
}

// On the emulator a submission must also be CUDA device code: host-only C++ in a kernel fails
// with clang's message at the submission's file:line.
func TestSubmissionDeviceCheck(t *testing.T) {
	root, inc := emuRepo(t)
	if err := CheckDeviceCompiler(); err != nil {
		t.Skipf("the device-code check cannot run here: %v", err)
	}
	dir := t.TempDir()
	sub := &Submission{Protect: []string{root}, DeviceCheck: true, Sandbox: sandbox.Check() == nil}
	src := filepath.Join(dir, "host_only.cu")
	require.NoError(t, os.WriteFile(src, []byte("#include \"kl.cuh\"\n#include <vector>\n\nextern \"C\" __global__ void k(float* x) {\n    std::vector<float> v(4);\n    x[threadIdx.x] = v[0];\n}\n"), 0o644))
	_, _, _, err := buildEmu(context.Background(), src, inc, nil, filepath.Join(dir, "cache"), sub)
	var ce *CompileError
	require.True(t, errors.As(err, &ce), "%v", err)
	first, ok := ce.First()
	require.True(t, ok, "%v", err)
	assert.Equal(t, src, first.File)
	assert.Equal(t, 5, first.Line)
	assert.Contains(t, err.Error(), "device-code check")

	// Without the check, the host compiler accepts it.
	_, _, _, err = buildEmu(context.Background(), src, inc, nil, filepath.Join(dir, "cache"), &Submission{Protect: []string{root}})
	assert.NoError(t, err)
}

// Correct device code passes the device-code check: every exercise file of the course (the
// reference solutions) and the emulator's own test kernels, which use its whole CUDA surface
// (hostile.cu is host code on purpose).
func TestDeviceCheckAcceptsCorrectKernels(t *testing.T) {
	root, inc := emuRepo(t)
	clang, err := DeviceCompiler()
	if err != nil {
		t.Skipf("the device-code check cannot run here: %v", err)
	}
	emuDir, err := EmuDir(inc)
	require.NoError(t, err)
	files, _ := filepath.Glob(filepath.Join(root, "labs", "*", "exercises", "*.cu"))
	more, _ := filepath.Glob(filepath.Join(root, "internal", "gpu", "emu", "testdata", "*.cu"))
	require.NotEmpty(t, files)
	for _, f := range append(files, more...) {
		if filepath.Base(f) == "hostile.cu" {
			continue
		}
		args := DeviceCheckArgs(clang, f, append(append([]string{}, inc...), emuDir), filepath.Join(t.TempDir(), "d"))
		out, err := exec.Command(clang, args...).CombinedOutput()
		assert.NoError(t, err, "%s:\n%s", f, out)
	}
}

// fakeNVCC puts on $NVCC a stand-in for nvcc that preprocesses with the host compiler: enough to
// test BuildCUDA's hermetic builds and dependency cache on a machine without CUDA.
func fakeNVCC(t *testing.T) {
	t.Helper()
	cxx, err := EmuCompiler()
	if err != nil {
		t.Skipf("no host compiler: %v", err)
	}
	script := `#!/bin/sh
if [ "$1" = --version ]; then echo "Cuda compilation tools, release 0.0, fake"; exit 0; fi
out= dep= src= incs=
while [ $# -gt 0 ]; do
  case "$1" in
    -o) out=$2; shift ;;
    -MF) dep=$2; shift ;;
    -I) incs="$incs -I $2"; shift ;;
    -Xptxas|-gencode*) [ "$1" = -Xptxas ] && shift ;;
    -*) ;;
    *) src=$1 ;;
  esac
  shift
done
exec ` + cxx + ` -x c++ -E -D__CUDACC__ -DKL_DEVICE_CHECK -MD -MF "$dep" -MT "$out" $incs "$src" -o "$out"
`
	p := filepath.Join(t.TempDir(), "nvcc")
	require.NoError(t, os.WriteFile(p, []byte(script), 0o755))
	t.Setenv("NVCC", p)
	t.Setenv("LABRUN_CACHE", filepath.Join(t.TempDir(), "cache"))
}

// The CUDA builder keys its cache by nvcc's dependency list and builds submissions hermetically
// too (with a stand-in nvcc: the GPU build itself is tested on a GPU).
func TestBuildCUDAHermeticAndDependencyCache(t *testing.T) {
	root, inc := emuRepo(t)
	fakeNVCC(t)
	dir := t.TempDir()
	part := filepath.Join(dir, "body.cu")
	src := filepath.Join(dir, "k.cu")
	require.NoError(t, os.WriteFile(part, []byte("int body = 1;\n"), 0o644))
	require.NoError(t, os.WriteFile(src, []byte("#include \"body.cu\"\n"), 0o644))
	req := Request{Source: src, IncludeDirs: []string{dir}, Arch: "sm_90"}
	a1, err := BuildCUDA(context.Background(), req)
	require.NoError(t, err)
	a2, err := BuildCUDA(context.Background(), req)
	require.NoError(t, err)
	assert.True(t, a2.Cached)
	assert.Equal(t, a1.Path, a2.Path)
	require.NoError(t, os.WriteFile(part, []byte("int body = 2;\n"), 0o644))
	a3, err := BuildCUDA(context.Background(), req)
	require.NoError(t, err)
	assert.False(t, a3.Cached, "the included file changed")
	assert.NotEqual(t, a1.Path, a3.Path)

	// A submission: the include scan, then the dependency audit of a macro-built include.
	sub := &Submission{Protect: []string{root}}
	bad := filepath.Join(dir, "bad.cu")
	require.NoError(t, os.WriteFile(bad, []byte("#include \"kl.cuh\"\n#include \"../02_gemm/exercises/ex1_smem_tiling.cu\"\n"), 0o644))
	_, err = BuildCUDA(context.Background(), Request{Source: bad, IncludeDirs: inc, Arch: "sm_90", Submission: sub})
	var ce *CompileError
	require.True(t, errors.As(err, &ce), "%v", err)
	assert.Contains(t, err.Error(), "bad.cu:2: error: refused include")
	macro := filepath.Join(dir, "macro.cu")
	require.NoError(t, os.WriteFile(macro, []byte("#define Q(x) #x\n#define P(x) Q(x)\n#include P(../02_gemm/exercises/ex1_smem_tiling.cu)\n"), 0o644))
	_, err = BuildCUDA(context.Background(), Request{Source: macro, IncludeDirs: inc, Arch: "sm_90", Submission: sub})
	require.True(t, errors.As(err, &ce), "%v", err)
	assert.Contains(t, err.Error(), "outside the shared headers")
	ok := filepath.Join(dir, "ok.cu")
	require.NoError(t, os.WriteFile(ok, []byte("#include \"gemm_common.cuh\"\n"), 0o644))
	_, err = BuildCUDA(context.Background(), Request{Source: ok, IncludeDirs: inc, Arch: "sm_90", Submission: sub})
	assert.NoError(t, err)

	// In the sandbox the compiler cannot even open the reference.
	if sandbox.Check() != nil {
		return
	}
	confined := &Submission{Protect: []string{root}, Sandbox: true}
	ok2 := filepath.Join(dir, "ok2.cu")
	require.NoError(t, os.WriteFile(ok2, []byte("#include \"gemm_common.cuh\"\nint confined;\n"), 0o644))
	a, err := BuildCUDA(context.Background(), Request{Source: ok2, IncludeDirs: inc, Arch: "sm_90", Submission: confined})
	require.NoError(t, err, "the shared headers are readable in the sandbox")
	assert.False(t, a.Cached)
	_, err = BuildCUDA(context.Background(), Request{Source: macro, IncludeDirs: inc, Arch: "sm_90", Submission: confined})
	require.True(t, errors.As(err, &ce), "%v", err)
	assert.Contains(t, err.Error(), "Permission denied")
}
