package lab

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/labtest/coursedir"
	"github.com/kernel-labs/kernellabs/internal/results"
)

// A ceiling comes from lab 01's results for the same device, with where it was read; without
// them the error says what to run.
func TestMeasuredCeiling(t *testing.T) {
	root := coursedir.Root(t)
	info := gpu.DeviceInfo{Name: "NVIDIA Test GPU", Backend: "cuda"}

	_, _, err := MeasuredCeiling(info, "hbm_gbps")
	assert.ErrorContains(t, err, "no measured hbm_gbps (labrun 01")

	measured := 4000.0
	f := &results.File{Lab: "01_device_props", Device: info, Extra: map[string]any{
		"hbm_gbps": results.Ceiling{Unit: "GB/s", Measured: &measured}}}
	require.NoError(t, results.Save(results.PathFor(root, info, "01_device_props"), f))
	v, source, err := MeasuredCeiling(info, "hbm_gbps")
	require.NoError(t, err)
	assert.Equal(t, measured, v)
	assert.Equal(t, "results/nvidia-test-gpu/01_device_props.json ceiling hbm_gbps", source)
	_, _, err = MeasuredCeiling(info, "bf16_tflops")
	assert.ErrorContains(t, err, "no measured bf16_tflops")
}
