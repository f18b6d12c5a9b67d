package nvcc

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/gpu/emu/emucc"
	"github.com/kernel-labs/kernellabs/internal/sandbox"
	"github.com/kernel-labs/kernellabs/internal/toolchain"
)

// The test binary stands in for labrun when a submission's compiler is started in the sandbox
// ("labrun __sandbox POLICY -- PROGRAM").
func TestMain(m *testing.M) { os.Exit(sandbox.StandIn(m.Run)) }

// course is the repository's root and the shared headers' folder (labs/common), for builds that
// include them; the stand-in nvcc preprocesses with the emulator's host compiler.
func course(t *testing.T) (root string, includes []string) {
	t.Helper()
	if err := emucc.Check(); err != nil {
		t.Skipf("no host compiler for the stand-in nvcc: %v", err)
	}
	wd, err := os.Getwd()
	require.NoError(t, err)
	root = filepath.Join(wd, "..", "..", "..", "..")
	return root, []string{filepath.Join(root, "labs", "common")}
}

func TestNVCCArgs(t *testing.T) {
	args := strings.Join(Args(toolchain.Request{Source: "k.cu", Arch: "sm_90a", IncludeDirs: []string{"inc"}, Flags: []string{"-DX=1"}}, "o.cubin"), " ")
	assert.Contains(t, args, "-gencode=arch=compute_90a,code=sm_90a")
	assert.Contains(t, args, "-cubin")
	assert.Contains(t, args, "-I inc")
	assert.Contains(t, args, "-DX=1")
	assert.True(t, strings.HasSuffix(args, "-o o.cubin k.cu"))
}

func TestFindHonoursEnv(t *testing.T) {
	t.Setenv("NVCC", "/opt/my/nvcc")
	p, err := Find()
	require.NoError(t, err)
	assert.Equal(t, "/opt/my/nvcc", p)
}

// fakeNVCC puts on $NVCC a stand-in for nvcc that preprocesses with the host compiler: enough to
// test Build's hermetic builds and dependency cache on a machine without CUDA.
func fakeNVCC(t *testing.T) {
	t.Helper()
	cxx, err := emucc.Compiler()
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
func TestBuildHermeticAndDependencyCache(t *testing.T) {
	root, inc := course(t)
	fakeNVCC(t)
	dir := t.TempDir()
	part := filepath.Join(dir, "body.cu")
	src := filepath.Join(dir, "k.cu")
	require.NoError(t, os.WriteFile(part, []byte("int body = 1;\n"), 0o644))
	require.NoError(t, os.WriteFile(src, []byte("#include \"body.cu\"\n"), 0o644))
	req := toolchain.Request{Source: src, IncludeDirs: []string{dir}, Arch: "sm_90"}
	a1, err := Build(context.Background(), req)
	require.NoError(t, err)
	a2, err := Build(context.Background(), req)
	require.NoError(t, err)
	assert.True(t, a2.Cached)
	assert.Equal(t, a1.Path, a2.Path)
	require.NoError(t, os.WriteFile(part, []byte("int body = 2;\n"), 0o644))
	a3, err := Build(context.Background(), req)
	require.NoError(t, err)
	assert.False(t, a3.Cached, "the included file changed")
	assert.NotEqual(t, a1.Path, a3.Path)

	// A submission: the include scan, then the dependency audit of a macro-built include.
	sub := &toolchain.Submission{Protect: []string{root}}
	bad := filepath.Join(dir, "bad.cu")
	require.NoError(t, os.WriteFile(bad, []byte("#include \"kl.cuh\"\n#include \"../02_gemm/exercises/ex1_smem_tiling.cu\"\n"), 0o644))
	_, err = Build(context.Background(), toolchain.Request{Source: bad, IncludeDirs: inc, Arch: "sm_90", Submission: sub})
	var ce *toolchain.CompileError
	require.True(t, errors.As(err, &ce), "%v", err)
	assert.Contains(t, err.Error(), "bad.cu:2: error: refused include")
	macro := filepath.Join(dir, "macro.cu")
	require.NoError(t, os.WriteFile(macro, []byte("#define Q(x) #x\n#define P(x) Q(x)\n#include P(../02_gemm/exercises/ex1_smem_tiling.cu)\n"), 0o644))
	_, err = Build(context.Background(), toolchain.Request{Source: macro, IncludeDirs: inc, Arch: "sm_90", Submission: sub})
	require.True(t, errors.As(err, &ce), "%v", err)
	assert.Contains(t, err.Error(), "outside the shared headers")
	ok := filepath.Join(dir, "ok.cu")
	require.NoError(t, os.WriteFile(ok, []byte("#include \"gemm_common.cuh\"\n"), 0o644))
	_, err = Build(context.Background(), toolchain.Request{Source: ok, IncludeDirs: inc, Arch: "sm_90", Submission: sub})
	assert.NoError(t, err)

	// In the sandbox the compiler cannot even open the reference.
	if sandbox.Check() != nil {
		return
	}
	confined := &toolchain.Submission{Protect: []string{root}, Sandbox: true}
	ok2 := filepath.Join(dir, "ok2.cu")
	require.NoError(t, os.WriteFile(ok2, []byte("#include \"gemm_common.cuh\"\nint confined;\n"), 0o644))
	a, err := Build(context.Background(), toolchain.Request{Source: ok2, IncludeDirs: inc, Arch: "sm_90", Submission: confined})
	require.NoError(t, err, "the shared headers are readable in the sandbox")
	assert.False(t, a.Cached)
	_, err = Build(context.Background(), toolchain.Request{Source: macro, IncludeDirs: inc, Arch: "sm_90", Submission: confined})
	require.True(t, errors.As(err, &ce), "%v", err)
	assert.Contains(t, err.Error(), "Permission denied")
}
