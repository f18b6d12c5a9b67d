package cuda_test

import (
	"bytes"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/gpu/cuda"
	"github.com/kernel-labs/kernellabs/internal/gpu/cuda/nvcc"
)

// openRankComm makes a communicator of world size 1 on d, skipping where NCCL is not installed.
func openRankComm(t *testing.T, d gpu.Device) gpu.RankCommunicator {
	t.Helper()
	id, err := gpu.NewCommID(d)
	if errors.Is(err, gpu.ErrLibraryMissing) && os.Getenv(requireGPUEnv) == "" {
		t.Skipf("NCCL is not installed: %v", err)
	}
	require.NoError(t, err)
	require.Len(t, id, 128)
	c, err := gpu.OpenRankCommunicator(d, id, 0, 1)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, c.Close()) })
	return c
}

// randomBits returns n elements of t as raw bits: finite, normal, never all zeros, so that a
// copy is checked bit for bit.
func randomBits(r *rand.Rand, t gpu.DataType, n int) []byte {
	switch t {
	case gpu.F32:
		out := make([]byte, 4*n)
		f := unsafe.Slice((*float32)(unsafe.Pointer(&out[0])), n)
		copy(f, randomFloats(r, n))
		return out
	case gpu.F16, gpu.BF16:
		out := make([]byte, 2*n)
		h := unsafe.Slice((*uint16)(unsafe.Pointer(&out[0])), n)
		for i := range h {
			sign := uint16(r.IntN(2)) << 15
			if t == gpu.F16 { // exponent 1..29 of 5 bits, 10 mantissa bits
				h[i] = sign | uint16(1+r.IntN(29))<<10 | uint16(r.IntN(1<<10))
			} else { // exponent 100..150 of 8 bits, 7 mantissa bits
				h[i] = sign | uint16(100+r.IntN(51))<<7 | uint16(r.IntN(1<<7))
			}
		}
		return out
	}
	panic(fmt.Sprintf("no random bits for %v", t))
}

// TestRankCommunicatorWorldSizeOne runs every collective on a communicator of one process: each
// is then a copy, checked bit for bit against the input for f32, bf16 and f16.
func TestRankCommunicatorWorldSizeOne(t *testing.T) {
	d := openDevice(t, 0)
	c := openRankComm(t, d)
	assert.Equal(t, 0, c.Rank())
	assert.Equal(t, 1, c.Ranks())
	s, err := d.NewStream()
	require.NoError(t, err)
	defer s.Close()
	r := newRand(t)
	const n = 1<<16 + 3
	const pad = 5 // AllToAllV's offsets
	for _, typ := range []gpu.DataType{gpu.F32, gpu.BF16, gpu.F16} {
		es := 4
		if typ != gpu.F32 {
			es = 2
		}
		in := randomBits(r, typ, n+pad)
		send, err := d.Malloc(int64(len(in)))
		require.NoError(t, err)
		recv, err := d.Malloc(int64(len(in)))
		require.NoError(t, err)
		require.NoError(t, d.CopyHtoD(send, unsafe.Pointer(&in[0]), int64(len(in)), nil))
		for _, op := range []struct {
			name string
			run  func() error
			want []byte // what recv holds afterwards, from its start
		}{
			{"AllReduce", func() error { return c.AllReduce(send, recv, n, typ, s) }, in[:n*es]},
			{"AllGather", func() error { return c.AllGather(send, recv, n, typ, s) }, in[:n*es]},
			{"ReduceScatter", func() error { return c.ReduceScatter(send, recv, n, typ, s) }, in[:n*es]},
			{"AllToAllV", func() error {
				// n-2 elements from send+2 land at recv+pad.
				return c.AllToAllV(send, []int{n - 2}, []int{2}, recv, []int{n - 2}, []int{pad}, typ, s)
			}, append(bytes.Repeat([]byte{0xff}, pad*es), in[2*es:n*es]...)},
			// One rank: its one shard is the whole input.
			{"ReduceScatterV", func() error { return c.ReduceScatterV(send, []int{n}, recv, typ, s) }, in[:n*es]},
		} {
			// Poison: 0xffff is a NaN in f16 and bf16, 0xffffffff in f32.
			require.NoError(t, d.MemsetD8(recv, 0xff, int64(len(in)), s), "%s %v", op.name, typ)
			require.NoError(t, op.run(), "%s %v", op.name, typ)
			require.NoError(t, s.Synchronize())
			got := make([]byte, len(op.want))
			require.NoError(t, d.CopyDtoH(unsafe.Pointer(&got[0]), recv, int64(len(got)), nil))
			assert.True(t, bytes.Equal(got, op.want), "%s %v: the result differs from the input", op.name, typ)
		}
		require.NoError(t, d.Free(send))
		require.NoError(t, d.Free(recv))
	}

	// Bad calls fail before NCCL, naming what is wrong.
	err = c.AllToAllV(1, []int{1, 1}, []int{0, 0}, 1, []int{1}, []int{0}, gpu.F32, s)
	assert.ErrorContains(t, err, "2 send counts for 1 ranks")
	assert.ErrorContains(t, c.AllReduce(0, 0, 4, gpu.F32, s), "null buffer")
	assert.ErrorContains(t, c.AllReduce(1, 1, 4, gpu.DataType(42), s), "no NCCL type")
}

func TestOpenRankCommunicatorChecksItsArguments(t *testing.T) {
	d := openDevice(t, 0)
	for _, c := range []struct {
		id          []byte
		rank, ranks int
		want        string
	}{
		{make([]byte, 128), 0, 0, "at least 1"},
		{make([]byte, 128), 2, 2, "ranks are 0..1"},
		{make([]byte, 12), 0, 1, "the communicator id has 12 bytes"},
	} {
		_, err := gpu.OpenRankCommunicator(d, c.id, c.rank, c.ranks)
		assert.ErrorContains(t, err, c.want)
	}
	t.Setenv(cuda.NCCLTimeoutEnv, "soon")
	_, err := gpu.OpenRankCommunicator(d, make([]byte, 128), 0, 1)
	assert.ErrorContains(t, err, "not a positive duration")
}

// commChildEnv carries "share,<id>" or "pair,<id>" (the communicator id in hex) to the
// re-executed test binary of TestRanksSharingAGPUFailClearly (rank 1 on GPU 0) or
// TestTwoRanksOnTwoGPUs (rank 1 on GPU 1).
const commChildEnv = "KERNELLABS_CUDA_COMM_CHILD"

// TestRanksSharingAGPUFailClearly: two processes join one communicator of two ranks on the same
// GPU. Both must fail at once with ErrRanksShareGPU, not wait for each other inside NCCL.
func TestRanksSharingAGPUFailClearly(t *testing.T) {
	d := openDevice(t, 0)
	id, err := gpu.NewCommID(d)
	if errors.Is(err, gpu.ErrLibraryMissing) && os.Getenv(requireGPUEnv) == "" {
		t.Skipf("NCCL is not installed: %v", err)
	}
	require.NoError(t, err)
	const timeout = 60 * time.Second
	t.Setenv(cuda.NCCLTimeoutEnv, timeout.String())
	cmd := exec.Command(os.Args[0], "-test.run=^TestRankCommChild$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), commChildEnv+"=share,"+hex.EncodeToString(id))
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	require.NoError(t, cmd.Start())
	c, err := gpu.OpenRankCommunicator(d, id, 0, 2)
	elapsed := time.Since(start)
	if c != nil {
		c.Close()
	}
	childErr := cmd.Wait()
	t.Logf("rank 0 after %v: %v\nrank 1's output:\n%s", elapsed, err, out.String())
	require.Error(t, err)
	assert.ErrorIs(t, err, gpu.ErrRanksShareGPU)
	assert.Contains(t, err.Error(), "NCCL needs one GPU per rank")
	assert.Less(t, elapsed, timeout/2, "rank 0 must not wait for the timeout")
	require.NoError(t, childErr)
	assert.Contains(t, out.String(), "COMM-SHARED-GPU-OK")
}

func TestRankCommChild(t *testing.T) {
	env := os.Getenv(commChildEnv)
	if env == "" {
		t.Skip("runs only as the child process of TestRanksSharingAGPUFailClearly")
	}
	mode, idHex, _ := strings.Cut(env, ",")
	id, err := hex.DecodeString(idHex)
	require.NoError(t, err)
	if mode == "pair" {
		d := openDevice(t, 1)
		c, err := gpu.OpenRankCommunicator(d, id, 1, 2)
		require.NoError(t, err)
		defer func() { assert.NoError(t, c.Close()) }()
		checkTwoRankCollectives(t, d, c)
		if !t.Failed() {
			fmt.Println("COMM-PAIR-OK")
		}
		return
	}
	d := openDevice(t, 0)
	c, err := gpu.OpenRankCommunicator(d, id, 1, 2)
	if c != nil {
		c.Close()
	}
	t.Logf("rank 1: %v", err)
	require.Error(t, err)
	require.ErrorIs(t, err, gpu.ErrRanksShareGPU)
	fmt.Println("COMM-SHARED-GPU-OK")
}

// TestSymmetricWindowWorldSizeOne: NCCL 2.28 gives a communicator of one rank no symmetric memory
// ("Communicator does not support symmetric memory"); AllocSymmetric must pass that reason on. A
// NCCL that does support it there must hand back a complete window of one LSA rank.
func TestSymmetricWindowWorldSizeOne(t *testing.T) {
	d := openDevice(t, 0)
	c := openRankComm(t, d)
	w, err := gpu.AllocSymmetric(c, 1<<20, 4)
	if err != nil {
		t.Logf("AllocSymmetric at world size 1: %v", err)
		assert.ErrorContains(t, err, "symmetric memory", "NCCL's own reason")
		assert.ErrorIs(t, err, gpu.ErrNoSymmetricMemory, "a reason to skip, not a failure")
		// The communicator is still usable.
		buf, err := d.Malloc(1024)
		require.NoError(t, err)
		defer d.Free(buf)
		require.NoError(t, c.AllReduce(buf, buf, 256, gpu.F32, nil))
		require.NoError(t, d.Synchronize())
		return
	}
	t.Logf("this NCCL supports symmetric memory at world size 1")
	assert.NotZero(t, w.Local())
	assert.NotZero(t, w.Window())
	assert.NotZero(t, w.DevComm())
	assert.Equal(t, 1, w.LSARanks())
	assert.Equal(t, int64(1<<20), w.Bytes())
	require.NoError(t, d.MemsetD32(w.Local(), 7, 1<<18, nil))
	require.NoError(t, d.Synchronize())
	require.NoError(t, w.Free())
}

// TestTwoRanksOnTwoGPUs runs every collective between this process (rank 0, GPU 0) and a child
// (rank 1, GPU 1), each checking its own results.
func TestTwoRanksOnTwoGPUs(t *testing.T) {
	d := openDevice(t, 0)
	openDevice(t, 1) // skips with one GPU
	id, err := gpu.NewCommID(d)
	if errors.Is(err, gpu.ErrLibraryMissing) && os.Getenv(requireGPUEnv) == "" {
		t.Skipf("NCCL is not installed: %v", err)
	}
	require.NoError(t, err)
	t.Setenv(cuda.NCCLTimeoutEnv, "60s")
	cmd := exec.Command(os.Args[0], "-test.run=^TestRankCommChild$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), commChildEnv+"=pair,"+hex.EncodeToString(id))
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	c, err := gpu.OpenRankCommunicator(d, id, 0, 2)
	if err == nil {
		checkTwoRankCollectives(t, d, c)
		assert.NoError(t, c.Close())
	}
	childErr := cmd.Wait()
	t.Logf("rank 1's output:\n%s", out.String())
	require.NoError(t, err)
	require.NoError(t, childErr)
	assert.Contains(t, out.String(), "COMM-PAIR-OK")
}

// checkTwoRankCollectives runs the collectives of a communicator of two ranks on small integers
// (exact in fp32) and checks this rank's results.
func checkTwoRankCollectives(t *testing.T, d gpu.Device, c gpu.RankCommunicator) {
	require.Equal(t, 2, c.Ranks())
	r := c.Rank()
	s, err := d.NewStream()
	require.NoError(t, err)
	defer s.Close()
	const n = 4096 + 3
	run := func(name string, send []float32, recvLen int, op func(send, recv gpu.Ptr) error, want func(i int) (float32, bool)) {
		ds, err := gpu.Upload(d, send)
		require.NoError(t, err)
		defer ds.Free()
		dr, err := gpu.Alloc[float32](d, recvLen)
		require.NoError(t, err)
		defer dr.Free()
		require.NoError(t, dr.Fill32(nanBits, s))
		require.NoError(t, op(ds.DevicePtr(), dr.DevicePtr()), name)
		got := make([]float32, recvLen)
		require.NoError(t, dr.CopyToHost(got, s))
		bad := 0
		for i, g := range got {
			if w, check := want(i); check && g != w {
				if bad < 3 {
					t.Errorf("rank %d %s: recv[%d] = %v, want %v", r, name, i, g, w)
				}
				bad++
			}
		}
		assert.Zero(t, bad, "rank %d %s", r, name)
	}
	fill := func(m int, f func(i int) float32) []float32 {
		v := make([]float32, m)
		for i := range v {
			v[i] = f(i)
		}
		return v
	}

	run("AllReduce", fill(n, func(i int) float32 { return float32((r + 1) * (i % 97)) }), n,
		func(a, b gpu.Ptr) error { return c.AllReduce(a, b, n, gpu.F32, s) },
		func(i int) (float32, bool) { return float32(3 * (i % 97)), true })
	run("AllGather", fill(n, func(i int) float32 { return float32(r*1000 + i%500) }), 2*n,
		func(a, b gpu.Ptr) error { return c.AllGather(a, b, n, gpu.F32, s) },
		func(i int) (float32, bool) { return float32(i/n*1000 + i%n%500), true })
	run("ReduceScatter", fill(2*n, func(k int) float32 { return float32((r + 1) * (k % 89)) }), n,
		func(a, b gpu.Ptr) error { return c.ReduceScatter(a, b, n, gpu.F32, s) },
		func(i int) (float32, bool) { return float32(3 * ((r*n + i) % 89)), true })

	// AllToAllV: from rank a to rank b go 100 + 7a + 3b elements, a·10000 + b·1000 + i.
	count := func(from, to int) int { return 100 + 7*from + 3*to }
	const pad = 2
	sendCounts, sendOffsets := []int{count(r, 0), count(r, 1)}, []int{0, count(r, 0)}
	recvCounts, recvOffsets := []int{count(0, r), count(1, r)}, []int{pad, pad + count(0, r)}
	send := make([]float32, 0, count(r, 0)+count(r, 1))
	for j := range 2 {
		for i := range count(r, j) {
			send = append(send, float32(r*10000+j*1000+i))
		}
	}
	run("AllToAllV", send, pad+count(0, r)+count(1, r),
		func(a, b gpu.Ptr) error {
			return c.AllToAllV(a, sendCounts, sendOffsets, b, recvCounts, recvOffsets, gpu.F32, s)
		},
		func(i int) (float32, bool) {
			if i < pad {
				return 0, false // untouched: still the poison
			}
			j, k := 0, i-pad
			if k >= count(0, r) {
				j, k = 1, k-count(0, r)
			}
			return float32(j*10000 + r*1000 + k), true
		})
}

// TestGraphCapturesARankCollective: an NCCL call issued during a capture is replayed by the
// graph (labrun's --graph times the baselines this way), reading its input at each replay.
func TestGraphCapturesARankCollective(t *testing.T) {
	d := openDevice(t, 0)
	c := openRankComm(t, d)
	s, err := d.NewStream()
	require.NoError(t, err)
	defer s.Close()
	r := newRand(t)
	const n = 1 << 16
	send, err := gpu.Alloc[float32](d, n)
	require.NoError(t, err)
	defer send.Free()
	recv, err := gpu.Alloc[float32](d, n)
	require.NoError(t, err)
	defer recv.Free()

	g, err := s.(gpu.GraphCapturer).CaptureGraph(func() error {
		return c.AllReduce(send.DevicePtr(), recv.DevicePtr(), n, gpu.F32, s)
	})
	require.NoError(t, err)
	defer g.Destroy()
	for round := range 2 {
		in := randomFloats(r, n)
		require.NoError(t, send.CopyFromHost(in, s))
		require.NoError(t, recv.Fill32(nanBits, s))
		require.NoError(t, g.Launch(s))
		got := make([]float32, n)
		require.NoError(t, recv.CopyToHost(got, s))
		assert.Equal(t, in, got, "replay %d", round)
	}
}

//go:embed testdata/nccl_device.cu
var ncclDeviceSource []byte

// TestDeviceAPIKernelCompiles builds a kernel on NCCL's device API that takes what
// gpu.SymmetricWindow hands out (the device communicator's address, the window handle), where
// nvcc and nccl_device.h are installed. Running it needs ranks with symmetric memory: two GPUs.
func TestDeviceAPIKernelCompiles(t *testing.T) {
	d := openDevice(t, 0)
	compiler, err := findNvcc()
	if err != nil {
		t.Skipf("no nvcc: %v", err)
	}
	include, err := nvcc.NCCLIncludeDir()
	if err != nil {
		t.Skipf("%v", err)
	}
	src := filepath.Join(t.TempDir(), "nccl_device.cu")
	require.NoError(t, os.WriteFile(src, ncclDeviceSource, 0o644))
	out := filepath.Join(filepath.Dir(src), "nccl_device.cubin")
	cmd := exec.Command(compiler, "-cubin", "-std=c++17", "-arch="+d.Info().Arch(), "-I"+include, "-o", out, src)
	msg, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s\n%s", strings.Join(cmd.Args, " "), msg)
	m, err := d.LoadModule(out)
	require.NoError(t, err)
	defer m.Close()
	k, err := m.Kernel("lsa_sum_f32")
	require.NoError(t, err)
	params, err := k.Params()
	require.NoError(t, err)
	sizes := []int{}
	for _, p := range params {
		sizes = append(sizes, p.Size)
	}
	assert.Equal(t, []int{8, 8, 8, 8, 8}, sizes, "pointers, the window handle and sizes: 8 bytes each")
}
