package nvml

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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

// TestPowerWatch: no watch for the emulator or another vendor, and a nil watch reads nothing; on
// a GPU machine a span of sleep reads a share between 0 and 1 and the SM clock.
func TestPowerWatch(t *testing.T) {
	for _, info := range []gpu.DeviceInfo{{Backend: "emu", Emulated: true}, {Backend: "hip"}} {
		assert.Nil(t, NewPowerWatch(info), info.Backend)
	}
	var none *PowerWatch
	_, ok := none.Since(none.Mark())
	assert.False(t, ok)
	none.Close()

	w := NewPowerWatch(gpu.DeviceInfo{Backend: "cuda", Name: "test"})
	if w == nil {
		// KERNELLABS_REQUIRE_GPU=1 (scripts/gpu-sweep.sh) makes a machine without it a failure.
		require.NotEqual(t, "1", os.Getenv("KERNELLABS_REQUIRE_GPU"), "NVML cannot see device 0 on a machine that should have a GPU")
		t.Log("NVML cannot see a device here")
		return
	}
	defer w.Close()
	m := w.Mark()
	time.Sleep(20 * time.Millisecond)
	span, ok := w.Since(m)
	require.True(t, ok)
	assert.GreaterOrEqual(t, span.CappedShare, 0.0)
	assert.LessOrEqual(t, span.CappedShare, 1.0)
	assert.Positive(t, span.SMClockMHz)
}
