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

// PowerWatch without cgo: NVML cannot be reached, so there is nothing to watch.
type PowerWatch struct{}

// NewPowerWatch is nil without cgo.
func NewPowerWatch(info gpu.DeviceInfo) *PowerWatch { return nil }

// Mark reads nothing.
func (w *PowerWatch) Mark() PowerMark { return PowerMark{} }

// Since reads nothing.
func (w *PowerWatch) Since(m PowerMark) (PowerSpan, bool) { return PowerSpan{}, false }

// Close does nothing.
func (w *PowerWatch) Close() {}
