package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/kernel-labs/kernellabs/internal/dl"
	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/term"
	"github.com/kernel-labs/kernellabs/internal/toolchain"
)

// finding is one line of `labrun doctor`.
type finding struct {
	Backend string `json:"backend"` // the backend that needs it: "cuda" or "emu"
	Name    string `json:"name"`
	Found   bool   `json:"found"`
	Detail  string `json:"detail"`
	Fix     string `json:"fix,omitempty"`
}

func cmdDoctor(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("doctor", stdout, stderr)
	asJSON := fs.Bool("json", false, "write JSON to stdout")
	fs.intro = "Usage: labrun doctor [--json]\n\nSays which GPUs, drivers, compilers and libraries labrun can use, and how to install what is missing.\nExit status 0 when at least one backend (a GPU or the emulator) can run labs, else 3.\n\nFlags:\n"
	if code, ok := fs.parse(args); !ok {
		return code
	}
	checks, usable := diagnose()
	current := "emu" // what --backend auto picks here
	if len(usable) > 0 {
		current = usable[0]
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(map[string]any{"checks": checks, "usable_backends": usable, "current_backend": current})
	} else {
		printDoctor(term.NewWrapWriter(stdout, term.Width()), checks, usable, current)
	}
	if len(usable) == 0 {
		return exitEnv
	}
	return exitOK
}

// printDoctor prints the checks of the backend that labrun uses here first, then the others.
func printDoctor(w *term.WrapWriter, checks []finding, usable []string, current string) {
	defer w.Flush()
	order := []string{current}
	for _, b := range []string{"cuda", "emu"} {
		if b != current {
			order = append(order, b)
		}
	}
	title := map[string]string{"cuda": "NVIDIA GPU (--backend cuda)", "emu": "CPU emulator (--backend emu)"}
	for i, b := range order {
		if i > 0 {
			fmt.Fprintln(w)
		}
		switch {
		case b == current && slices.Contains(usable, b):
			fmt.Fprintf(w, "%s: what labrun uses here\n", title[b])
		case b == current:
			fmt.Fprintf(w, "%s: what labrun would use here, once the missing parts are installed\n", title[b])
		case slices.Contains(usable, b):
			fmt.Fprintf(w, "%s: also usable here\n", title[b])
		default:
			fmt.Fprintf(w, "%s: not usable here; needed only to run on a GPU\n", title[b])
		}
		for _, f := range checks {
			if f.Backend != b {
				continue
			}
			mark := "ok     "
			if !f.Found {
				mark = "MISSING"
			}
			fmt.Fprintf(w, "  %s %s: %s\n", mark, f.Name, f.Detail)
			if !f.Found && f.Fix != "" {
				fmt.Fprintf(w, "          fix: %s\n", f.Fix)
			}
		}
	}
	if len(usable) == 0 {
		fmt.Fprintln(w, "\nNo backend can run labs here. Install the emulator's packages (make setup), or the NVIDIA driver and CUDA toolkit for a GPU.")
	} else {
		fmt.Fprintf(w, "\nBackends that can run labs: %s (labrun picks the first with --backend auto)\n", strings.Join(usable, ", "))
	}
}

func diagnose() ([]finding, []string) {
	var out []finding
	var usable []string
	add := func(f finding) { out = append(out, f) }

	// CUDA: the driver, its devices, nvcc.
	cudaOK := false
	if be, _, err := gpu.Open("cuda"); err != nil {
		add(finding{Backend: "cuda", Name: "CUDA driver", Detail: err.Error(),
			Fix: "install the NVIDIA driver (libcuda.so.1); without a GPU, use the CPU emulator: --backend emu"})
	} else {
		n, err := be.DeviceCount()
		switch {
		case err != nil:
			add(finding{Backend: "cuda", Name: "CUDA driver", Detail: err.Error(), Fix: "check nvidia-smi; the driver may not match the kernel module"})
		case n == 0:
			add(finding{Backend: "cuda", Name: "CUDA driver", Detail: "loaded, but no GPU is visible", Fix: "check nvidia-smi and CUDA_VISIBLE_DEVICES"})
		default:
			for i := 0; i < n; i++ {
				info, err := be.Describe(i)
				if err != nil {
					add(finding{Backend: "cuda", Name: fmt.Sprintf("GPU %d", i), Detail: err.Error()})
					continue
				}
				if i == 0 {
					add(finding{Backend: "cuda", Name: "CUDA driver", Found: true, Detail: "driver API " + info.DriverVersion})
				}
				add(finding{Backend: "cuda", Name: fmt.Sprintf("GPU %d", i), Found: true, Detail: fmt.Sprintf("%s, %s, %d SMs, %s, %s",
					info.Name, info.Arch(), info.SMs, gpu.HumanBytes(info.MemoryBytes), info.PCIBusID)})
			}
			cudaOK = true
		}
	}
	nvccOK := false
	if nvcc, err := toolchain.FindNVCC(); err != nil {
		add(finding{Backend: "cuda", Name: "nvcc", Detail: "not found", Fix: "install the CUDA toolkit and put its bin/ on PATH (or set NVCC)"})
	} else if v, err := toolchain.CompilerVersion(nvcc); err != nil {
		add(finding{Backend: "cuda", Name: "nvcc", Detail: err.Error(), Fix: "reinstall the CUDA toolkit"})
	} else {
		add(finding{Backend: "cuda", Name: "nvcc", Found: true, Detail: nvcc + ": " + v})
		nvccOK = true
	}
	if cudaOK && nvccOK {
		usable = append(usable, "cuda")
	}

	// NVML (lab 01's power, clocks, PCIe and NVLink figures).
	if ret := nvml.Init(); ret != nvml.SUCCESS {
		add(finding{Backend: "cuda", Name: "NVML", Detail: nvml.ErrorString(ret), Fix: "comes with the NVIDIA driver (libnvidia-ml.so.1); lab 01 runs without it but shows no power, clock or link data"})
	} else {
		v, _ := nvml.SystemGetDriverVersion()
		add(finding{Backend: "cuda", Name: "NVML", Found: true, Detail: "driver " + v})
		nvml.Shutdown()
	}
	if name, err := dl.Probe("libcublas.so.13", "libcublas.so.12", "libcublas.so"); err != nil {
		add(finding{Backend: "cuda", Name: "cuBLAS", Detail: "not found", Fix: "install the CUDA toolkit's cuBLAS (libcublas); labs 01–03 use it as the baseline"})
	} else {
		add(finding{Backend: "cuda", Name: "cuBLAS", Found: true, Detail: name})
	}
	if name, err := dl.Probe("libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"); err != nil {
		add(finding{Name: "cuBLASLt", Detail: "not found", Fix: "comes with cuBLAS (libcublasLt, or set KERNELLABS_CUBLASLT to its path); lab 02's bf16 suites use it as the baseline"})
	} else {
		add(finding{Name: "cuBLASLt", Found: true, Detail: name})
	}
	if name, err := dl.Probe("libnccl.so.2", "libnccl.so"); err != nil {
		add(finding{Backend: "cuda", Name: "NCCL", Detail: "not found", Fix: "install NCCL (libnccl2); labs 04–05 use it as the baseline"})
	} else {
		add(finding{Backend: "cuda", Name: "NCCL", Found: true, Detail: name})
	}

	// The CPU emulator: a C++ compiler and Boost.Context.
	cxx := os.Getenv("CXX")
	if cxx == "" {
		cxx = "c++"
	}
	cxxOK := false
	if path, err := exec.LookPath(cxx); err != nil {
		add(finding{Backend: "emu", Name: "C++ compiler (emulator)", Detail: cxx + " not found", Fix: "sudo apt-get install g++ (or set CXX)"})
	} else {
		v, _ := toolchain.CompilerVersion(path)
		add(finding{Backend: "emu", Name: "C++ compiler (emulator)", Found: true, Detail: path + ": " + v})
		cxxOK = true
	}
	boostOK := false
	for _, p := range []string{"/usr/include/boost/context/fiber.hpp", "/usr/local/include/boost/context/fiber.hpp"} {
		if _, err := os.Stat(p); err == nil {
			boostOK = true
		}
	}
	if boostOK {
		add(finding{Backend: "emu", Name: "Boost.Context (emulator)", Found: true, Detail: "headers found"})
	} else {
		add(finding{Backend: "emu", Name: "Boost.Context (emulator)", Detail: "headers not found", Fix: "sudo apt-get install libboost-context-dev (make setup does it)"})
	}
	if be, _, err := gpu.Open("emu"); err == nil && cxxOK && boostOK {
		n, _ := be.DeviceCount()
		add(finding{Backend: "emu", Name: "CPU emulator", Found: true, Detail: fmt.Sprintf("%d emulated device(s)", n)})
		usable = append(usable, "emu")
	} else if err != nil {
		add(finding{Backend: "emu", Name: "CPU emulator", Detail: err.Error(), Fix: "make setup"})
	}
	return out, usable
}
