package gemm

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/labtest/coursedir"
	"github.com/kernel-labs/kernellabs/internal/results"
)

// The weight-read floor covers the skinny bf16 products whose B does not fit in L2: B's bytes at
// lab 01's HBM bandwidth, each ok variant's time over it; nothing on the emulator.
func TestDeriveRecordsTheWeightReadFloor(t *testing.T) {
	root := coursedir.Root(t)
	info := gpu.DeviceInfo{Name: "NVIDIA Test GPU", Backend: "cuda", L2Bytes: 50 << 20}
	measured := 4000.0
	require.NoError(t, results.Save(results.PathFor(root, info, "01_device_props"), &results.File{Lab: "01_device_props",
		Device: info, Extra: map[string]any{"hbm_gbps": results.Ceiling{Unit: "GB/s", Measured: &measured}}}))
	decode := map[string]int64{"m": 16, "n": 8192, "k": 8192}
	entries := []lab.EntryView{
		{Suite: "bf16_decode", Variant: "splitk", Problem: "16×8192×8192", Params: decode, OK: true, PerOpUs: 40},
		{Suite: "bf16_decode", Variant: "gemv", Problem: "16×8192×8192", Params: decode, OK: false, PerOpUs: 1},
		{Suite: "bf16", Variant: "wgmma_bf16", Problem: "4096³", Params: map[string]int64{"m": 4096, "n": 4096, "k": 4096}, OK: true, PerOpUs: 180},
		{Suite: "bf16", Variant: "wgmma_bf16", Problem: "16×1024×1024", Params: map[string]int64{"m": 16, "n": 1024, "k": 1024}, OK: true, PerOpUs: 5},
		{Suite: "fp32", Variant: "naive", Problem: "16×8192×8192", Params: decode, OK: true, PerOpUs: 900},
	}
	extra, err := Lab{}.Derive(info, entries)
	require.NoError(t, err)
	fl, ok := extra[lab.ReadFloorKey].(lab.ReadFloors)
	require.True(t, ok, "%T", extra[lab.ReadFloorKey])
	require.Len(t, fl.Suites, 1, "the bf16 suites' skinny products with a B larger than L2 only")
	f := fl.Suites["bf16_decode"]["16×8192×8192"]
	require.NotNil(t, f)
	assert.Equal(t, float64(2*8192*8192), f.WeightBytes)
	assert.InDelta(t, 2*8192*8192/4000.0/1e3, f.Us, 1e-9)
	assert.Equal(t, map[string]float64{"splitk": 40 / f.Us}, f.OverFloor, "a failed entry has no ratio")

	extra, err = Lab{}.Derive(gpu.DeviceInfo{Name: "emu", Emulated: true}, entries)
	require.NoError(t, err)
	assert.Nil(t, extra)
}
