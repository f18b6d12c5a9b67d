package emucc

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/sandbox"
	"github.com/kernel-labs/kernellabs/internal/toolchain"
)

// The scanner reads preprocessed text in which kl_emu.h turned the CUDA qualifiers into markers.
func TestEmuScanEntries(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  string
		want []emuEntry
	}{
		{"plain", `extern "C" __kl_global__ void k(float* x, int n) { x[0] = n; }`,
			[]emuEntry{{Name: "k", Params: []emuParam{{"float*", "x"}, {"int", "n"}}}}},
		{"launch bounds, restrict, several lines",
			"extern \"C\" __kl_global__ void __kl_launch_bounds__(16 * 16, 2)\nsgemm(const float* __restrict A,\n      const float* __restrict B, float* __restrict C, int M, int N, int K) {\n}",
			[]emuEntry{{Name: "sgemm", MaxThreads: "16*16", Params: []emuParam{{"const float*", "A"}, {"const float*", "B"},
				{"float*", "C"}, {"int", "M"}, {"int", "N"}, {"int", "K"}}}}},
		{"unnamed and multi-word types", `extern "C" __kl_global__ void k(unsigned long long, const int, float * const p, void *) {}`,
			[]emuEntry{{Name: "k", Params: []emuParam{{"unsigned long long", ""}, {"const int", ""}, {"float*", "p"}, {"void*", ""}}}}},
		{"no parameters", `extern "C" __kl_global__ void empty(void) {}`, []emuEntry{{Name: "empty"}}},
		{"templates and arrays", `extern "C" __kl_global__ void k(Vec<float, 4> v, int a[3], kl::Params p) {}`,
			[]emuEntry{{Name: "k", Params: []emuParam{{"Vec<float, 4>", "v"}, {"int*", "a"}, {"kl::Params", "p"}}}}},
		{"extern C block", `extern "C" { __kl_global__ void a(int x) {} __kl_global__ void b(float y) { if (y) { } } }`,
			[]emuEntry{{Name: "a", Params: []emuParam{{"int", "x"}}}, {Name: "b", Params: []emuParam{{"float", "y"}}}}},
		{"not entries: templates, C++ names, declarations",
			`template <int B> __kl_global__ void t(float* x) {}
			 __kl_global__ void cpp_name(float* x) {}
			 extern "C" __kl_global__ void declared(float* x);
			 extern "C" __kl_global__ void defined(float* x) { const char* s = "}{"; }`,
			[]emuEntry{{Name: "defined", Params: []emuParam{{"float*", "x"}}}}},
		{"attributes", `extern "C" __kl_global__ __attribute__((used)) void k(int __attribute__((unused)) n) {}`,
			[]emuEntry{{Name: "k", Params: []emuParam{{"int", "n"}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := scan(tc.src)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestEmuScanDynamicShared(t *testing.T) {
	src := `extern __kl_shared__ float global_smem[];
		extern "C" __kl_global__ void k(float* x) {
			extern __kl_shared__ __attribute__((aligned(16))) unsigned char raw[];
			__kl_shared__ float tile[16][16];
			extern __kl_shared__ float global_smem[];
		}
		__device__ void f() { extern __kl_shared__ float4 rows[][8]; }`
	_, sh, err := scan(src)
	require.NoError(t, err)
	assert.Equal(t, []emuDynShared{
		{Type: "float", Name: "global_smem"},
		{Type: "unsigned char", Name: "raw"},
		{Type: "float4", Name: "rows", Rest: "[8]"},
	}, sh)
	gen := generate("k.cu", nil, sh)
	assert.Contains(t, gen, "thread_local float4 rows[KL_EMU_MAX_DYN_SHARED / sizeof(float4[8])][8];")
	assert.Contains(t, gen, "kl_emu_num_entries = 0")
}

func TestEmuGenerate(t *testing.T) {
	gen := generate("my kernels.cu", []emuEntry{{Name: "k", MaxThreads: "256", Params: []emuParam{{"const float*", "x"}}}}, nil)
	assert.Contains(t, gen, `#include "my kernels.cu"`)
	assert.Contains(t, gen, `{"const float*", nullptr}`)
	assert.Contains(t, gen, "KL_EMU_ENTRY(k, kl_emu_types_0, 1, (int)(256))")
}

// ---- builds (skipped where the emulator cannot be built) ----

// buildAt builds src into cacheDir and returns the object's path and the compiler's report.
func buildAt(ctx context.Context, src string, includeDirs []string, cacheDir string) (string, string, error) {
	a, err := build(ctx, toolchain.Request{Source: src, IncludeDirs: includeDirs}, cacheDir)
	return a.Path, a.Log, err
}

func emuRepo(t *testing.T) (root string, includes []string) {
	t.Helper()
	if err := Check(); err != nil {
		t.Skipf("CPU emulator builds unavailable: %v", err)
	}
	wd, err := os.Getwd()
	require.NoError(t, err)
	root = filepath.Join(wd, "..", "..", "..", "..")
	return root, []string{filepath.Join(root, "labs", "common")} // emu/ is found from labs/common
}

// buildNew writes body as the kernel file name in a new folder and builds it with the course's
// shared headers, caching in that folder; it returns the file and what the build returns.
func buildNew(t *testing.T, name, body string) (src, log string, err error) {
	t.Helper()
	_, inc := emuRepo(t)
	dir := t.TempDir()
	src = filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(src, []byte(body), 0o644))
	_, log, err = buildAt(context.Background(), src, inc, filepath.Join(dir, "cache"))
	return src, log, err
}

// requireErrorAt requires err to be a compile error whose first error is at file:line, and
// returns that diagnostic.
func requireErrorAt(t *testing.T, err error, file string, line int) toolchain.Diagnostic {
	t.Helper()
	var ce *toolchain.CompileError
	require.True(t, errors.As(err, &ce), "%v", err)
	first, ok := ce.First()
	require.True(t, ok, "%v", err)
	assert.Equal(t, file, first.File)
	assert.Equal(t, line, first.Line)
	return first
}

func TestBuildCompileErrorsAreFileLine(t *testing.T) {
	src, log, err := buildNew(t, "broken.cu", "#include \"kl.cuh\"\n\nextern \"C\" __global__ void k(float* x) {\n    x[0] = undefined_name;\n}\n")
	first := requireErrorAt(t, err, src, 4)
	assert.Contains(t, first.Message, "undefined_name")
	assert.Contains(t, err.Error(), src+":4: error:")
	assert.Contains(t, log, "undefined_name")
}

// Like nvcc, the emulator compiles a kernel file that includes nothing.
func TestBuildWithoutIncludes(t *testing.T) {
	src, _, err := buildNew(t, "bare.cu", "extern \"C\" __global__ void bare(float* x) { x[threadIdx.x] = 1; }\n")
	require.NoError(t, err)
	gens, _ := filepath.Glob(filepath.Join(filepath.Dir(src), "cache", "bare-*.gen.cc"))
	require.Len(t, gens, 1)
	gen, _ := os.ReadFile(gens[0])
	assert.Contains(t, string(gen), "KL_EMU_ENTRY(bare, ")
}

func TestBuildCachesAndRebuildsOnHeaderChange(t *testing.T) {
	_, inc := emuRepo(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "k.cu")
	hdr := filepath.Join(dir, "helper.cuh")
	require.NoError(t, os.WriteFile(hdr, []byte("#define SCALE 2\n"), 0o644))
	require.NoError(t, os.WriteFile(src, []byte("#include \"kl.cuh\"\n#include \"helper.cuh\"\n"+
		"extern \"C\" __global__ void __launch_bounds__(SCALE * 64) k(float* x) { x[threadIdx.x] *= SCALE; }\n"), 0o644))
	cache := filepath.Join(dir, "cache")
	so1, _, err := buildAt(context.Background(), src, inc, cache)
	require.NoError(t, err)
	t0 := time.Now()
	so2, _, err := buildAt(context.Background(), src, inc, cache)
	require.NoError(t, err)
	assert.Equal(t, so1, so2)
	assert.Less(t, time.Since(t0), time.Second, "a cached build is a few file reads")
	gens, _ := filepath.Glob(filepath.Join(cache, "k-*.gen.cc"))
	require.Len(t, gens, 1)
	gen, _ := os.ReadFile(gens[0])
	assert.Contains(t, string(gen), "(int)(2*64)", "macros in __launch_bounds__ are expanded")

	require.NoError(t, os.WriteFile(hdr, []byte("#define SCALE 3\n"), 0o644))
	so3, _, err := buildAt(context.Background(), src, inc, cache)
	require.NoError(t, err)
	assert.NotEqual(t, so1, so3, "a header beside the source is part of the key")

	// Build, the backend's compiler, builds the same way, into CacheDir()/emu.
	t.Setenv("LABRUN_CACHE", filepath.Join(dir, "labrun-cache"))
	a, err := Build(context.Background(), toolchain.Request{Source: src, IncludeDirs: inc})
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(a.Path, filepath.Join(dir, "labrun-cache", "emu")+"/"), a.Path)
	assert.True(t, strings.HasSuffix(a.Path, ".so"))
	v, err := Version()
	require.NoError(t, err)
	assert.NotEmpty(t, v)
}

func TestDirFoundFromLabsCommon(t *testing.T) {
	root, inc := emuRepo(t)
	d, err := Dir(inc)
	require.NoError(t, err)
	abs, _ := filepath.Abs(filepath.Join(root, "emu"))
	assert.Equal(t, abs, d)
	_, err = Dir([]string{t.TempDir()})
	assert.Error(t, err)
}

// The cache covers every file the compiler read: an included .cu file (which no header scan of
// the include folders sees) that changes makes a new object.
func TestBuildRebuildsWhenAnIncludedFileChanges(t *testing.T) {
	_, inc := emuRepo(t)
	dir := t.TempDir()
	sub := filepath.Join(dir, "parts")
	require.NoError(t, os.MkdirAll(sub, 0o755))
	part := filepath.Join(sub, "body.cu")
	src := filepath.Join(dir, "k.cu")
	require.NoError(t, os.WriteFile(part, []byte("x[threadIdx.x] = 1;\n"), 0o644))
	require.NoError(t, os.WriteFile(src, []byte("#include \"kl.cuh\"\nextern \"C\" __global__ void k(float* x) {\n#include \"parts/body.cu\"\n}\n"), 0o644))
	cache := filepath.Join(dir, "cache")
	so1, _, err := buildAt(context.Background(), src, inc, cache)
	require.NoError(t, err)
	so2, _, err := buildAt(context.Background(), src, inc, cache)
	require.NoError(t, err)
	assert.Equal(t, so1, so2, "nothing changed: the object is reused")

	require.NoError(t, os.WriteFile(part, []byte("x[threadIdx.x] = 2;\n"), 0o644))
	so3, _, err := buildAt(context.Background(), src, inc, cache)
	require.NoError(t, err)
	assert.NotEqual(t, so1, so3, "the included .cu file changed: the object is rebuilt")
	_, err = os.Stat(so1)
	assert.NoError(t, err, "objects are never overwritten: a process that loaded the old one keeps it")

	ix, err := filepath.Glob(filepath.Join(cache, "k-*.deps.json"))
	require.NoError(t, err)
	require.Len(t, ix, 1)
	b, err := os.ReadFile(ix[0])
	require.NoError(t, err)
	assert.Contains(t, string(b), part, "the index lists the included file")
}

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
