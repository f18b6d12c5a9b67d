package lab

import "github.com/kernel-labs/kernellabs/internal/gpu"

// TensorMaps is TensorMap for each description in turn (what names them in errors), as the
// trailing arguments of a TMA kernel.
func TensorMaps(env *Env, what string, ds ...gpu.TensorMapDesc) ([]any, error) {
	maps := make([]any, 0, len(ds))
	for _, d := range ds {
		m, err := TensorMap(env, what, d)
		if err != nil {
			return nil, err
		}
		maps = append(maps, m)
	}
	return maps, nil
}
