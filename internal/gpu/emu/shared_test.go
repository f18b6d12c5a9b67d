//go:build cgo

package emu

import (
	"encoding/base64"
	"os"
	"os/exec"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

// Rank 1, in a process of its own, maps rank 0's shared buffers and runs a kernel that reads one
// and writes the other: the emulator's form of two GPUs' processes sharing memory.
func TestSharedBuffersBetweenRankProcesses(t *testing.T) {
	needEmu(t)
	const n = 777
	if h := os.Getenv("KL_SHARED_CHILD"); h != "" {
		hs := make([][]byte, 2)
		for i, part := range []string{os.Getenv("KL_SHARED_IN"), os.Getenv("KL_SHARED_OUT")} {
			b, err := base64.StdEncoding.DecodeString(part)
			require.NoError(t, err)
			hs[i] = b
		}
		d := openDev(t, 0)
		in, err := gpu.OpenShared(d, hs[0])
		require.NoError(t, err)
		out, err := gpu.OpenShared(d, hs[1])
		require.NoError(t, err)
		k := kernelOf(t, d, "hostile.cu", "add_one")
		require.NoError(t, gpu.Launch(k, gpu.LaunchConfig{Grid: gpu.D1((n + 127) / 128), Block: gpu.D1(128)}, in, out, int32(n)))
		require.NoError(t, d.Synchronize())
		require.NoError(t, d.Free(in))
		require.NoError(t, d.Free(out))
		return
	}
	d := openDev(t, 0)
	in, hin, err := gpu.MallocShared(d, 4*n)
	require.NoError(t, err)
	out, hout, err := gpu.MallocShared(d, 4*n)
	require.NoError(t, err)
	host := make([]float32, n)
	for i := range host {
		host[i] = float32(i) / 3
	}
	require.NoError(t, d.CopyHtoD(in, unsafePtr(host), 4*n, nil))
	require.NoError(t, d.MemsetD32(out, 0x7fc00000, n, nil))
	require.NoError(t, d.Synchronize())
	cmd := exec.Command(os.Args[0], "-test.run=^TestSharedBuffersBetweenRankProcesses$", "-test.count=1")
	cmd.Env = append(os.Environ(), "KL_SHARED_CHILD=1", "KL_SHARED_IN="+base64.StdEncoding.EncodeToString(hin),
		"KL_SHARED_OUT="+base64.StdEncoding.EncodeToString(hout),
		"RANK=1", "WORLD_SIZE=2", "LOCAL_RANK=1", "LABRUN_RENDEZVOUS=file:/nonexistent")
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, string(b))
	got := make([]float32, n)
	require.NoError(t, d.CopyDtoH(unsafePtr(got), out, 4*n, nil))
	require.NoError(t, d.Synchronize())
	for i := range got {
		require.Equal(t, host[i]+1, got[i], "element %d, written by the other process", i)
	}
	require.NoError(t, d.Free(in))
	require.NoError(t, d.Free(out))
	_, err = gpu.OpenShared(d, hin)
	assert.Error(t, err, "a freed shared buffer cannot be opened again")
}

func unsafePtr(v []float32) unsafe.Pointer { return unsafe.Pointer(&v[0]) }
