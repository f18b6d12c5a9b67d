//go:build !(linux && cgo)

package nvml

import (
	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/results"
)

// Properties without cgo (or off Linux): go-nvml loads libnvidia-ml through cgo.
func Properties(info gpu.DeviceInfo) results.NVML {
	if reason := notApplicable(info); reason != "" {
		return unavailable(reason)
	}
	return unavailable("this binary was built without cgo (or not for Linux), and NVML is reached through cgo")
}
