package cuda_test

// GPU tests: they run where the CUDA backend opens (an NVIDIA GPU and driver) and are skipped
// elsewhere with a message. Set KERNELLABS_REQUIRE_GPU=1 to make a missing GPU a failure
// instead (on the GPU machine, so that a broken driver cannot pass as "skipped").
//
// They are built to run from a test binary on a machine without Go (go test -c): the kernels
// are embedded, and nvcc (from PATH, $CUDA_HOME/bin or /usr/local/cuda/bin) compiles them at
// run time for the device's architecture.

import (
	_ "embed"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/gpu/cuda"
	"github.com/kernel-labs/kernellabs/internal/gpu/gputest"
)

//go:embed testdata/kernels.cu
var kernelsSource []byte

const requireGPUEnv = "KERNELLABS_REQUIRE_GPU"

// stickyChildEnv carries the cubin path to the re-executed test binary of TestStickyError.
const stickyChildEnv = "KERNELLABS_CUDA_STICKY_CHILD"

var tmpDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "kernellabs-cuda-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	tmpDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// openBackend returns the CUDA backend or skips the test.
func openBackend(t *testing.T) gpu.Backend {
	t.Helper()
	b, err := cuda.Open()
	if err != nil {
		if os.Getenv(requireGPUEnv) != "" {
			t.Fatalf("%s is set but the CUDA backend does not open: %v", requireGPUEnv, err)
		}
		t.Skipf("no usable NVIDIA GPU here, skipping (%v)", err)
	}
	return b
}

// openDevice opens device index (skipping when there is no GPU) and closes it at the end.
func openDevice(t *testing.T, index int) gpu.Device {
	t.Helper()
	b := openBackend(t)
	n, err := b.DeviceCount()
	require.NoError(t, err)
	if index >= n {
		t.Skipf("needs %d GPUs, this machine has %d", index+1, n)
	}
	d, err := b.Open(index)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, d.Close()) })
	return d
}

// alloc, newStream and newEvent make what a test uses and free it when the test ends (before
// openDevice closes the device), whatever the test's outcome.
func alloc(t *testing.T, d gpu.Device, bytes int64) gpu.Ptr {
	t.Helper()
	p, err := d.Malloc(bytes)
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Free(p) })
	return p
}

// upload and allocBuf are gpu.Upload and gpu.Alloc, freed when the test ends.
func upload[T gpu.Elem](t *testing.T, d gpu.Device, host []T) *gpu.Buffer[T] {
	t.Helper()
	b, err := gpu.Upload(d, host)
	return freeAtEnd(t, b, err)
}

func allocBuf[T gpu.Elem](t *testing.T, d gpu.Device, n int) *gpu.Buffer[T] {
	t.Helper()
	b, err := gpu.Alloc[T](d, n)
	return freeAtEnd(t, b, err)
}

func freeAtEnd[T gpu.Elem](t *testing.T, b *gpu.Buffer[T], err error) *gpu.Buffer[T] {
	t.Helper()
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Free() })
	return b
}

func newStream(t *testing.T, d gpu.Device) gpu.Stream {
	t.Helper()
	s, err := d.NewStream()
	return closeAtEnd(t, s, err)
}

func newEvent(t *testing.T, d gpu.Device) gpu.Event {
	t.Helper()
	e, err := d.NewEvent()
	return closeAtEnd(t, e, err)
}

func closeAtEnd[T interface{ Close() error }](t *testing.T, v T, err error) T {
	t.Helper()
	require.NoError(t, err)
	t.Cleanup(func() { _ = v.Close() })
	return v
}

func newRand(t *testing.T) *rand.Rand {
	seed := rand.Uint64()
	t.Logf("random seed %d", seed)
	return rand.New(rand.NewPCG(seed, 0x6b65726e656c))
}

// randomFloats returns values in [-1, 1), never all zeros.
func randomFloats(r *rand.Rand, n int) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = r.Float32()*2 - 1
	}
	return out
}

var nanBits = math.Float32bits(float32(math.NaN()))

func TestDescribe(t *testing.T) {
	b := openBackend(t)
	info, err := b.DeviceInfo(0)
	require.NoError(t, err)
	t.Logf("%+v", info)
	assert.Equal(t, "cuda", info.Backend)
	assert.NotEmpty(t, info.Name)
	assert.GreaterOrEqual(t, info.ComputeMajor, 5)
	assert.Regexp(t, `^sm_\d+$`, info.Arch())
	assert.Positive(t, info.SMs)
	assert.Greater(t, info.MemoryBytes, int64(1<<30))
	assert.Positive(t, info.L2Bytes)
	assert.Equal(t, 32, info.WarpSize)
	assert.GreaterOrEqual(t, info.MaxThreadsPerBlock, 1024)
	assert.GreaterOrEqual(t, info.MaxSharedOptin, info.MaxSharedPerBlock)
	assert.Positive(t, info.MemBusWidthBits)
	assert.Regexp(t, `^\d+\.\d+$`, info.DriverVersion)
	assert.Regexp(t, `^GPU-[0-9a-f]{8}-`, info.UUID)
	assert.NotEmpty(t, info.PCIBusID)

	_, err = b.DeviceInfo(-1)
	assert.Error(t, err)
	n, err := b.DeviceCount()
	require.NoError(t, err)
	_, err = b.DeviceInfo(n)
	assert.ErrorContains(t, err, "no device")
}

func TestDeviceInfoAndAttributes(t *testing.T) {
	d := openDevice(t, 0)
	info := d.Info()
	attrs, err := d.Attributes()
	require.NoError(t, err)
	require.NotEmpty(t, attrs)
	byName := map[string]gpu.Attribute{}
	for _, a := range attrs {
		_, dup := byName[a.Name]
		assert.False(t, dup, "attribute %s listed twice", a.Name)
		byName[a.Name] = a
	}
	t.Logf("%d attributes; first %v, last %v", len(attrs), attrs[0], attrs[len(attrs)-1])
	assert.Equal(t, "MAX_THREADS_PER_BLOCK", attrs[0].Name, "enum order")
	assert.EqualValues(t, info.SMs, byName["MULTIPROCESSOR_COUNT"].Value)
	assert.EqualValues(t, info.ComputeMajor, byName["COMPUTE_CAPABILITY_MAJOR"].Value)
	assert.Equal(t, "bytes", byName["L2_CACHE_SIZE"].Unit)
	assert.EqualValues(t, info.L2Bytes, byName["L2_CACHE_SIZE"].Value)

	free, total, err := d.MemInfo()
	require.NoError(t, err)
	assert.Positive(t, free)
	assert.LessOrEqual(t, free, total)
	assert.Equal(t, info.MemoryBytes, total)
}

func TestCopyRoundTrip(t *testing.T) {
	d := openDevice(t, 0)
	r := newRand(t)
	host := randomFloats(r, 1<<20+3)
	buf := upload(t, d, host)
	back := make([]float32, len(host))
	for i := range back {
		back[i] = float32(math.NaN())
	}
	require.NoError(t, buf.CopyToHost(back, nil))
	assert.Equal(t, host, back)

	// Device to device, then back.
	buf2 := allocBuf[float32](t, d, len(host))
	require.NoError(t, buf2.CopyFrom(buf, nil))
	back2, err := buf2.Download()
	require.NoError(t, err)
	assert.Equal(t, host, back2)
}

func TestPinnedAsyncCopy(t *testing.T) {
	d := openDevice(t, 0)
	r := newRand(t)
	const n = 1 << 20
	src, err := d.MallocHost(4 * n)
	require.NoError(t, err)
	defer src.Free()
	dst, err := d.MallocHost(4 * n)
	require.NoError(t, err)
	defer dst.Free()
	in := unsafe.Slice((*float32)(src.Pointer()), n)
	copy(in, randomFloats(r, n))
	out := unsafe.Slice((*float32)(dst.Pointer()), n)
	for i := range out {
		out[i] = float32(math.NaN())
	}

	s := newStream(t, d)
	p := alloc(t, d, 4*n)
	require.NoError(t, d.CopyHtoD(p, src.Pointer(), 4*n, s))
	require.NoError(t, d.CopyDtoH(dst.Pointer(), p, 4*n, s))
	require.NoError(t, s.Synchronize())
	assert.Equal(t, in, out)
	assert.NoError(t, src.Free())
	assert.NoError(t, src.Free(), "a second Free is harmless")
}

func TestMemsetNaN(t *testing.T) {
	d := openDevice(t, 0)
	r := newRand(t)
	buf := upload(t, d, randomFloats(r, 4097))
	require.NoError(t, buf.Fill32(nanBits, nil))
	got, err := buf.Download()
	require.NoError(t, err)
	for i, v := range got {
		if math.Float32bits(v) != nanBits {
			t.Fatalf("element %d is %v (bits %#x), want the NaN pattern %#x", i, v, math.Float32bits(v), nanBits)
		}
	}
	require.NoError(t, buf.FillBytes(0xff, nil))
	got, err = buf.Download()
	require.NoError(t, err)
	assert.Equal(t, uint32(0xffffffff), math.Float32bits(got[4096]))
}

func TestEventsTimeACopy(t *testing.T) {
	d := openDevice(t, 0)
	const bytes = 256 << 20
	a := alloc(t, d, bytes)
	b := alloc(t, d, bytes)
	s := newStream(t, d)
	start := newEvent(t, d)
	stop := newEvent(t, d)

	require.NoError(t, d.MemsetD8(a, 1, bytes, s))
	require.NoError(t, start.Record(s))
	require.NoError(t, d.CopyDtoD(b, a, bytes, s))
	require.NoError(t, stop.Record(s))
	require.NoError(t, stop.Synchronize())
	ms, err := stop.ElapsedMs(start)
	require.NoError(t, err)
	t.Logf("copied %s in %.3f ms: %.0f GB/s (read + write)", gpu.HumanBytes(bytes), ms, 2*bytes/ms/1e6)
	assert.Positive(t, ms)
	assert.Less(t, ms, 10000.0)
}

// ---- kernels ----

var (
	cubinOnce sync.Once
	cubinPath string
	cubinErr  error
)

// findNvcc looks on PATH, then in the usual toolkit places.
func findNvcc() (string, error) {
	if p, err := exec.LookPath("nvcc"); err == nil {
		return p, nil
	}
	var tried []string
	for _, root := range []string{os.Getenv("CUDA_HOME"), os.Getenv("CUDA_PATH"), "/usr/local/cuda"} {
		if root == "" {
			continue
		}
		p := filepath.Join(root, "bin", "nvcc")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		tried = append(tried, p)
	}
	return "", fmt.Errorf("nvcc is not on PATH (nor at %s)", strings.Join(tried, ", "))
}

// kernelsCubin compiles testdata/kernels.cu for device d with nvcc -cubin -arch=sm_XY, once.
func kernelsCubin(t *testing.T, d gpu.Device) string {
	t.Helper()
	cubinOnce.Do(func() {
		nvcc, err := findNvcc()
		if err != nil {
			cubinErr = err
			return
		}
		src := filepath.Join(tmpDir, "kernels.cu")
		if cubinErr = os.WriteFile(src, kernelsSource, 0o644); cubinErr != nil {
			return
		}
		out := filepath.Join(tmpDir, "kernels.cubin")
		cmd := exec.Command(nvcc, "-cubin", "-arch="+d.Info().Arch(), "-o", out, src)
		if msg, err := cmd.CombinedOutput(); err != nil {
			cubinErr = fmt.Errorf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, msg)
			return
		}
		cubinPath = out
	})
	if cubinErr != nil {
		if strings.Contains(cubinErr.Error(), "not on PATH") {
			t.Skipf("cannot compile the test kernels: %v", cubinErr)
		}
		t.Fatalf("compiling the test kernels: %v", cubinErr)
	}
	return cubinPath
}

func loadKernel(t *testing.T, d gpu.Device, name string) gpu.Kernel {
	t.Helper()
	m, err := d.LoadModule(kernelsCubin(t, d))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, m.Close()) })
	k, err := m.Kernel(name)
	require.NoError(t, err)
	return k
}

func TestKernelParamsAndAttrs(t *testing.T) {
	d := openDevice(t, 0)
	k := loadKernel(t, d, "saxpy")
	assert.Equal(t, "saxpy", k.Name())
	params, err := k.Params()
	require.NoError(t, err)
	require.Len(t, params, 4)
	sizes := []int{}
	for _, p := range params {
		sizes = append(sizes, p.Size)
	}
	assert.Equal(t, []int{4, 4, 8, 8}, sizes)
	assert.Equal(t, []int{0, 4, 8, 16}, []int{params[0].Offset, params[1].Offset, params[2].Offset, params[3].Offset})

	attrs, err := k.Attrs()
	require.NoError(t, err)
	t.Logf("saxpy: %+v", attrs)
	assert.Positive(t, attrs.NumRegs)
	assert.GreaterOrEqual(t, attrs.MaxThreadsPerBlock, 256)
	assert.Zero(t, attrs.LocalBytes, "no spills in saxpy")

	// A small kernel fills an SM with blocks up to the thread limit (2048 threads on recent GPUs),
	// and fewer blocks fit when each asks for more shared memory.
	n, ok, err := gpu.MaxActiveBlocksPerSM(k, 256, 0)
	require.NoError(t, err)
	require.True(t, ok, "the CUDA backend reports occupancy")
	assert.GreaterOrEqual(t, n, 4)
	nBig, _, err := gpu.MaxActiveBlocksPerSM(k, 256, 40<<10)
	require.NoError(t, err)
	assert.Less(t, nBig, n, "40 KiB of shared memory per block must lower the count")
	if nBad, _, err := gpu.MaxActiveBlocksPerSM(k, 4096, 0); err == nil {
		assert.Zero(t, nBad, "a block larger than the device allows never fits")
	}

	if opt := d.Info().MaxSharedOptin; opt > 48<<10 {
		require.NoError(t, k.SetMaxDynamicShared(opt))
		attrs, err = k.Attrs()
		require.NoError(t, err)
		assert.Equal(t, opt-attrs.StaticSharedBytes, attrs.MaxDynamicShared)
	}
	assert.Error(t, k.SetMaxDynamicShared(16<<20), "far above the device's limit")

	_, err = d.LoadModule(filepath.Join(tmpDir, "missing.cubin"))
	assert.ErrorContains(t, err, "cuModuleLoad")
	m, err := d.LoadModule(kernelsCubin(t, d))
	require.NoError(t, err)
	defer m.Close()
	_, err = m.Kernel("no_such_kernel")
	assert.ErrorContains(t, err, "CUDA_ERROR_NOT_FOUND")
}

func TestLaunchSaxpy(t *testing.T) {
	d := openDevice(t, 0)
	k := loadKernel(t, d, "saxpy")
	r := newRand(t)
	const n = 1<<20 + 123 // not a multiple of the block
	const a = float32(2.5)
	x, y := randomFloats(r, n), randomFloats(r, n)
	dx := upload(t, d, x)
	dy := upload(t, d, y)

	s := newStream(t, d)
	cfg := gpu.LaunchConfig{Grid: gpu.D1((n + 255) / 256), Block: gpu.D1(256), Stream: s}
	require.NoError(t, gpu.Launch(k, cfg, int32(n), a, dx, dy))
	got := make([]float32, n)
	require.NoError(t, dy.CopyToHost(got, s))

	bad := 0
	for i := range got {
		want := float64(a)*float64(x[i]) + float64(y[i])
		tol := 1e-6 * (math.Abs(float64(a)*float64(x[i])) + math.Abs(float64(y[i])))
		if math.Abs(float64(got[i])-want) > tol {
			if bad < 5 {
				t.Errorf("y[%d] = %v, want %v", i, got[i], want)
			}
			bad++
		}
	}
	assert.Zero(t, bad, "elements differing from the CPU")
}

func TestLaunchArgumentErrors(t *testing.T) {
	d := openDevice(t, 0)
	k := loadKernel(t, d, "saxpy")
	buf := allocBuf[float32](t, d, 16)
	cfg := gpu.LaunchConfig{Grid: gpu.D1(1), Block: gpu.D1(16)}

	err := gpu.Launch(k, cfg, int32(16), float32(1), buf)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "saxpy")
	assert.Contains(t, err.Error(), "got 3 arguments, the kernel takes 4")

	err = gpu.Launch(k, cfg, int64(16), float32(1), buf, buf)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "saxpy")
	assert.Contains(t, err.Error(), "argument 0")
	assert.Contains(t, err.Error(), "8 bytes")

	err = gpu.Launch(k, gpu.LaunchConfig{Grid: gpu.D1(1), Block: gpu.D1(4096)}, int32(16), float32(1), buf, buf)
	require.Error(t, err, "a block larger than the device allows")
	assert.Contains(t, err.Error(), "cuLaunchKernel")
	assert.False(t, gpu.IsSticky(err))
	assert.NoError(t, d.Synchronize(), "a refused launch leaves the context usable")
}

// TestStickyError runs a kernel that writes to unmapped memory in a child process (a re-run of
// this test binary), since the error destroys the context for the rest of the process.
func TestStickyError(t *testing.T) {
	d := openDevice(t, 0)
	cubin := kernelsCubin(t, d)
	cmd := exec.Command(os.Args[0], "-test.run=^TestStickyChild$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), stickyChildEnv+"="+cubin)
	out, err := cmd.CombinedOutput()
	t.Logf("child output:\n%s", out)
	require.NoError(t, err, "the child test failed")
	assert.Contains(t, string(out), "STICKY-OK")
}

func TestStickyChild(t *testing.T) {
	cubin := os.Getenv(stickyChildEnv)
	if cubin == "" {
		t.Skip("runs only as the child process of TestStickyError")
	}
	// Not openDevice: closing a broken context may itself report the error.
	d, err := openBackend(t).Open(0)
	require.NoError(t, err)
	m, err := d.LoadModule(cubin)
	require.NoError(t, err)
	k, err := m.Kernel("bad_write")
	require.NoError(t, err)
	// Address 0x100 is never mapped on the device.
	err = gpu.Launch(k, gpu.LaunchConfig{Grid: gpu.D1(1), Block: gpu.D1(32)}, gpu.Ptr(0x100))
	if err == nil {
		err = d.Synchronize()
	}
	require.Error(t, err)
	t.Logf("error: %v", err)
	require.True(t, gpu.IsSticky(err), "error is not sticky: %v", err)
	assert.Regexp(t, regexp.MustCompile(`CUDA_ERROR_(ILLEGAL_ADDRESS|LAUNCH_FAILED)`), err.Error())
	_, err = d.Malloc(1024)
	assert.Error(t, err, "the context is unusable afterwards")
	fmt.Println("STICKY-OK")
}

// ---- cuBLAS ----

func openBLAS(t *testing.T, d gpu.Device) gpu.BLAS {
	t.Helper()
	b, err := gpu.OpenBLAS(d)
	if err != nil && errorIsAny(err, gpu.ErrLibraryMissing) && os.Getenv(requireGPUEnv) == "" {
		t.Skipf("no cuBLAS here: %v", err)
	}
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, b.Close()) })
	return b
}

// rowMajor describes the row-major product C = A·B (A m×k, B k×n) to cuBLAS: column-major
// Cᵀ = Bᵀ·Aᵀ, so A and B swap, and so do m and n.
func rowMajor(m, n, k int, a, b, c gpu.Ptr) gpu.GemmDesc {
	return gpu.GemmDesc{M: n, N: m, K: k, Alpha: 1, Beta: 0, A: b, LDA: n, B: a, LDB: k, C: c, LDC: n}
}

const gemmM, gemmN, gemmK = 257, 129, 511 // not multiples of any tile

func TestSgemm(t *testing.T) {
	d := openDevice(t, 0)
	blas := openBLAS(t, d)
	r := newRand(t)
	a, b := randomFloats(r, gemmM*gemmK), randomFloats(r, gemmK*gemmN)
	da := upload(t, d, a)
	db := upload(t, d, b)
	dc := allocBuf[float32](t, d, gemmM*gemmN)
	require.NoError(t, dc.Fill32(nanBits, nil))

	s := newStream(t, d)
	require.NoError(t, blas.Sgemm(s, rowMajor(gemmM, gemmN, gemmK, da.DevicePtr(), db.DevicePtr(), dc.DevicePtr())))
	got := make([]float32, gemmM*gemmN)
	require.NoError(t, dc.CopyToHost(got, s))
	e := gputest.RelErr(got, gputest.MatmulRef(a, b, gemmM, gemmN, gemmK))
	t.Logf("sgemm relative error %.3g", e)
	assert.Less(t, e, 1e-5)

	// cuBLAS's own argument check comes back as a CallError from "cublas".
	bad := rowMajor(gemmM, gemmN, gemmK, da.DevicePtr(), db.DevicePtr(), dc.DevicePtr())
	bad.LDA = 1
	ce := requireBLASError(t, blas.Sgemm(s, bad))
	assert.Equal(t, "cublasSgemm_v2", ce.Call)
	assert.Equal(t, "CUBLAS_STATUS_INVALID_VALUE", ce.Name)
}

// bf16 converts with round-to-nearest-even (finite inputs).
func bf16(f float32) uint16 {
	u := math.Float32bits(f)
	u += 0x7fff + (u>>16)&1
	return uint16(u >> 16)
}

func bf16ToFloat(h uint16) float64 { return float64(math.Float32frombits(uint32(h) << 16)) }

func TestGemmExBF16(t *testing.T) {
	d := openDevice(t, 0)
	blas := openBLAS(t, d)
	r := newRand(t)
	a16, b16 := make([]uint16, gemmM*gemmK), make([]uint16, gemmK*gemmN)
	for i := range a16 {
		a16[i] = bf16(r.Float32()*2 - 1)
	}
	for i := range b16 {
		b16[i] = bf16(r.Float32()*2 - 1)
	}
	da := upload(t, d, a16)
	db := upload(t, d, b16)
	dc := allocBuf[float32](t, d, gemmM*gemmN)
	require.NoError(t, dc.Fill32(nanBits, nil))

	g := rowMajor(gemmM, gemmN, gemmK, da.DevicePtr(), db.DevicePtr(), dc.DevicePtr())
	g.InType, g.OutType = gpu.BF16, gpu.F32
	require.NoError(t, blas.GemmEx(nil, g))
	got, err := dc.Download()
	require.NoError(t, err)

	a, b := make([]float64, len(a16)), make([]float64, len(b16))
	for i, v := range a16 {
		a[i] = bf16ToFloat(v)
	}
	for i, v := range b16 {
		b[i] = bf16ToFloat(v)
	}
	e := gputest.RelErr(got, gputest.MatmulRef(a, b, gemmM, gemmN, gemmK))
	t.Logf("gemmEx bf16→f32 relative error %.3g", e)
	assert.Less(t, e, 1e-2)
}

// TestLtMatmulBF16 checks cuBLASLt's bf16 product with a bf16 C updated in place (beta ≠ 0),
// twice on the same shape (the second call reuses the cached plan), and that a bad leading
// dimension comes back as a cuBLAS CallError naming a cuBLASLt call.
func TestLtMatmulBF16(t *testing.T) {
	const m, n, k = 257, 136, 520 // M not a multiple of any tile; rows of B and C 16-byte aligned
	d := openDevice(t, 0)
	blas := openBLAS(t, d)
	lt, ok := blas.(gpu.LtBLAS)
	require.True(t, ok, "the CUDA backend's BLAS implements gpu.LtBLAS")
	r := newRand(t)
	bf := func(count int) []uint16 {
		out := make([]uint16, count)
		for i := range out {
			out[i] = bf16(r.Float32()*2 - 1)
		}
		return out
	}
	wide := func(h []uint16) []float64 {
		out := make([]float64, len(h))
		for i, v := range h {
			out[i] = bf16ToFloat(v)
		}
		return out
	}
	a16, b16, c16 := bf(m*k), bf(k*n), bf(m*n)
	da := upload(t, d, a16)
	db := upload(t, d, b16)
	dc := upload(t, d, c16)

	g := rowMajor(m, n, k, da.DevicePtr(), db.DevicePtr(), dc.DevicePtr())
	g.Alpha, g.Beta = 1.25, -0.5
	g.InType, g.OutType = gpu.BF16, gpu.BF16
	ab := gputest.MatmulRef(wide(a16), wide(b16), m, n, k)
	want := make([]float64, m*n)
	c0 := wide(c16)
	for i := range want {
		want[i] = 1.25*ab[i] - 0.5*c0[i]
	}
	for round := 0; round < 2; round++ {
		require.NoError(t, dc.CopyFromHost(c16, nil))
		require.NoError(t, lt.LtMatmul(nil, g))
		got16, err := dc.Download()
		require.NoError(t, err)
		got := make([]float32, len(got16))
		for i, v := range got16 {
			got[i] = float32(bf16ToFloat(v))
		}
		e := gputest.RelErr(got, want)
		t.Logf("cublasLt bf16→bf16 relative error %.3g (call %d)", e, round+1)
		// bf16 output: each element is rounded to 8 bits of mantissa, about 2^-9 relative.
		assert.Less(t, e, 1e-2)
		assert.Greater(t, e, 0.0, "a bf16 C cannot match a float64 product exactly")
	}

	bad := g
	bad.LDA = 1
	ce := requireBLASError(t, lt.LtMatmul(nil, bad))
	assert.Contains(t, ce.Call, "cublasLt")
}

// requireBLASError requires err to be a CallError from cuBLAS and returns it, for the caller to
// check which call failed.
func requireBLASError(t *testing.T, err error) *gpu.CallError {
	t.Helper()
	require.Error(t, err)
	var ce *gpu.CallError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "cublas", ce.Backend)
	return ce
}

// ---- several devices ----

func TestPeerCopy(t *testing.T) {
	d0 := openDevice(t, 0)
	d1 := openDevice(t, 1)
	can, err := d0.CanAccessPeer(d1)
	require.NoError(t, err)
	t.Logf("device 0 can access device 1: %v", can)
	if can {
		require.NoError(t, d0.EnablePeerAccess(d1))
		require.NoError(t, d0.EnablePeerAccess(d1), "enabling twice is not an error")
		require.NoError(t, d1.EnablePeerAccess(d0))
	}
	self, err := d0.CanAccessPeer(d0)
	require.NoError(t, err)
	assert.True(t, self)

	r := newRand(t)
	host := randomFloats(r, 1<<20)
	src := upload(t, d0, host)
	dst := allocBuf[float32](t, d1, len(host))
	require.NoError(t, dst.Fill32(nanBits, nil))
	require.NoError(t, d1.Synchronize())

	// The copy is ordered on a stream of the source device: wait for it there.
	s, err := d0.NewStream()
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, dst.CopyFrom(src, s))
	require.NoError(t, s.Synchronize())
	got, err := dst.Download()
	require.NoError(t, err)
	assert.Equal(t, host, got)
}

func TestEncodeTensorMap(t *testing.T) {
	d := openDevice(t, 0)
	if d.Info().ComputeMajor < 9 {
		t.Skipf("tensor maps need sm_90; this device is %s", d.Info().Arch())
	}
	const rows, cols = 256, 512
	buf := allocBuf[uint16](t, d, rows*cols)
	desc := gpu.TensorMapDesc{DataType: gpu.BF16, Global: buf.DevicePtr(), Dims: []uint64{cols, rows},
		Strides: []uint64{cols * 2}, Box: []uint32{64, 128}, Swizzle: 128}
	m, err := gpu.EncodeTensorMap(d, desc)
	require.NoError(t, err)
	require.Len(t, m, 128)
	nonzero := 0
	for _, b := range m {
		if b != 0 {
			nonzero++
		}
	}
	assert.Greater(t, nonzero, 0, "an encoded map is not all zeros")

	desc.Box = []uint32{64} // wrong rank of the box
	_, err = gpu.EncodeTensorMap(d, desc)
	assert.ErrorContains(t, err, "needs 1 strides and 2 box sizes")
	desc.Box = []uint32{64, 128}
	desc.Strides = []uint64{cols*2 + 3} // strides must be multiples of 16: the driver refuses
	_, err = gpu.EncodeTensorMap(d, desc)
	assert.ErrorContains(t, err, "cuTensorMapEncodeTiled")
}

func TestGemmGroupedBatched(t *testing.T) {
	d := openDevice(t, 0)
	blas := openBLAS(t, d)
	grouped, ok := blas.(gpu.GroupedBLAS)
	require.True(t, ok, "cuBLAS implements GroupedBLAS")
	r := newRand(t)
	// Three groups of different shapes (row-major m×k times k×n), with 2, 1 and 3 problems.
	shapes := []struct{ m, n, k, count int }{{64, 48, 32, 2}, {1, 17, 5, 1}, {129, 65, 33, 3}}
	var aPtrs, bPtrs, cPtrs []uint64
	var groups []gpu.GemmGroup
	// cuBLAS takes one type for C as for A and B here (bf16 in, bf16 out, fp32 compute): bf16
	// inputs with an fp32 C are CUBLAS_STATUS_NOT_SUPPORTED.
	type problem struct {
		a, b []float64
		c    *gpu.Buffer[uint16]
		m, n int
		k    int
	}
	var probs []problem
	for _, s := range shapes {
		g := rowMajor(s.m, s.n, s.k, 0, 0, 0)
		groups = append(groups, gpu.GemmGroup{M: g.M, N: g.N, K: g.K, Alpha: 1, LDA: g.LDA, LDB: g.LDB, LDC: g.LDC, Count: s.count})
		for j := 0; j < s.count; j++ {
			a16, b16 := make([]uint16, s.m*s.k), make([]uint16, s.k*s.n)
			pa, pb := make([]float64, len(a16)), make([]float64, len(b16))
			for i := range a16 {
				a16[i] = bf16(r.Float32()*2 - 1)
				pa[i] = bf16ToFloat(a16[i])
			}
			for i := range b16 {
				b16[i] = bf16(r.Float32()*2 - 1)
				pb[i] = bf16ToFloat(b16[i])
			}
			da := upload(t, d, a16)
			db := upload(t, d, b16)
			poison := make([]uint16, s.m*s.n)
			for i := range poison {
				poison[i] = 0x7fc0 // a bf16 NaN: an element never written stays NaN
			}
			dc := upload(t, d, poison)
			// Row-major swap: cuBLAS's A is our B.
			aPtrs = append(aPtrs, uint64(db.DevicePtr()))
			bPtrs = append(bPtrs, uint64(da.DevicePtr()))
			cPtrs = append(cPtrs, uint64(dc.DevicePtr()))
			probs = append(probs, problem{a: pa, b: pb, c: dc, m: s.m, n: s.n, k: s.k})
		}
	}
	pa := upload(t, d, aPtrs)
	pb := upload(t, d, bPtrs)
	pc := upload(t, d, cPtrs)
	require.NoError(t, grouped.GemmGroupedBatched(nil, groups, pa.DevicePtr(), pb.DevicePtr(), pc.DevicePtr(), gpu.BF16, gpu.BF16))
	for i, p := range probs {
		raw, err := p.c.Download()
		require.NoError(t, err)
		got := make([]float32, len(raw))
		for j, h := range raw {
			got[j] = float32(bf16ToFloat(h))
		}
		// Rounding C to bf16 costs up to 2^-9 per element: 5e-3 of the norm, not the 1e-5 of fp32.
		e := gputest.RelErr(got, gputest.MatmulRef(p.a, p.b, p.m, p.n, p.k))
		assert.Less(t, e, 5e-3, "problem %d (%d×%d×%d)", i, p.m, p.n, p.k)
	}
}

func TestStreamWaitEvent(t *testing.T) {
	d := openDevice(t, 0)
	s0 := newStream(t, d)
	s1 := newStream(t, d)
	ev := newEvent(t, d)
	after := newEvent(t, d)
	big, err := gpu.Alloc[uint32](d, 256<<20) // 1 GiB: a memset long enough to order against
	require.NoError(t, err)
	defer big.Free()
	require.NoError(t, big.Fill32(1, s0))
	require.NoError(t, ev.Record(s0))
	require.NoError(t, s1.WaitEvent(ev))
	require.NoError(t, after.Record(s1))
	require.NoError(t, s1.Synchronize())
	ms, err := after.ElapsedMs(ev)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, ms, 0.0, "s1 went on only after s0 reached the event")
}

func errorIsAny(err error, targets ...error) bool {
	for _, t := range targets {
		if errors.Is(err, t) {
			return true
		}
	}
	return false
}

func isCallError(err error) bool {
	var ce *gpu.CallError
	return errors.As(err, &ce)
}
