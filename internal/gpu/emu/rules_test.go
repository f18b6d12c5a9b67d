package emu

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/gpu/backends"
)

// The emulator runs plain CUDA: no libraries, no GPU-only kernels, no architecture-specific
// targets, and with 64-lane warps no NVIDIA-only kernels, which it builds for wave64.
func TestRules(t *testing.T) {
	warp32 := gpu.DeviceInfo{Backend: "emu", Emulated: true, ComputeMajor: 8, WarpSize: 32}
	warp64 := gpu.DeviceInfo{Backend: "emu", Emulated: true, ComputeMajor: 8, WarpSize: 64}
	for _, tc := range []struct {
		name  string
		dev   gpu.DeviceInfo
		req   backends.Requirements
		want  string // a part of the reason; "" when it runs
		flags []string
	}{
		{"emu_skip", warp32, backends.Requirements{EmuSkip: "inline PTX"}, "not on the emulator: inline PTX", nil},
		{"cuBLAS", warp32, backends.Requirements{Needs: []string{"cublas"}}, "needs cuBLAS, which exists on NVIDIA GPUs only", nil},
		{"NCCL", warp32, backends.Requirements{Needs: []string{"nccl"}}, "needs NCCL, which exists on NVIDIA GPUs only", nil},
		{"a GPU", warp32, backends.Requirements{Needs: []string{"gpu"}}, "needs a GPU", nil},
		{"Hopper-only", warp32, backends.Requirements{Needs: []string{"nvidia", "sm_90a"}}, "needs sm_90a (Hopper: wgmma, TMA); this device is sm_80", nil},
		{"sm_89 or newer runs", warp32, backends.Requirements{Needs: []string{"nvidia", "sm_89"}}, "", nil},
		{"NVIDIA-only with 32 lanes", warp32, backends.Requirements{Needs: []string{"nvidia"}}, "", nil},
		{"NVIDIA-only with 64 lanes", warp64, backends.Requirements{Needs: []string{"nvidia"}}, "not run with 64-lane warps (--emu-warp 64)", []string{"-DKL_EMU_WARP_SIZE=64"}},
		{"portable with 64 lanes", warp64, backends.Requirements{}, "", []string{"-DKL_EMU_WARP_SIZE=64"}},
		{"too few devices", warp32, backends.Requirements{Devices: 4, Available: 2}, "needs 4 devices at once; the emu backend has 2 from device 0 (the emulator: --emu-devices 4)", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			why := Rules{}.SkipReason(tc.dev, tc.req)
			if tc.want == "" {
				assert.Empty(t, why)
			} else {
				assert.Contains(t, why, tc.want)
			}
			assert.Equal(t, tc.flags, Rules{}.BuildFlags(tc.dev))
		})
	}
	assert.Equal(t, "sm_80", Rules{}.Target(warp32, nil))
}

func TestRegistration(t *testing.T) {
	reg, err := backends.Lookup("emu")
	require.NoError(t, err)
	assert.Equal(t, "c++", reg.Compiler.Family())
	if b, err := reg.Open(); err == nil {
		assert.Equal(t, reg.Compiler.Family(), b.Toolchain())
	}
}
