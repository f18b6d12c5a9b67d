package devprops

import "github.com/kernel-labs/kernellabs/internal/gpu"

// nvmlUnavailable is the NVML record of a run without NVML. Its absence is not an error.
func nvmlUnavailable(reason string) map[string]any {
	return map[string]any{"available": false, "reason": reason}
}

// nvmlNotApplicable says why NVML cannot describe this device at all ("" when it might).
func nvmlNotApplicable(info gpu.DeviceInfo) string {
	switch {
	case info.Emulated || info.Backend == "emu":
		return "the emulator backend has no NVML device (NVML describes NVIDIA GPUs)"
	case info.Backend == "hip":
		return "NVML describes NVIDIA GPUs; this is the HIP backend (rocm-smi is its counterpart)"
	}
	return ""
}
