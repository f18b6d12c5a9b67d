package nvcc

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// NCCL's device API (NCCL ≥ 2.28) is a header library: kernels that include nccl_device.h
// (ncclDevComm, windows, LSA pointers and barriers) compile only against NCCL's own headers, which
// are not part of the CUDA toolkit. They come with the libnccl-dev package (/usr/include), with a
// tarball or source build ($NCCL_HOME/include), or with pip's nvidia-nccl-cu12/cu13 wheels
// (site-packages/nvidia/nccl/include).

// NCCLDeviceHeader is the device API's header.
const NCCLDeviceHeader = "nccl_device.h"

// NCCLIncludeEnv names an environment variable holding the folder of nccl_device.h, looked at
// before any other place.
const NCCLIncludeEnv = "NCCL_INCLUDE_DIR"

// ncclHeaderDirs lists where nccl_device.h is looked for, in order.
func ncclHeaderDirs() []string {
	var dirs []string
	if d := os.Getenv(NCCLIncludeEnv); d != "" {
		dirs = append(dirs, d)
	}
	if root := os.Getenv("NCCL_HOME"); root != "" {
		dirs = append(dirs, filepath.Join(root, "include"))
	}
	// Beside the library the CUDA backend was told to load (KERNELLABS_NCCL=/x/lib/libnccl.so.2).
	if lib := os.Getenv("KERNELLABS_NCCL"); lib != "" {
		dirs = append(dirs, filepath.Join(filepath.Dir(filepath.Dir(lib)), "include"))
	}
	for _, env := range []string{"CUDA_HOME", "CUDA_PATH", "CONDA_PREFIX"} {
		if root := os.Getenv(env); root != "" {
			dirs = append(dirs, filepath.Join(root, "include"))
		}
	}
	if nvcc, err := Find(); err == nil {
		dirs = append(dirs, filepath.Join(filepath.Dir(filepath.Dir(nvcc)), "include"))
	}
	dirs = append(dirs, "/usr/local/cuda/include", "/usr/local/nccl/include", "/usr/include")
	// pip's wheels, in a virtual environment, the user's site or the system's.
	var sites []string
	if v := os.Getenv("VIRTUAL_ENV"); v != "" {
		sites = append(sites, filepath.Join(v, "lib", "python3*", "site-packages"))
	}
	if home, err := os.UserHomeDir(); err == nil {
		sites = append(sites, filepath.Join(home, ".local", "lib", "python3*", "site-packages"))
	}
	sites = append(sites, "/usr/local/lib/python3*/dist-packages", "/usr/local/lib/python3*/site-packages",
		"/usr/lib/python3*/dist-packages", "/usr/lib/python3/dist-packages")
	for _, s := range sites {
		found, _ := filepath.Glob(filepath.Join(s, "nvidia", "nccl", "include"))
		dirs = append(dirs, found...)
	}
	return dirs
}

// NCCLIncludeDir finds the folder that holds nccl_device.h, or says where it looked and how to
// get it.
func NCCLIncludeDir() (string, error) {
	dirs := ncclHeaderDirs()
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, NCCLDeviceHeader)); err == nil {
			return d, nil
		}
	}
	return "", fmt.Errorf("no %s (the headers of NCCL 2.28's device API) in %s: install NCCL's development headers "+
		"(the libnccl-dev package, or pip's nvidia-nccl-cu12) or set %s to their folder",
		NCCLDeviceHeader, strings.Join(dirs, ", "), NCCLIncludeEnv)
}

// NCCLIncludeFlags are the nvcc flags that make nccl_device.h includable: -I and the folder when
// it is not one nvcc searches anyway (/usr/include, the toolkit's include folder); none when the
// headers are not installed (kernels that need them are skipped: see Rules).
func NCCLIncludeFlags() []string {
	d, err := NCCLIncludeDir()
	if err != nil || filepath.Clean(d) == "/usr/include" {
		return nil
	}
	if nvcc, err := Find(); err == nil && filepath.Clean(d) == filepath.Join(filepath.Dir(filepath.Dir(nvcc)), "include") {
		return nil
	}
	return []string{"-I", d}
}
