//go:build cgo && linux

package cuda

import (
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/kernel-labs/kernellabs/internal/dl"
	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/gpu/backends"
	"github.com/kernel-labs/kernellabs/internal/gpu/cuda/nvcc"
	"github.com/kernel-labs/kernellabs/internal/toolchain"
)

// probe finds the first of a vendor library's sonames that dlopen loads.
func probe(names ...string) (string, error) { return dl.Probe(names...) }

// doctor is what labrun doctor checks for the CUDA backend: the driver and its GPUs and nvcc,
// which it needs to run labs, then NVML, cuBLAS, cuBLASLt and NCCL, which some labs need.
func doctor() ([]backends.Check, bool) {
	var out []backends.Check
	add := func(c backends.Check) { out = append(out, c) }

	driverOK := false
	if be, err := Open(); err != nil {
		add(backends.Check{Name: "CUDA driver", Detail: err.Error(),
			Fix: "install the NVIDIA driver (libcuda.so.1); without a GPU, use the CPU emulator: --backend emu"})
	} else {
		n, err := be.DeviceCount()
		switch {
		case err != nil:
			add(backends.Check{Name: "CUDA driver", Detail: err.Error(), Fix: "check nvidia-smi; the driver may not match the kernel module"})
		case n == 0:
			add(backends.Check{Name: "CUDA driver", Detail: "loaded, but no GPU is visible", Fix: "check nvidia-smi and CUDA_VISIBLE_DEVICES"})
		default:
			for i := 0; i < n; i++ {
				info, err := be.DeviceInfo(i)
				if err != nil {
					add(backends.Check{Name: fmt.Sprintf("GPU %d", i), Detail: err.Error()})
					continue
				}
				if i == 0 {
					add(backends.Check{Name: "CUDA driver", Found: true, Detail: "driver API " + info.DriverVersion})
				}
				add(backends.Check{Name: fmt.Sprintf("GPU %d", i), Found: true, Detail: fmt.Sprintf("%s, %s, %d SMs, %s, %s",
					info.Name, nvcc.DeviceTarget(info), info.SMs, gpu.HumanBytes(info.MemoryBytes), info.PCIBusID)})
			}
			driverOK = true
		}
	}
	nvccOK := false
	if path, err := nvcc.Find(); err != nil {
		add(backends.Check{Name: "nvcc", Detail: "not found", Fix: "install the CUDA toolkit and put its bin/ on PATH (or set NVCC)"})
	} else if v, err := toolchain.CompilerVersion(path); err != nil {
		add(backends.Check{Name: "nvcc", Detail: err.Error(), Fix: "reinstall the CUDA toolkit"})
	} else {
		add(backends.Check{Name: "nvcc", Found: true, Detail: path + ": " + v})
		nvccOK = true
	}

	// NVML: lab 01's power, clocks, PCIe and NVLink figures.
	if ret := nvml.Init(); ret != nvml.SUCCESS {
		add(backends.Check{Name: "NVML", Detail: nvml.ErrorString(ret), Fix: "comes with the NVIDIA driver (libnvidia-ml.so.1); lab 01 runs without it but shows no power, clock or link data"})
	} else {
		v, _ := nvml.SystemGetDriverVersion()
		add(backends.Check{Name: "NVML", Found: true, Detail: "driver " + v})
		nvml.Shutdown()
	}
	for _, lib := range []struct {
		name, fix string
		sonames   []string
	}{
		{"cuBLAS", "install the CUDA toolkit's cuBLAS (libcublas); labs 01–03 use it as the baseline", cublasLib.sonames},
		{"cuBLASLt", "comes with cuBLAS (libcublasLt, or set " + CublasLtEnv + " to its path); lab 02's bf16 suites use it as the baseline", cublasLtLib.sonames},
		{"NCCL", "install NCCL (libnccl2); labs 04–05 use it as the baseline", NCCLNames},
	} {
		if name, err := dl.Probe(lib.sonames...); err != nil {
			add(backends.Check{Name: lib.name, Detail: "not found", Fix: lib.fix})
		} else {
			add(backends.Check{Name: lib.name, Found: true, Detail: name})
		}
	}
	return out, driverOK && nvccOK
}
