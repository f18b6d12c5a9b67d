package grouped_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/results"
	grouped "github.com/kernel-labs/kernellabs/labs/03_grouped_gemm"
)

// The floor counts the weights of the experts with rows only, and each ok variant's time over it.
func TestFloorsOf(t *testing.T) {
	oneToken := map[string]int64{"experts": 8, "tokens": 2, "empty": 6, "n": 1024, "k": 512}
	explicit := map[string]int64{"g": 3, "m0": 0, "m1": 4, "m2": 1, "n": 256, "k": 128}
	entries := []lab.EntryView{
		{Suite: "bf16_decode", Variant: "decode_stream", Problem: "one token", Params: oneToken, OK: true, PerOpUs: 2.5},
		{Suite: "bf16_decode", Variant: "wgmma_moe", Problem: "one token", Params: oneToken, OK: true, PerOpUs: 5},
		{Suite: "bf16_decode", Variant: "broken", Problem: "one token", Params: oneToken, OK: false, PerOpUs: 1},
		{Suite: "bf16_moe", Variant: "decode_stream", Problem: "explicit", Params: explicit, OK: true, PerOpUs: 1},
		{Suite: "fp32", Variant: "persistent", Problem: "explicit", Params: explicit, OK: true, PerOpUs: 1},
	}
	fl := grouped.FloorsOf(entries, 2000) // 2000 GB/s: 2000 bytes a nanosecond
	require.Len(t, fl.Suites, 2, "bf16 suites only")
	f := fl.Suites["bf16_decode"]["one token"]
	require.NotNil(t, f)
	assert.Equal(t, 2, f.Experts)
	assert.Equal(t, float64(2*2*512*1024), f.WeightBytes)
	assert.InDelta(t, f.WeightBytes/2000/1e3, f.Us, 1e-9)
	assert.Equal(t, map[string]float64{"decode_stream": 2.5 / f.Us, "wgmma_moe": 5 / f.Us}, f.OverFloor, "failed entries have no ratio")
	g := fl.Suites["bf16_moe"]["explicit"]
	require.NotNil(t, g)
	assert.Equal(t, 2, g.Experts, "the empty group's weights are not read")
	assert.Equal(t, float64(2*2*128*256), g.WeightBytes)
}

// Derive divides by the HBM bandwidth that lab 01 recorded for the same device, says where it
// read it, records nothing on the emulator, and says what to run when lab 01 has no results.
func TestDeriveReadsLab01(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "labs", "common"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "labs", "common", "kl.cuh"), nil, 0o644))
	t.Setenv("LABRUN_ROOT", root)
	gpuInfo := gpu.DeviceInfo{Name: "NVIDIA Test GPU", Backend: "cuda"}
	entries := []lab.EntryView{{Suite: "bf16_decode", Variant: "decode_stream", Problem: "p", OK: true, PerOpUs: 10,
		Params: map[string]int64{"experts": 4, "tokens": 1, "empty": 3, "n": 1000, "k": 1000}}}

	_, err := grouped.Lab{}.Derive(gpuInfo, entries)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "labrun 01")

	measured := 4000.0
	f := &results.File{Lab: "01_device_props", Device: gpuInfo, Extra: map[string]any{
		"hbm_gbps": results.Ceiling{Unit: "GB/s", Measured: &measured}}}
	require.NoError(t, results.Save(results.PathFor(root, gpuInfo, "01_device_props"), f))
	extra, err := grouped.Lab{}.Derive(gpuInfo, entries)
	require.NoError(t, err)
	fl, ok := extra[grouped.FloorKey].(grouped.Floors)
	require.True(t, ok, "%T", extra[grouped.FloorKey])
	assert.Equal(t, measured, fl.HBMGBps)
	assert.Equal(t, "results/nvidia-test-gpu/01_device_props.json ceiling hbm_gbps", fl.Source)
	p := fl.Suites["bf16_decode"]["p"]
	require.NotNil(t, p)
	assert.InDelta(t, 2e6/4000/1e3, p.Us, 1e-12, "one expert's 1000×1000 bf16 weights at 4000 GB/s")
	assert.InDelta(t, 10/p.Us, p.OverFloor["decode_stream"], 1e-9)

	extra, err = grouped.Lab{}.Derive(gpu.DeviceInfo{Name: "emu", Emulated: true}, entries)
	assert.NoError(t, err)
	assert.Nil(t, extra, "no floor on the emulator")
}
