// Package nvml reads what NVIDIA's management library (NVML) says about a board while it is
// measured: the driver, power, clocks now and at most, temperature, the PCIe link as trained and
// at most, NVLink, and the ECC, persistence and compute modes. The CUDA attributes (gpu.Device's
// Attributes) say what the chip can do; NVML says what state the board is in.
//
// NVML is optional: Properties never fails, it records why NVML said nothing (the emulator, another
// vendor, no driver, a binary built without cgo).
package nvml

import (
	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/results"
)

// unavailable is the record of a device NVML cannot describe. Its absence is not an error.
func unavailable(reason string) results.NVML { return results.NVML{Reason: reason} }

// notApplicable says why NVML cannot describe this device at all ("" when it might).
func notApplicable(info gpu.DeviceInfo) string {
	switch {
	case info.Emulated || info.Backend == "emu":
		return "the emulator backend has no NVML device (NVML describes NVIDIA GPUs)"
	case info.Backend == "hip":
		return "NVML describes NVIDIA GPUs; this is the HIP backend (rocm-smi is its counterpart)"
	}
	return ""
}
