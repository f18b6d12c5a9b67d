//go:build cgo

package emu

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/gpu/emu/emucc"
	"github.com/kernel-labs/kernellabs/internal/sandbox"
	"github.com/kernel-labs/kernellabs/internal/toolchain"
)

var (
	repoRoot   string
	skipReason string

	modMu   sync.Mutex
	modules = map[string]string{} // testdata file -> built .so
	modErrs = map[string]error{}
)

func TestMain(m *testing.M) {
	// The test binary stands in for labrun when the emulator starts a sandboxed launcher.
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case sandbox.WrapperCommand:
			os.Exit(sandbox.WrapperMain(os.Args[2:]))
		case LauncherCommand:
			if err := sandbox.EnforceNoSpawn(); err != nil {
				os.Exit(126)
			}
			os.Exit(LauncherMain())
		}
	}
	root, err := findRoot()
	if err != nil {
		skipReason = err.Error()
	} else {
		repoRoot = root
		if err := emucc.Check(); err != nil {
			skipReason = err.Error()
		}
	}
	os.Exit(m.Run())
}

func findRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", os.ErrNotExist
		}
	}
}

func includeDirs() []string {
	return []string{filepath.Join(repoRoot, "labs", "common"), filepath.Join(repoRoot, "emu")}
}

// needEmu skips the test when kernels cannot be built here.
func needEmu(t testing.TB) {
	t.Helper()
	if skipReason != "" {
		t.Skipf("CPU emulator unavailable: %s", skipReason)
	}
}

// build compiles testdata/file once per test binary.
func build(t testing.TB, file string) string {
	t.Helper()
	needEmu(t)
	modMu.Lock()
	defer modMu.Unlock()
	if so, ok := modules[file]; ok {
		return so
	}
	if err, ok := modErrs[file]; ok {
		require.NoError(t, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	art, err := emucc.Build(ctx, toolchain.Request{Source: filepath.Join("testdata", file), IncludeDirs: includeDirs()})
	so := art.Path
	if err != nil {
		modErrs[file] = err
	}
	require.NoError(t, err, "building testdata/%s", file)
	modules[file] = so
	return so
}

func openDev(t testing.TB, index int) gpu.Device {
	t.Helper()
	needEmu(t)
	b, err := Open()
	require.NoError(t, err)
	d, err := b.Open(index)
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	return d
}

func kernelOf(t testing.TB, d gpu.Device, file, name string) gpu.Kernel {
	t.Helper()
	m, err := d.LoadModule(build(t, file))
	require.NoError(t, err)
	k, err := m.Kernel(name)
	require.NoError(t, err)
	return k
}

func upload[T gpu.Elem](t testing.TB, d gpu.Device, host []T) *gpu.Buffer[T] {
	t.Helper()
	b, err := gpu.Upload(d, host)
	require.NoError(t, err)
	t.Cleanup(func() { b.Free() })
	return b
}

func alloc[T gpu.Elem](t testing.TB, d gpu.Device, n int) *gpu.Buffer[T] {
	t.Helper()
	b, err := gpu.Alloc[T](d, n)
	require.NoError(t, err)
	t.Cleanup(func() { b.Free() })
	return b
}

func download[T gpu.Elem](t testing.TB, b *gpu.Buffer[T]) []T {
	t.Helper()
	h, err := b.Download()
	require.NoError(t, err)
	return h
}

func randFloats(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = rng.Float32()*2 - 1
	}
	return v
}

// launchSync launches and waits, returning the first error of either.
func launchSync(d gpu.Device, k gpu.Kernel, cfg gpu.LaunchConfig, args ...any) error {
	if err := gpu.Launch(k, cfg, args...); err != nil {
		return err
	}
	return d.Synchronize()
}
