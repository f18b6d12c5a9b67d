//go:build cgo

package emu

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/gpu/emu/emucc"
	"github.com/kernel-labs/kernellabs/internal/toolchain"
)

// buildWarp compiles testdata/file for warps of the given width, as the engine does.
func buildWarp(t *testing.T, file string, warp int) string {
	t.Helper()
	needEmu(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	art, err := emucc.Build(ctx, toolchain.Request{Source: filepath.Join("testdata", file),
		IncludeDirs: includeDirs(), Flags: WarpBuildFlags(warp)})
	require.NoError(t, err, "building testdata/%s for %d-lane warps", file, warp)
	return art.Path
}

// openWarpDev opens device 0 with warps of the given width.
func openWarpDev(t *testing.T, warp int) gpu.Device {
	t.Helper()
	SetWarpSize(warp)
	t.Cleanup(func() { SetWarpSize(0) })
	d := openDev(t, 0)
	require.Equal(t, warp, d.Info().WarpSize)
	return d
}

// A kernel written with kl.cuh's lane masks is right with 32- and 64-lane warps; one that
// hard-codes CUDA's 32-lane mask is right with 32 and fails with 64, naming the mask.
func TestWarpWidth(t *testing.T) {
	const n = 256
	rng := rand.New(rand.NewPCG(64, 32))
	in := randFloats(rng, n)
	for _, warp := range []int{32, 64} {
		t.Run(map[int]string{32: "wave32", 64: "wave64"}[warp], func(t *testing.T) {
			d := openWarpDev(t, warp)
			m, err := d.LoadModule(buildWarp(t, "wave64.cu", warp))
			require.NoError(t, err)
			cfg := gpu.LaunchConfig{Grid: gpu.D1(2), Block: gpu.D1(n / 2)}
			nw := n / warp

			k, err := m.Kernel("warp_sums_portable")
			require.NoError(t, err)
			out := alloc[float32](t, d, nw)
			var want []uint64
			for w := 0; w < nw; w++ {
				var b uint64
				for l := 0; l < warp; l++ {
					if in[w*warp+l] > 0 {
						b |= 1 << l
					}
				}
				want = append(want, b)
			}
			var got []uint64
			if warp == 64 {
				ballots := alloc[uint64](t, d, nw)
				require.NoError(t, launchSync(d, k, cfg, upload(t, d, in), out, ballots))
				got = download(t, ballots)
			} else {
				ballots := alloc[uint32](t, d, nw)
				require.NoError(t, launchSync(d, k, cfg, upload(t, d, in), out, ballots))
				for _, b := range download(t, ballots) {
					got = append(got, uint64(b))
				}
			}
			assert.Equal(t, want, got, "ballots, one mask of %d bits per warp", warp)
			sums := download(t, out)
			for w := 0; w < nw; w++ {
				var s float64
				for l := 0; l < warp; l++ {
					s += float64(in[w*warp+l])
				}
				assert.InDelta(t, s, sums[w], 1e-4, "warp %d", w)
			}

			k32, err := m.Kernel("warp_sums_mask32")
			require.NoError(t, err)
			out32 := alloc[float32](t, d, n/32)
			err = launchSync(d, k32, cfg, upload(t, d, in), out32)
			if warp == 32 {
				require.NoError(t, err)
				return
			}
			require.Error(t, err, "a 32-bit full mask must fail with 64-lane warps")
			assert.Contains(t, err.Error(), "mask 0x00000000ffffffff")
			assert.Contains(t, err.Error(), "leaves out lanes 32-63")
		})
	}
}

// A module built for 32-lane warps is refused by a device with 64, and the error says how to
// rebuild it.
func TestModuleOfAnotherWarpWidthIsRefused(t *testing.T) {
	so := buildWarp(t, "wave64.cu", 32)
	d := openWarpDev(t, 64)
	_, err := d.LoadModule(so)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "built for 32-lane warps, this emulated device has 64")
	assert.Contains(t, err.Error(), "-DKL_EMU_WARP_SIZE=64")
}

func TestWarpSizeSetting(t *testing.T) {
	for _, tc := range []struct {
		env  string
		want int
		err  string
	}{
		{"", 32, ""}, {"32", 32, ""}, {"64", 64, ""},
		{"48", 0, "32 lanes (NVIDIA) or 64"}, {"wave64", 0, "want 32 (NVIDIA's warps) or 64"},
	} {
		t.Setenv(EnvWarp, tc.env)
		n, err := WarpSize()
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, "%s=%q", EnvWarp, tc.env)
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, tc.want, n, "%s=%q", EnvWarp, tc.env)
	}
	assert.Nil(t, WarpBuildFlags(32))
	assert.Equal(t, []string{"-DKL_EMU_WARP_SIZE=64"}, WarpBuildFlags(64))
}
