package cuda_test

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

// sharedChildEnv carries "cubin,seed,handle,device" to the re-executed test binary of
// TestSharedBufferBetweenProcesses.
const sharedChildEnv = "KERNELLABS_CUDA_SHARED_CHILD"

// sharedN is not a multiple of the allocation granularity, so that rounding is exercised.
const sharedN = 1<<20 + 77

const sharedA = float32(3)

// seededFloats returns the values of seed (the two processes regenerate each other's data):
// integers in [-1000, 1000], so that a·x + y is exact in fp32 whether or not it is fused, and
// results compare exactly.
func seededFloats(seed uint64, n int) []float32 {
	r := rand.New(rand.NewPCG(seed, 0x736861726564))
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(r.IntN(2001) - 1000)
	}
	return out
}

func downloadFloats(t *testing.T, d gpu.Device, p gpu.Ptr, n int) []float32 {
	t.Helper()
	out := make([]float32, n)
	require.NoError(t, d.CopyDtoH(unsafe.Pointer(&out[0]), p, int64(n)*4, nil))
	return out
}

func uploadFloats(t *testing.T, d gpu.Device, p gpu.Ptr, v []float32) {
	t.Helper()
	require.NoError(t, d.CopyHtoD(p, unsafe.Pointer(&v[0]), int64(len(v))*4, nil))
}

// countDiffs counts the elements of got that differ from want (exactly: both sides compute the
// same fp32 operations), reporting the first few.
func countDiffs(t *testing.T, what string, got, want []float32) int {
	bad := 0
	for i := range want {
		if got[i] != want[i] {
			if bad < 3 {
				t.Errorf("%s[%d] = %v, want %v", what, i, got[i], want[i])
			}
			bad++
		}
	}
	return bad
}

// TestSharedBufferBetweenProcesses: this process and a child (this test binary, re-executed)
// share a buffer each way on one GPU, as ranks sharing a GPU do; the child's kernel updates the
// parent's buffer, and the parent's copy overwrites the child's, and each side sees the other's
// writes.
func TestSharedBufferBetweenProcesses(t *testing.T) {
	testSharedPair(t, openDevice(t, 0), 0)
}

// TestSharedBufferBetweenProcessesOnTwoGPUs is the same with the child on GPU 1, as ranks of one
// node on their own GPUs.
func TestSharedBufferBetweenProcessesOnTwoGPUs(t *testing.T) {
	d0 := openDevice(t, 0)
	d1 := openDevice(t, 1)
	ok, err := d1.CanAccessPeer(d0)
	require.NoError(t, err)
	if !ok {
		t.Skip("GPU 1 cannot access GPU 0's memory (no NVLink or PCIe peer path)")
	}
	require.NoError(t, d1.Close()) // the child opens it
	testSharedPair(t, d0, 1)
}

func testSharedPair(t *testing.T, d gpu.Device, childDevice int) {
	cubin := kernelsCubin(t, d)
	seed := rand.Uint64()
	t.Logf("seed %d", seed)

	y := seededFloats(seed, sharedN)
	p, handle, err := gpu.MallocShared(d, sharedN*4)
	require.NoError(t, err)
	uploadFloats(t, d, p, y)

	// This process can map its own buffer a second time: the same memory at another address.
	again, err := gpu.OpenShared(d, handle)
	require.NoError(t, err)
	assert.NotEqual(t, p, again)
	assert.Zero(t, countDiffs(t, "own buffer mapped again", downloadFloats(t, d, again, sharedN), y))
	require.NoError(t, d.Free(again))

	cmd := exec.Command(os.Args[0], "-test.run=^TestSharedChild$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s,%d,%s,%d", sharedChildEnv, cubin, seed, hex.EncodeToString(handle), childDevice))
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = cmd.Stdout
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	defer close(done)
	go func() { // never wait forever on a stuck child
		select {
		case <-done:
		case <-time.After(2 * time.Minute):
			cmd.Process.Kill()
		}
	}()

	var log strings.Builder
	lines := bufio.NewScanner(stdout)
	var childHandle []byte
	for childHandle == nil && lines.Scan() {
		line := lines.Text()
		log.WriteString(line + "\n")
		if h, ok := strings.CutPrefix(line, "SHARED-HANDLE "); ok {
			childHandle, err = hex.DecodeString(h)
			require.NoError(t, err)
		}
	}
	require.NotNil(t, childHandle, "the child printed no handle:\n%s", log.String())

	// The child's kernel ran y = a·x + y on this process's buffer, x from seed+1.
	x := seededFloats(seed+1, sharedN)
	want := make([]float32, sharedN)
	for i := range want {
		want[i] = sharedA*x[i] + y[i]
	}
	assert.Zero(t, countDiffs(t, "parent buffer after the child's kernel", downloadFloats(t, d, p, sharedN), want))

	// The child's buffer holds seed+2's values; overwrite it with seed+3's.
	q, err := gpu.OpenShared(d, childHandle)
	require.NoError(t, err)
	assert.Zero(t, countDiffs(t, "child buffer", downloadFloats(t, d, q, sharedN), seededFloats(seed+2, sharedN)))
	uploadFloats(t, d, q, seededFloats(seed+3, sharedN))
	require.NoError(t, d.Synchronize())
	require.NoError(t, d.Free(q))
	_, err = stdin.Write([]byte("written\n"))
	require.NoError(t, err)

	for lines.Scan() {
		log.WriteString(lines.Text() + "\n")
	}
	err = cmd.Wait()
	t.Logf("child output:\n%s", log.String())
	require.NoError(t, err, "the child failed")
	assert.Contains(t, log.String(), "SHARED-OK")
	require.NoError(t, d.Free(p))
}

func TestSharedChild(t *testing.T) {
	env := os.Getenv(sharedChildEnv)
	if env == "" {
		t.Skip("runs only as the child process of TestSharedBufferBetweenProcesses")
	}
	parts := strings.Split(env, ",")
	require.Len(t, parts, 4)
	index, err := strconv.Atoi(parts[3])
	require.NoError(t, err)
	cubin := parts[0]
	seed, err := strconv.ParseUint(parts[1], 10, 64)
	require.NoError(t, err)
	handle, err := hex.DecodeString(parts[2])
	require.NoError(t, err)

	d := openDevice(t, index)
	m, err := d.LoadModule(cubin)
	require.NoError(t, err)
	defer m.Close()
	k, err := m.Kernel("saxpy")
	require.NoError(t, err)

	y, err := gpu.OpenShared(d, handle)
	require.NoError(t, err)
	assert.Zero(t, countDiffs(t, "parent buffer seen by the child", downloadFloats(t, d, y, sharedN), seededFloats(seed, sharedN)))
	x, err := gpu.Upload(d, seededFloats(seed+1, sharedN))
	require.NoError(t, err)
	defer x.Free()
	require.NoError(t, gpu.Launch(k, gpu.LaunchConfig{Grid: gpu.D1((sharedN + 255) / 256), Block: gpu.D1(256)},
		int32(sharedN), sharedA, x, y))
	require.NoError(t, d.Synchronize())
	require.NoError(t, d.Free(y))

	q, h, err := gpu.MallocShared(d, sharedN*4)
	require.NoError(t, err)
	uploadFloats(t, d, q, seededFloats(seed+2, sharedN))
	require.NoError(t, d.Synchronize())
	fmt.Printf("SHARED-HANDLE %s\n", hex.EncodeToString(h))
	line, err := bufio.NewReader(os.Stdin).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "written\n", line)
	assert.Zero(t, countDiffs(t, "child buffer after the parent's copy", downloadFloats(t, d, q, sharedN), seededFloats(seed+3, sharedN)))
	require.NoError(t, d.Free(q))
	if !t.Failed() {
		fmt.Println("SHARED-OK")
	}
}

func TestOpenSharedRejectsForeignHandles(t *testing.T) {
	d := openDevice(t, 0)
	_, err := gpu.OpenShared(d, []byte(`{"path":"/dev/shm/kl-emu-1-1"}`))
	assert.ErrorContains(t, err, "not the handle of a CUDA shared buffer")
	p, h, err := gpu.MallocShared(d, 4096)
	require.NoError(t, err)
	require.NoError(t, d.Free(p))
	// Freed: the descriptor is closed (its number may already name another file), so importing
	// fails.
	_, err = gpu.OpenShared(d, h)
	assert.Error(t, err)
	t.Logf("opening a freed buffer: %v", err)
}
