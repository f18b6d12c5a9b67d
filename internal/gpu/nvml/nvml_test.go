package nvml

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

func TestEmulatorAndOtherVendorsHaveNoNVML(t *testing.T) {
	for _, info := range []gpu.DeviceInfo{{Backend: "emu", Emulated: true}, {Backend: "hip"}} {
		got := Properties(info)
		assert.False(t, got.Available, info.Backend)
		assert.NotEmpty(t, got.Reason, info.Backend)
		assert.Nil(t, got.Device, info.Backend)
	}
}

func TestDescribeNeverFails(t *testing.T) {
	// On a machine without NVML this records why; on a GPU machine it describes device 0.
	got := Properties(gpu.DeviceInfo{Backend: "cuda", Name: "test"})
	if !got.Available {
		assert.NotEmpty(t, got.Reason)
		t.Logf("NVML unavailable here: %s", got.Reason)
		return
	}
	assert.NotEmpty(t, got.DriverVersion)
	if got.Device == nil {
		assert.NotEmpty(t, got.DeviceError)
	}
	t.Logf("NVML: %+v", got)
}
