package devprops

import (
	"github.com/kernel-labs/kernellabs/internal/matref"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFillHashIsDeterministicAndNeverZero(t *testing.T) {
	for _, seed := range []uint64{0, 1, 0xDEADBEEF, math.MaxUint64} {
		for i := uint64(0); i < 20000; i++ {
			v := HashFloat(seed, i)
			require.Equal(t, v, HashFloat(seed, i))
			require.NotZero(t, v)
			require.True(t, v > -1 && v < 1, "%g", v)
			// An odd multiple of 2⁻²⁴: exactly what the device computes.
			k := float64(v) * (1 << 24)
			require.Equal(t, math.Trunc(k), k)
			require.Equal(t, 1.0, math.Abs(math.Mod(k, 2)))
		}
	}
	assert.NotEqual(t, HashFloat(1, 5), HashFloat(2, 5), "seeds give different streams")
	// Both extremes of the 24-bit range map inside (−1, 1).
	assert.Equal(t, float32(-1+1.0/(1<<24)), UnitFloat(0))
	assert.Equal(t, float32(1-1.0/(1<<24)), UnitFloat(math.MaxUint64))
}

func TestFMAChainRef(t *testing.T) {
	seed := uint64(7)
	// No steps: the sum of the starting values, in chain order.
	x0, x1 := HashFloat(seed, 3*16+2), HashFloat(seed, 3*16+3)
	assert.Equal(t, x0+x1, FMAChainRef(seed, 3, 2, 0))
	// Two steps of one chain, by hand.
	key := uint64(5 * 16)
	a := float32(0x8000+uint32(matref.SplitMix64(seed, key)>>49)) / 65536
	b := HashFloat(seed, key+1)
	x := HashFloat(seed, key+2)
	x = matref.FMA32(matref.FMA32(x, a, b), a, b)
	assert.Equal(t, x, FMAChainRef(seed, 5, 1, 2))
	assert.True(t, a >= 0.5 && a < 1)
	// Long chains stay finite and normal (no overflow, no subnormals) for any thread.
	for tid := uint64(0); tid < 200; tid++ {
		v := FMAChainRef(seed, tid, 8, 4096)
		require.False(t, math.IsNaN(float64(v)) || math.IsInf(float64(v), 0))
		require.True(t, v == 0 || math.Abs(float64(v)) > 1e-30)
	}
}

func TestBF16(t *testing.T) {
	for _, tc := range []struct {
		in   float32
		want float32
	}{
		{1, 1},
		{-2.5, -2.5},
		{1 + 1.0/256, 1},                      // halfway between 1 and 1+2⁻⁷: ties to even (down)
		{1 + 3.0/256, 1 + 4.0/256},            // halfway between 1+2⁻⁷ and 1+2⁻⁶: ties to even (up)
		{1 + 1.0/256 + 1.0/4096, 1 + 1.0/128}, // above halfway: up
		{3.14159265, 3.140625},
	} {
		assert.Equal(t, tc.want, matref.Float32FromBF16(matref.BF16FromFloat32(tc.in)), "%g", tc.in)
	}
	assert.True(t, math.IsNaN(float64(matref.Float32FromBF16(matref.BF16FromFloat32(float32(math.NaN()))))))
}
