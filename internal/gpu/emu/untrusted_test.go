//go:build cgo

package emu

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/sandbox"
)

func needSandbox(t *testing.T) {
	t.Helper()
	if err := sandbox.Check(); err != nil {
		t.Skipf("no sandbox here: %v", err)
	}
}

func untrustedKernel(t *testing.T, d gpu.Device, name string) gpu.Kernel {
	t.Helper()
	m, err := gpu.LoadUntrusted(d, build(t, "hostile.cu"))
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	k, err := m.Kernel(name)
	require.NoError(t, err)
	return k
}

func TestUntrustedModuleIsConfined(t *testing.T) {
	needEmu(t)
	needSandbox(t)
	os.Remove("/tmp/kl-hostile-constructor-mark")
	os.Remove("/tmp/kl-hostile-kernel-mark")
	t.Setenv("LABRUN_SECRET_SEED", "12345")
	d := openDev(t, 0)
	k := untrustedKernel(t, d, "try_escape")
	out := upload(t, d, []int32{-1, -1, -1, -1, -1, -1, -1, -1})
	require.NoError(t, gpu.Launch(k, gpu.LaunchConfig{Grid: gpu.D1(1), Block: gpu.D1(32)}, out, int32(os.Getpid())))
	require.NoError(t, d.Synchronize())
	got := download(t, out)
	for i, what := range []string{"read /etc/passwd", "fork", "system()", "open a socket", "signal labrun",
		"setsid", "write a file", "see the secret seed"} {
		assert.Equal(t, int32(0), got[i], "the sandboxed kernel could %s", what)
	}
	assert.NoFileExists(t, "/tmp/kl-hostile-constructor-mark", "a static constructor wrote a file")
	assert.NoFileExists(t, "/tmp/kl-hostile-kernel-mark")
}

func TestUntrustedModuleComputesOnSharedMemory(t *testing.T) {
	needEmu(t)
	needSandbox(t)
	d := openDev(t, 0)
	k := untrustedKernel(t, d, "add_one")
	const n = 1000
	in := make([]float32, n)
	for i := range in {
		in[i] = float32(i) * 0.5
	}
	a := upload(t, d, in)
	b := alloc[float32](t, d, n)
	require.NoError(t, gpu.Launch(k, gpu.LaunchConfig{Grid: gpu.D1((n + 127) / 128), Block: gpu.D1(128)}, a, b, int32(n)))
	require.NoError(t, d.Synchronize())
	got := download(t, b)
	for i := range got {
		require.Equal(t, in[i]+1, got[i], "element %d", i)
	}
	// A buffer allocated after the first launch reaches the launcher too.
	c := alloc[float32](t, d, n)
	require.NoError(t, gpu.Launch(k, gpu.LaunchConfig{Grid: gpu.D1((n + 127) / 128), Block: gpu.D1(128)}, b, c, int32(n)))
	require.NoError(t, d.Synchronize())
	assert.Equal(t, in[n-1]+2, download(t, c)[n-1])
}

func TestUntrustedModuleThatExitsIsACrash(t *testing.T) {
	needEmu(t)
	needSandbox(t)
	d := openDev(t, 0)
	k := untrustedKernel(t, d, "exit_process")
	out := upload(t, d, []int32{0})
	err := gpu.Launch(k, gpu.LaunchConfig{Grid: gpu.D1(1), Block: gpu.D1(1)}, out)
	if err == nil {
		err = d.Synchronize()
	}
	require.Error(t, err)
	assert.Contains(t, err.Error(), "EMU_KERNEL_PROCESS_DIED")
	assert.True(t, gpu.IsSticky(err))
}

func TestUntrustedSharedMemoryStartsAsNaN(t *testing.T) {
	needEmu(t)
	needSandbox(t)
	d := openDev(t, 0)
	m, err := gpu.LoadUntrusted(d, build(t, "schedule.cu"))
	require.NoError(t, err)
	defer m.Close()
	k, err := m.Kernel("stale_shared")
	require.NoError(t, err)
	out := alloc[uint32](t, d, 4*256)
	require.NoError(t, gpu.Launch(k, gpu.LaunchConfig{Grid: gpu.D1(4), Block: gpu.D1(256)}, out))
	require.NoError(t, d.Synchronize())
	for i, v := range download(t, out) {
		require.Equal(t, uint32(0xFFFFFFFF), v, "element %d", i)
	}
}
