package emu

import (
	"context"
	"fmt"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/gpu/backends"
	"github.com/kernel-labs/kernellabs/internal/gpu/cuda/nvcc"
	"github.com/kernel-labs/kernellabs/internal/gpu/emu/emucc"
	"github.com/kernel-labs/kernellabs/internal/toolchain"
)

// The emulator's registration: its runtime (this package), its compiler (package emucc, which
// builds against the C++ runtime in the course's emu/ folder), its rules and what labrun doctor
// checks for it.
func init() {
	backends.Register(backends.Registration{
		Name:     "emu",
		Title:    "CPU emulator (--backend emu)",
		Open:     Open,
		Compiler: Compiler{},
		Rules:    Rules{},
		Doctor:   doctor,
		Instead:  "without a GPU, run on the CPU emulator: --backend emu",
	})
}

// Compiler builds kernel files with the host C++ compiler into shared objects (package emucc).
type Compiler struct{}

func (Compiler) Family() string { return emucc.Family }
func (Compiler) Build(ctx context.Context, r toolchain.Request) (toolchain.Artifact, error) {
	return emucc.Build(ctx, r)
}
func (Compiler) Version() (string, error) { return emucc.Version() }

// Rules are what the emulator runs: plain CUDA with 32-lane warps (or 64, --emu-warp 64), on as
// many devices as --emu-devices gives. Its device presents compute capability 8.0 and reads
// lab.yaml's architecture needs as nvcc names them: an architecture-specific target (sm_90a) is
// not this device, while "sm_80 or newer" needs are left to the kernel, which the emulator runs
// whatever it names.
type Rules struct{}

func (Rules) SkipReason(dev gpu.DeviceInfo, req backends.Requirements) string {
	if req.EmuSkip != "" {
		return "not on the emulator: " + req.EmuSkip
	}
	if why := backends.TooFewDevices(dev, req, fmt.Sprintf("the emulator: --emu-devices %d", req.Devices)); why != "" {
		return why
	}
	for _, n := range req.Needs {
		switch n {
		case "gpu":
			return "needs a GPU (the emulator runs plain CUDA only)"
		case "nvidia":
			if dev.WarpSize != 32 {
				return fmt.Sprintf("NVIDIA-only (32-lane warps, wmma or PTX): not run with %d-lane warps (--emu-warp %d)",
					dev.WarpSize, dev.WarpSize)
			}
		case "cublas":
			return "needs cuBLAS, which exists on NVIDIA GPUs only"
		case "nccl":
			return "needs NCCL, which exists on NVIDIA GPUs only"
		case "nccl_device":
			return "a kernel on NCCL's device API (nccl_device.h), which has no emulator form"
		}
		if why := nvcc.ArchSkipReason(dev, n, false); why != "" {
			return why
		}
	}
	return ""
}

// Target is the target name recorded with results: the device's sm_80, or the
// architecture-specific target a kernel names (the host compiler builds for the host either way).
func (Rules) Target(dev gpu.DeviceInfo, needs []string) string { return nvcc.Target(dev, needs) }

// BuildFlags build the kernels for the device's warp width: nothing for 32 lanes,
// -DKL_EMU_WARP_SIZE=64 for wave64.
func (Rules) BuildFlags(dev gpu.DeviceInfo) []string { return WarpBuildFlags(dev.WarpSize) }

// doctor is what labrun doctor checks for the emulator: a C++ compiler and Boost.Context, and
// the backend itself.
func doctor() ([]backends.Check, bool) {
	var out []backends.Check
	cxx, err := emucc.Compiler()
	cxxOK := err == nil
	if err != nil {
		out = append(out, backends.Check{Name: "C++ compiler (emulator)", Detail: err.Error(), Fix: "sudo apt-get install g++ (or set CXX)"})
	} else {
		v, _ := toolchain.CompilerVersion(cxx)
		out = append(out, backends.Check{Name: "C++ compiler (emulator)", Found: true, Detail: cxx + ": " + v})
	}
	boostOK := false
	switch {
	case !cxxOK:
		out = append(out, backends.Check{Name: "Boost.Context (emulator)", Detail: "not checked: no C++ compiler",
			Fix: "sudo apt-get install libboost-context-dev (make setup does it)"})
	case emucc.Check() != nil:
		out = append(out, backends.Check{Name: "Boost.Context (emulator)", Detail: emucc.Check().Error(),
			Fix: "sudo apt-get install libboost-context-dev (make setup does it)"})
	default:
		out = append(out, backends.Check{Name: "Boost.Context (emulator)", Found: true, Detail: "headers found"})
		boostOK = true
	}
	be, err := Open()
	if err != nil {
		out = append(out, backends.Check{Name: "CPU emulator", Detail: err.Error(), Fix: "make setup"})
		return out, false
	}
	if !cxxOK || !boostOK {
		return out, false
	}
	n, err := be.DeviceCount()
	if err != nil {
		out = append(out, backends.Check{Name: "CPU emulator", Detail: err.Error(), Fix: "set " + EnvDevices + " to a whole number of at least 1"})
		return out, false
	}
	out = append(out, backends.Check{Name: "CPU emulator", Found: true, Detail: fmt.Sprintf("%d emulated device(s)", n)})
	return out, true
}
