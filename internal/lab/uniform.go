package lab

import "github.com/kernel-labs/kernellabs/internal/matref"

// Uniform is n inputs drawn as matref.FillUniform draws them, seeded by one draw from env's
// generator.
func Uniform(env *Env, n int) []float32 {
	x := make([]float32, n)
	matref.FillUniform(x, env.RNG.Uint64())
	return x
}
