package cuda_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/gpu/backends"
	"github.com/kernel-labs/kernellabs/internal/gpu/cuda"
	"github.com/kernel-labs/kernellabs/internal/gpu/cuda/nvcc"
)

// A GPU runs every need its compute capability covers; sm_90a only on compute 9.0.
func TestRulesOfAGPU(t *testing.T) {
	ampere := gpu.DeviceInfo{Backend: "cuda", ComputeMajor: 8, ComputeMinor: 0, WarpSize: 32}
	hopper := gpu.DeviceInfo{Backend: "cuda", ComputeMajor: 9, ComputeMinor: 0, WarpSize: 32}
	for _, tc := range []struct {
		name string
		dev  gpu.DeviceInfo
		req  backends.Requirements
		want string // a part of the reason; "" when it runs
	}{
		{"Hopper-only on Ampere", ampere, backends.Requirements{Needs: []string{"nvidia", "sm_90a"}}, "needs sm_90a (Hopper: wgmma, TMA); this device is sm_80"},
		{"newer than the device", ampere, backends.Requirements{Needs: []string{"sm_89"}}, "needs sm_89 or newer; this device is sm_80"},
		{"covered", ampere, backends.Requirements{Needs: []string{"nvidia", "sm_80", "cublas", "gpu"}}, ""},
		{"Hopper-only on Hopper", hopper, backends.Requirements{Needs: []string{"nvidia", "sm_90a", "gpu"}}, ""},
		{"emu_skip is the emulator's", hopper, backends.Requirements{EmuSkip: "inline PTX"}, ""},
		{"too few devices", hopper, backends.Requirements{Devices: 2, Available: 1}, "needs 2 devices at once; the cuda backend has 1 from device 0"},
		{"enough devices", hopper, backends.Requirements{Devices: 2, Available: 2}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			why := cuda.Rules{}.SkipReason(tc.dev, tc.req)
			if tc.want == "" {
				assert.Empty(t, why)
			} else {
				assert.Contains(t, why, tc.want)
			}
		})
	}
	if _, err := cuda.FindNCCL(); err != nil {
		assert.Contains(t, cuda.Rules{}.SkipReason(hopper, backends.Requirements{Needs: []string{"nccl"}}), "not installed here",
			"this machine has no libnccl")
	} else {
		assert.Empty(t, cuda.Rules{}.SkipReason(hopper, backends.Requirements{Needs: []string{"nccl"}}))
	}
	assert.Equal(t, "sm_90a", cuda.Rules{}.Target(hopper, []string{"nvidia", "sm_90a"}))
	assert.Equal(t, "sm_80", cuda.Rules{}.Target(ampere, []string{"nvidia", "sm_80"}))
	// Kernels on NCCL's device API need the library and nccl_device.h; the -I that finds the
	// header (where nvcc does not look anyway) is every kernel's.
	device := cuda.Rules{}.SkipReason(hopper, backends.Requirements{Needs: []string{"nvidia", cuda.NeedNCCLDevice}})
	_, libErr := cuda.FindNCCL()
	dir, hdrErr := nvcc.NCCLIncludeDir()
	switch {
	case libErr != nil:
		assert.Contains(t, device, "not installed here")
	case hdrErr != nil:
		assert.Contains(t, device, "nccl_device.h")
	default:
		assert.Empty(t, device)
	}
	flags := cuda.Rules{}.BuildFlags(hopper)
	if hdrErr != nil || dir == "/usr/include" {
		assert.Empty(t, flags)
	} else if len(flags) > 0 {
		assert.Equal(t, []string{"-I", dir}, flags)
	}
}

// The device API's headers are looked for first where NCCL_INCLUDE_DIR says, and a folder without
// them is named in the reason.
func TestNCCLIncludeDir(t *testing.T) {
	with := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(with, nvcc.NCCLDeviceHeader), []byte("// NCCL's device API\n"), 0o644))
	t.Setenv(nvcc.NCCLIncludeEnv, with)
	dir, err := nvcc.NCCLIncludeDir()
	require.NoError(t, err)
	assert.Equal(t, with, dir)
	assert.Equal(t, []string{"-I", with}, nvcc.NCCLIncludeFlags())

	if _, err := os.Stat("/usr/include/" + nvcc.NCCLDeviceHeader); err == nil {
		return // the system's headers would be found after the empty folder
	}
	without := t.TempDir()
	t.Setenv(nvcc.NCCLIncludeEnv, without)
	if dir, err := nvcc.NCCLIncludeDir(); err == nil {
		t.Skipf("NCCL's headers are installed here (%s)", dir)
	}
	_, err = nvcc.NCCLIncludeDir()
	assert.ErrorContains(t, err, without)
	assert.ErrorContains(t, err, nvcc.NCCLIncludeEnv)
}

// The backend registers its runtime, compiler and rules together, and its runtime names the
// compiler its registration builds with.
func TestRegistration(t *testing.T) {
	reg, err := backends.Lookup("cuda")
	require.NoError(t, err)
	assert.Equal(t, "nvcc", reg.Compiler.Family())
	checks, _ := reg.Doctor()
	require.NotEmpty(t, checks)
	for _, c := range checks {
		if !c.Found {
			assert.NotEmpty(t, c.Fix, "a missing %s says how to fix it", c.Name)
		}
	}
	if b, err := reg.Open(); err == nil {
		assert.Equal(t, reg.Compiler.Family(), b.Toolchain())
	}
}

// These tests need no GPU.

func TestOpenLibraryMissing(t *testing.T) {
	b, err := cuda.OpenLibrary("/nonexistent/libcuda.so.1")
	require.Error(t, err)
	assert.Nil(t, b)
	assert.ErrorIs(t, err, gpu.ErrLibraryMissing)
	msg := err.Error()
	assert.Contains(t, msg, "/nonexistent/libcuda.so.1", "the message names the library")
	assert.Contains(t, msg, "NVIDIA driver", "the message says what to install")
	assert.Contains(t, msg, "--backend emu", "the message offers the emulator")
}

func TestRegisteredAsCuda(t *testing.T) {
	assert.Contains(t, gpu.Backends(), "cuda")
}

func TestOpenThroughRegistry(t *testing.T) {
	b, _, err := gpu.Open("cuda")
	if err != nil {
		// No driver here, or no GPU: either way the error says which.
		assert.True(t, errorIsAny(err, gpu.ErrLibraryMissing, gpu.ErrNoDevice) || isCallError(err),
			"unexpected error kind: %v", err)
		return
	}
	assert.Equal(t, "cuda", b.Name())
	assert.Equal(t, "nvcc", b.Toolchain())
}
