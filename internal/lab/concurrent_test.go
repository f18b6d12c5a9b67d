package lab

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/gpu/emu/emucc/emutest"
	"github.com/kernel-labs/kernellabs/internal/labtest/coursedir"
	"github.com/kernel-labs/kernellabs/internal/results"
)

// A lab of one real kernel for the emulator: y = 2x, as the fake test lab computes it.
const emuManifest = `id: "98"
title: {en: Concurrent runs, zh: 并发运行}
timeout: 60s
suites:
  - name: scale
    title: {en: Scale, zh: 缩放}
    metric: gbps
    tolerance: 1e-6
    variants:
      - {name: first, file: k.cu, entry: scale_good}
      - {name: second, file: k.cu, entry: scale_good}
    problems:
      gpu: [{name: small, n: 1000}]
      emu: [{name: tiny, n: 300}]
`

const emuKernel = `#include "kl.cuh"
// The test driver launches one thread: it strides over every element.
extern "C" __global__ void scale_good(const float* x, float* y, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = 2.0f * x[i];
}
`

// Two emulator runs of one lab at once (the scale lab, registered as 98_concurrent by
// scalelab_test.go), each of its own variant, against one results file: both runs' entries are in
// it afterwards (the file is updated under a lock).
func TestConcurrentRunsBothLand(t *testing.T) {
	emutest.Need(t)
	course, err := FindRoot(".")
	require.NoError(t, err)
	root := coursedir.Write(t, "98_concurrent", map[string]string{"lab.yaml": emuManifest, "k.cu": emuKernel})
	for _, d := range []string{"labs/common", "emu"} {
		copyDir(t, filepath.Join(course, d), filepath.Join(root, d))
	}
	var wg sync.WaitGroup
	paths := make([]string, 2)
	errs := make([]error, 2)
	for i, v := range []string{"first", "second"} {
		wg.Add(1)
		go func(i int, v string) {
			defer wg.Done()
			out, err := Run(context.Background(), Options{Root: root, Lab: "98", Backend: "emu", Variants: []string{v},
				Seed: uint64(i + 1), SeedSet: true, Worker: testWorker})
			if err == nil {
				paths[i], err = out.SavedTo, out.SaveError
			}
			errs[i] = err
		}(i, v)
	}
	wg.Wait()
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	require.Equal(t, paths[0], paths[1], "both runs write one file")
	f, err := results.Load(paths[0])
	require.NoError(t, err)
	got := map[string]string{}
	for _, e := range f.Entries {
		got[e.Variant] = e.Status
	}
	assert.Equal(t, map[string]string{"first": results.StatusOK, "second": results.StatusOK}, got)
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	require.NoError(t, filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o644)
	}))
}
