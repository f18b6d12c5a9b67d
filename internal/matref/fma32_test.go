package matref

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fma32Big is the correctly rounded float32 FMA by exact arithmetic (normal range only).
func fma32Big(x, y, z float32) float32 {
	p := new(big.Float).SetPrec(200).SetFloat64(float64(x))
	p.Mul(p, new(big.Float).SetPrec(200).SetFloat64(float64(y)))
	p.Add(p, new(big.Float).SetPrec(200).SetFloat64(float64(z)))
	f, _ := new(big.Float).SetPrec(24).SetMode(big.ToNearestEven).Set(p).Float32()
	return f
}

func TestFMA32IsCorrectlyRounded(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200000; i++ {
		x := float32((rng.Float64()*2 - 1) * math.Pow(2, float64(rng.IntN(40)-20)))
		y := float32((rng.Float64()*2 - 1) * math.Pow(2, float64(rng.IntN(40)-20)))
		z := float32((rng.Float64()*2 - 1) * math.Pow(2, float64(rng.IntN(80)-40)))
		require.Equal(t, math.Float32bits(fma32Big(x, y, z)), math.Float32bits(FMA32(x, y, z)), "fma(%g, %g, %g)", x, y, z)
	}
}

func TestFMA32AvoidsDoubleRounding(t *testing.T) {
	// x·y = 1 + 2⁻¹¹ + 2⁻²⁴ exactly, halfway between two float32 values; z = 2⁻⁶⁰ tips it up.
	// Rounding to float64 first loses z and then ties to even (down): the wrong answer.
	x := float32(1 + 1.0/(1<<12))
	z := float32(math.Ldexp(1, -60))
	want := float32(1 + 1.0/(1<<11) + 1.0/(1<<23))
	naive := float32(math.FMA(float64(x), float64(x), float64(z)))
	assert.NotEqual(t, want, naive, "the naive float64 route should fail this case")
	assert.Equal(t, want, FMA32(x, x, z))
	assert.Equal(t, want, fma32Big(x, x, z))
	// And the mirror image below zero.
	assert.Equal(t, -want, FMA32(-x, x, -z))
}
