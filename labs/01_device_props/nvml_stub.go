//go:build !(linux && cgo)

package devprops

import "github.com/kernel-labs/kernellabs/internal/gpu"

// describeNVML without cgo (or off Linux): go-nvml loads libnvidia-ml through cgo.
func describeNVML(info gpu.DeviceInfo) map[string]any {
	if reason := nvmlNotApplicable(info); reason != "" {
		return nvmlUnavailable(reason)
	}
	return nvmlUnavailable("this binary was built without cgo (or not for Linux), and NVML is reached through cgo")
}
