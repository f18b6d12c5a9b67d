package cuda_test

import (
	"errors"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

func errorIsAny(err error, targets ...error) bool {
	for _, t := range targets {
		if errors.Is(err, t) {
			return true
		}
	}
	return false
}

func isCallError(err error) bool {
	var ce *gpu.CallError
	return errors.As(err, &ce)
}
