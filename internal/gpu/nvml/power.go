//go:build linux && cgo

package nvml

import (
	"time"

	nv "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

// PowerWatch reads, over a span of timed work, the share of the time the board's power cap held
// its clocks down (NVML's violation counter of PERF_POLICY_POWER) and its SM clock at the span's
// end: what says whether a timed figure is a boost-clock or a power-capped one.
type PowerWatch struct {
	dev nv.Device
}

// NewPowerWatch opens NVML for the device that info describes; nil where NVML cannot see it (the
// emulator, another vendor, no driver). Close releases NVML.
func NewPowerWatch(info gpu.DeviceInfo) *PowerWatch {
	if notApplicable(info) != "" || nv.Init() != nv.SUCCESS {
		return nil
	}
	dev, _, err := deviceFor(info)
	if err != "" {
		nv.Shutdown()
		return nil
	}
	if _, ret := dev.GetViolationStatus(nv.PERF_POLICY_POWER); ret != nv.SUCCESS {
		nv.Shutdown()
		return nil
	}
	return &PowerWatch{dev: dev}
}

// Mark starts a span.
func (w *PowerWatch) Mark() PowerMark {
	if w == nil {
		return PowerMark{}
	}
	v, ret := w.dev.GetViolationStatus(nv.PERF_POLICY_POWER)
	return PowerMark{violationNs: v.ViolationTime, at: time.Now(), ok: ret == nv.SUCCESS}
}

// Since reads the span from m to now.
func (w *PowerWatch) Since(m PowerMark) (PowerSpan, bool) {
	if w == nil || !m.ok {
		return PowerSpan{}, false
	}
	v, ret := w.dev.GetViolationStatus(nv.PERF_POLICY_POWER)
	wall := time.Since(m.at)
	if ret != nv.SUCCESS || wall <= 0 || v.ViolationTime < m.violationNs {
		return PowerSpan{}, false
	}
	s := PowerSpan{CappedShare: min(float64(v.ViolationTime-m.violationNs)/float64(wall.Nanoseconds()), 1)}
	if mhz, ret := w.dev.GetClockInfo(nv.CLOCK_SM); ret == nv.SUCCESS {
		s.SMClockMHz = int(mhz)
	}
	return s, true
}

// Close releases NVML.
func (w *PowerWatch) Close() {
	if w != nil {
		nv.Shutdown()
	}
}
