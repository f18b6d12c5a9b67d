//go:build cgo

package emu

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/gpu/emu/emucc"
	"github.com/kernel-labs/kernellabs/internal/gpu/gputest"
	"github.com/kernel-labs/kernellabs/internal/toolchain"
)

// BenchmarkSGEMMTiled512 runs the shared-memory tiled SGEMM (16×16 tiles, two barriers per
// tile) on 512×512×512: 1024 blocks of 256 threads, 64 barriers each. The goal on a 2-core
// machine is at most 2 s per launch.
func BenchmarkSGEMMTiled512(b *testing.B) {
	d := openDev(b, 0)
	k := kernelOf(b, d, "tiled.cu", "sgemm_tiled")
	const n = 512
	rng := rand.New(rand.NewPCG(3, 4))
	a, bb := randFloats(rng, n*n), randFloats(rng, n*n)
	da, db := upload(b, d, a), upload(b, d, bb)
	dc := alloc[float32](b, d, n*n)
	cfg := gpu.LaunchConfig{Grid: gpu.D2(n/16, n/16), Block: gpu.D2(16, 16)}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		require.NoError(b, launchSync(d, k, cfg, da, db, dc, int32(n), int32(n), int32(n)))
	}
	b.StopTimer()
	b.ReportMetric(2*n*n*n*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	got := download(b, dc)
	require.Less(b, gputest.RelErr(got, gputest.MatmulRef(a, bb, n, n, n)), 1e-5)
}

// BenchmarkBuildKernels builds every test kernel file into an empty cache (the runtime
// included), two at a time as a lab build would on 2 cores, then again from the cache.
// The goals: a lab's kernels in at most 10 s, a cached rebuild in at most 1 s.
func BenchmarkBuildKernels(b *testing.B) {
	needEmu(b)
	files, err := filepath.Glob(filepath.Join("testdata", "*.cu"))
	require.NoError(b, err)
	var cold, warm time.Duration
	for i := 0; i < b.N; i++ {
		dir := b.TempDir()
		b.Setenv("LABRUN_CACHE", dir) // an empty cache
		t0 := time.Now()
		require.NoError(b, buildAll(files, 2))
		cold += time.Since(t0)
		t1 := time.Now()
		require.NoError(b, buildAll(files, 2))
		warm += time.Since(t1)
		os.RemoveAll(dir)
	}
	b.ReportMetric(cold.Seconds()/float64(b.N), "s-cold")
	b.ReportMetric(warm.Seconds()/float64(b.N), "s-cached")
	b.ReportMetric(float64(len(files)), "files")
}

func buildAll(files []string, par int) error {
	sem := make(chan struct{}, par)
	errs := make(chan error, len(files))
	for _, f := range files {
		sem <- struct{}{}
		go func(f string) {
			defer func() { <-sem }()
			_, err := emucc.Build(context.Background(), toolchain.Request{Source: f, IncludeDirs: includeDirs()})
			errs <- err
		}(f)
	}
	for range files {
		if err := <-errs; err != nil {
			return err
		}
	}
	return nil
}
