package hip

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/toolchain"
)

// hipTestTarget is a target whose compiler is installed, or skips the test.
func hipTestTarget(t *testing.T, arch string) Target {
	t.Helper()
	tg, err := TargetByArch(arch)
	require.NoError(t, err)
	if _, err := tg.Find(); err != nil {
		t.Skipf("no HIP compiler here (%v)", err)
	}
	return tg
}

func commonDir(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "labs", "common")
}

// A kernel written with kl.cuh's layer compiles for AMD; one that spells CUDA's *_sync
// collectives with a 32-bit mask does not, and the error names its file and line.
func TestCompileHIP(t *testing.T) {
	for _, arch := range []string{"gfx942", "gfx90a"} {
		t.Run(arch, func(t *testing.T) {
			tg := hipTestTarget(t, arch)
			dir := t.TempDir()
			for _, tc := range []struct {
				name, src string
				line      int // 0: compiles
			}{
				{"portable", `#include "kl.cuh"
extern "C" __global__ void KL_LAUNCH_BOUNDS(256, 2) k(float* x, kl_lanemask_t* m, unsigned* flag) {
    float v = x[threadIdx.x];
    for (int off = KL_WARP_SIZE / 2; off > 0; off /= 2) v += kl_shfl_xor_sync(KL_FULL_MASK, v, off);
    const kl_lanemask_t b = kl_ballot_sync(KL_FULL_MASK, v > 0.0f);
    if (kl_lane() == 0) { m[kl_warp()] = b & kl_lane_bit(KL_WARP_SIZE - 1); x[0] = v; }
    kl_store_release_sys(flag, kl_bf16_bits(kl_float2bf16(v)));
}
`, 0},
				{"cuda_sync_spelling", `#include "kl.cuh"
extern "C" __global__ void k(float* x) {
    float v = x[threadIdx.x];
    v += __shfl_xor_sync(0xffffffffu, v, 16);
    x[threadIdx.x] = v;
}
`, 4},
			} {
				t.Run(tc.name, func(t *testing.T) {
					src := filepath.Join(dir, tc.name+".cu")
					require.NoError(t, os.WriteFile(src, []byte(tc.src), 0o644))
					ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
					defer cancel()
					err := Compile(ctx, tg, Request{Source: src, IncludeDirs: []string{commonDir(t)}, OutDir: dir})
					if tc.line == 0 {
						require.NoError(t, err)
						return
					}
					var ce *toolchain.CompileError
					require.True(t, errors.As(err, &ce), "want a CompileError, got %v", err)
					d, ok := ce.First()
					require.True(t, ok, "no located error in %s", ce.Output)
					assert.Equal(t, src, d.File)
					assert.Equal(t, tc.line, d.Line)
				})
			}
		})
	}
}

func TestHIPTargetByArch(t *testing.T) {
	_, err := TargetByArch("gfx1100")
	assert.ErrorContains(t, err, "known: gfx90a, gfx942")
	tg, err := TargetByArch("gfx942")
	require.NoError(t, err)
	assert.Equal(t, "clang-19", tg.Compiler)
}
