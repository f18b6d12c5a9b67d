package cuda

import (
	"context"
	"fmt"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/gpu/backends"
	"github.com/kernel-labs/kernellabs/internal/gpu/cuda/nvcc"
	"github.com/kernel-labs/kernellabs/internal/toolchain"
)

// The CUDA backend's registration: its runtime (this package), its compiler (package nvcc), its
// rules and what labrun doctor checks for it (doctor.go).
func init() {
	backends.Register(backends.Registration{
		Name:     "cuda",
		Title:    "NVIDIA GPU (--backend cuda)",
		Open:     func() (gpu.Backend, error) { return Open() },
		Compiler: Compiler{},
		Rules:    Rules{},
		Doctor:   doctor,
	})
}

// Compiler builds kernel files with nvcc into cubins.
type Compiler struct{}

func (Compiler) Family() string { return nvcc.Family }
func (Compiler) Build(ctx context.Context, r toolchain.Request) (toolchain.Artifact, error) {
	return nvcc.Build(ctx, r)
}
func (Compiler) Version() (string, error) { return nvcc.Version() }

// NCCLNames are the sonames of NCCL that the backend and labrun doctor look for.
var NCCLNames = []string{"libnccl.so.2", "libnccl.so"}

// FindNCCL says which of NCCLNames loads here, or why none does.
func FindNCCL() (string, error) { return probe(NCCLNames...) }

// Rules are what an NVIDIA GPU runs: every need of lab.yaml (nvidia, gpu, cublas), NCCL where it
// is installed (and for nccl_device its headers too), and the architectures the device's compute capability covers.
type Rules struct{}

func (Rules) SkipReason(dev gpu.DeviceInfo, req backends.Requirements) string {
	if why := backends.TooFewDevices(dev, req, fmt.Sprintf("the emulator: --emu-devices %d", req.Devices)); why != "" {
		return why
	}
	for _, n := range req.Needs {
		if n == "nccl" || n == NeedNCCLDevice {
			if _, err := FindNCCL(); err != nil {
				return "needs NCCL, which is not installed here (libnccl.so.2; labrun doctor says how to get it)"
			}
		}
		if n == NeedNCCLDevice {
			if _, err := nvcc.NCCLIncludeDir(); err != nil {
				return "a kernel on NCCL's device API: " + err.Error()
			}
		}
		if why := nvcc.ArchSkipReason(dev, n, true); why != "" {
			return why
		}
	}
	return ""
}

func (Rules) Target(dev gpu.DeviceInfo, needs []string) string { return nvcc.Target(dev, needs) }

// BuildFlags make NCCL's headers includable where they are installed outside nvcc's own search
// path, so that kernels on NCCL's device API (needs: [nccl_device]) compile; the other kernels
// include nothing from there.
func (Rules) BuildFlags(gpu.DeviceInfo) []string { return nvcc.NCCLIncludeFlags() }

// NeedNCCLDevice is lab.yaml's need of a kernel that includes nccl_device.h (NCCL ≥ 2.28's device
// API): NCCL's library and its headers must both be here.
const NeedNCCLDevice = "nccl_device"
