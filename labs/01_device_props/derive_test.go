package devprops

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/results"
)

var h200 = gpu.DeviceInfo{
	Backend: "cuda", Name: "NVIDIA H200", ComputeMajor: 9, ComputeMinor: 0, SMs: 132,
	L2Bytes: 60 << 20, SMClockKHz: 1980000, MemClockKHz: 3201000, MemBusWidthBits: 6016, // as the H200 reports them
}

func hbmEntry(variant, problem string, bytes int64, gbps float64, ok bool) lab.EntryView {
	return lab.EntryView{Suite: SuiteHBM, Variant: variant, Problem: problem, Params: map[string]int64{"bytes": bytes}, OK: ok, GBps: gbps}
}

func syntheticEntries() []lab.EntryView {
	return []lab.EntryView{
		hbmEntry("memcpy_dtod", "1 GiB", 1<<30, 4000, true),
		hbmEntry("memcpy_dtod", "4 GiB", 4<<30, 4100, true),
		hbmEntry("copy_f4_x4", "1 GiB", 1<<30, 3950, true),
		hbmEntry("copy_f4_x4", "2 GiB", 2<<30, 4050, true),
		hbmEntry("copy_f32", "4 GiB", 4<<30, 9999, false), // failed entries never count
		hbmEntry("copy_f4_x4", "16 MiB", 16<<20, 9000, true),
		hbmEntry("copy_f4_x4", "48 MiB", 48<<20, 8000, true),
		hbmEntry("copy_f4_x4", "96 MiB", 96<<20, 9500, true), // above L2: not an L2 figure
		hbmEntry("copy_f4_x4", "256 MiB", 256<<20, 4200, true),
		// L2 comes from the multi-pass read, never from a copy (above: 9000 at 16 MiB) nor from
		// the read repeated launch after launch, nor from a buffer larger than L2.
		{Suite: SuiteL2, Variant: VariantL2Read, Problem: "24 MiB", Params: map[string]int64{"bytes": 24 << 20}, OK: true, GBps: 7800},
		{Suite: SuiteL2, Variant: VariantL2Read, Problem: "128 MiB", Params: map[string]int64{"bytes": 128 << 20}, OK: true, GBps: 9900},
		{Suite: SuiteL2, Variant: "l2_read_launches", Problem: "16 MiB", Params: map[string]int64{"bytes": 16 << 20}, OK: true, GBps: 9800},
		{Suite: SuiteFMA, Variant: "fma_chains8", Problem: "2048", OK: true, TFLOPs: 62},
		{Suite: SuiteFMA, Variant: "fma_chains1", Problem: "128", OK: true, TFLOPs: 15},
		{Suite: SuiteTensor, Variant: VariantCublasBF16, Problem: "8192", OK: true, TFLOPs: 700},
		{Suite: SuiteLaunch, Variant: VariantLaunch, Problem: "1 block", OK: true, PerOpUs: 2.5},
		{Suite: SuiteLaunch, Variant: VariantLaunch, Problem: "1 block per SM", OK: true, PerOpUs: 3.0},
		{Suite: SuiteLaunch, Variant: VariantLaunchSync, Problem: "1 block", OK: true, PerOpUs: 9},
		{Suite: SuiteHostLink, Variant: VariantH2DPinned, Problem: "1 GiB", OK: true, GBps: 52},
		{Suite: SuiteHostLink, Variant: "h2d_pageable", Problem: "1 GiB", OK: true, GBps: 60}, // pageable is not the pinned ceiling
		{Suite: SuiteHostLink, Variant: VariantD2HPinned, Problem: "1 GiB", OK: true, GBps: 48},
	}
}

func TestSummarizeH200(t *testing.T) {
	out := Ceilings(h200, syntheticEntries())

	c := out.HBM
	require.NotNil(t, c.Measured)
	assert.Equal(t, 4100.0, *c.Measured)
	assert.Equal(t, "memcpy_dtod", c.Variant)
	assert.Equal(t, "4 GiB", c.Problem)
	assert.Equal(t, 4800.0, *c.Peak)
	assert.InDelta(t, 4100.0/4800, *c.Ratio, 1e-12)
	assert.Contains(t, c.Source, "H200")
	assert.Equal(t, 4100.0, *c.Baseline)
	require.NotNil(t, out.CopyVsMemcpy)
	assert.InDelta(t, 4050.0/4100, out.CopyVsMemcpy.Ratio, 1e-12)
	assert.Equal(t, "copy_f4_x4", out.CopyVsMemcpy.Variant)

	c = out.L2
	require.NotNil(t, c.Measured)
	assert.Equal(t, 7800.0, *c.Measured)
	assert.Equal(t, "24 MiB", c.Problem)
	assert.Equal(t, VariantL2Read, c.Variant)
	assert.Nil(t, c.Peak)
	assert.Nil(t, c.Ratio)

	c = out.FP32
	assert.Equal(t, 62.0, *c.Measured)
	assert.InDelta(t, 62.0/67, *c.Ratio, 1e-12)

	c = out.BF16
	assert.InDelta(t, 700.0/989, *c.Ratio, 1e-12)

	c = out.Launch
	assert.Equal(t, 2.5, *c.Measured, "the lowest time wins")
	assert.Nil(t, c.Ratio)
	assert.Equal(t, 9.0, *out.LaunchSync.Measured)

	c = out.H2D
	assert.Equal(t, 52.0, *c.Measured)
	assert.InDelta(t, 52.0/64, *c.Ratio, 1e-12)
	assert.Equal(t, 48.0, *out.D2H.Measured)

	ridge := out.Ridge.BF16PerByte
	assert.InDelta(t, 989e12/4.8e12, *ridge.Peak, 1e-9)
	assert.InDelta(t, 700e12/4100e9, *ridge.Measured, 1e-9)
	assert.Nil(t, out.Ridge.BF16PerL2Byte.Peak, "L2 has no published peak")

	// Summarize's map is what results files hold: the ceilings under their stable keys, where
	// results.CeilingsIn finds them again, and the record reads back whole.
	extra, err := Lab{}.Derive(h200, syntheticEntries())
	require.NoError(t, err)
	keys := []string{}
	for _, c := range results.CeilingsIn(extra) {
		keys = append(keys, c.Key)
	}
	assert.Equal(t, []string{"hbm_gbps", "l2_gbps", "fp32_tflops", "bf16_tflops", "launch_us", "launch_sync_us", "h2d_gbps", "d2h_gbps"}, keys)
	var back results.DeviceCeilings
	data, err := json.Marshal(extra)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &back))
	assert.Equal(t, out, back)
}

func TestSummarizeFromClocksWithoutDatasheet(t *testing.T) {
	// An A100 40GB: no datasheet entry here, so the peaks come from its clocks.
	a100 := gpu.DeviceInfo{Name: "NVIDIA A100-SXM4-40GB", ComputeMajor: 8, ComputeMinor: 0, SMs: 108,
		L2Bytes: 40 << 20, SMClockKHz: 1410000, MemClockKHz: 1215000, MemBusWidthBits: 5120}
	out := Ceilings(a100, syntheticEntries())
	assert.Nil(t, out.Datasheet)

	c := out.HBM
	assert.InDelta(t, 1555.2, *c.Peak, 0.01) // 2 × 1215 MHz × 640 B
	assert.Contains(t, c.Source, "theoretical from clocks")
	c = out.FP32
	assert.InDelta(t, 19.49, *c.Peak, 0.01) // 108 × 64 × 2 × 1.41 GHz
	assert.Contains(t, c.Source, "theoretical from clocks")
	c = out.BF16
	assert.InDelta(t, 311.9, *c.Peak, 0.1) // 108 × 2048 × 1.41 GHz
	c = out.H2D
	assert.Nil(t, c.Peak)
	assert.Equal(t, 52.0, *c.Measured)
	// 24 MiB fits in 40 MiB of L2; 128 MiB does not, and the launch-bound variant never counts.
	assert.Equal(t, "24 MiB", out.L2.Problem)
	assert.Equal(t, 7800.0, *out.L2.Measured)
}

func TestSummarizeWithNothing(t *testing.T) {
	out := Ceilings(gpu.DeviceInfo{Name: "CPU emulator", Emulated: true}, nil)
	c := out.HBM
	assert.Nil(t, c.Measured)
	assert.Nil(t, c.Peak)
	assert.Equal(t, sourceNoneForThis, c.Source)
	assert.Contains(t, out.Note, "emulated")
	assert.Nil(t, out.CopyVsMemcpy)
}

func TestSummarizeReadsSizesFromProblemNames(t *testing.T) {
	e := hbmEntry("copy_f4", "2 GiB", 0, 3000, true)
	e.Params = nil
	assert.Equal(t, 3000.0, *Ceilings(h200, []lab.EntryView{e}).HBM.Measured)
}

func TestDatasheetLookup(t *testing.T) {
	for _, tc := range []struct {
		name    string
		product string
	}{
		{"NVIDIA H200", "H200 SXM"},
		{"NVIDIA H100 80GB HBM3", "H100 SXM"},
		{"NVIDIA H100 SXM5 80GB", "H100 SXM"},
		{"NVIDIA H200 NVL", ""},
		{"NVIDIA H100 PCIe", ""},
		{"NVIDIA H100 NVL", ""},
		{"NVIDIA A100-SXM4-80GB", ""},
		{"CPU emulator", ""},
	} {
		ds := peaks(gpu.DeviceInfo{Name: tc.name}).Datasheet
		assert.Equal(t, tc.product != "", ds != nil, tc.name)
		if ds != nil {
			assert.Equal(t, tc.product, ds.Product, tc.name)
		}
	}
	ds := peaks(h200).Datasheet
	require.NotNil(t, ds)
	assert.Equal(t, 4800.0, ds.HBMGBps)
	assert.Equal(t, 67.0, ds.FP32TFLOPs)
	assert.Equal(t, 989.0, ds.BF16TFLOPs)
	assert.Equal(t, 64.0, ds.HostLinkGBps)
	assert.NotEmpty(t, ds.Source)
}

func TestPeaksFromClocksOfTheH200(t *testing.T) {
	// The clock-derived FP32 figure agrees with the datasheet's 67 TFLOP/s.
	p := peaks(h200)
	require.NotNil(t, p.FP32TFLOPsFromClocks)
	assert.InDelta(t, 66.9, *p.FP32TFLOPsFromClocks, 0.1)
	require.NotNil(t, p.HBMGBpsFromClocks)
	assert.InDelta(t, 4815, *p.HBMGBpsFromClocks, 1) // 2 × 3201 MHz × 752 B ≈ the datasheet's 4.8 TB/s
	require.NotNil(t, p.BF16TFLOPsFromClocks)
	assert.InDelta(t, 1070.5, *p.BF16TFLOPsFromClocks, 0.1) // 132 × 4096 × 1.98 GHz
	assert.Nil(t, peaks(gpu.DeviceInfo{ComputeMajor: 1, SMs: 1, SMClockKHz: 1}).FP32TFLOPsFromClocks,
		"unknown architectures have no lane count")
	assert.Nil(t, peaks(gpu.DeviceInfo{MemClockKHz: 1}).HBMGBpsFromClocks, "no bus width, no memory figure")
}
