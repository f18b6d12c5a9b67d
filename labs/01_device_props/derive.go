package devprops

import (
	"cmp"
	"slices"
	"strings"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/gpu/nvml"
	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/results"
)

// Variant names that Derive reads (lab.yaml).
const (
	VariantMemcpyDtoD = "memcpy_dtod"
	VariantL2Read     = "l2_read"
	VariantLaunch     = "empty_launch"
	VariantLaunchSync = "empty_launch_sync"
	VariantH2DPinned  = "h2d_pinned"
	VariantD2HPinned  = "d2h_pinned"
)

const (
	hbmMinBytes       = 1 << 30 // "HBM bandwidth" is read at working sets of 1 GiB and more
	fallbackL2Bytes   = 4 << 20 // when the device does not report its L2 size
	sourceNoPeak      = "no published peak"
	sourceNoneForThis = "no datasheet entry for this device and no figure from its clocks"
)

// datasheet is a product's published figures and how to recognise it by its CUDA device name.
type datasheet struct {
	results.Datasheet
	match func(name string) bool
}

// datasheets are the products with published figures (peaks takes the first match). Both
// datasheets quote BF16 with sparsity (1,979 TFLOPS; dense is half) and PCIe Gen5 as 128 GB/s,
// both directions together.
var datasheets = []datasheet{
	{results.Datasheet{Product: "H200 SXM", Source: "NVIDIA H200 Tensor Core GPU datasheet, H200 SXM column",
		HBMGBps: 4800, FP32TFLOPs: 67, BF16TFLOPs: 989, HostLinkGBps: 64, HostLink: "PCIe Gen5 x16"},
		func(n string) bool { return strings.Contains(n, "H200") && !strings.Contains(n, "NVL") },
	},
	// CUDA names the SXM part "NVIDIA H100 80GB HBM3".
	{results.Datasheet{Product: "H100 SXM", Source: "NVIDIA H100 Tensor Core GPU datasheet, H100 SXM column",
		HBMGBps: 3350, FP32TFLOPs: 67, BF16TFLOPs: 989, HostLinkGBps: 64, HostLink: "PCIe Gen5 x16"},
		func(n string) bool {
			return strings.Contains(n, "H100") && (strings.Contains(n, "SXM") || strings.Contains(n, "HBM3")) &&
				!strings.Contains(n, "PCIe") && !strings.Contains(n, "NVL")
		},
	},
}

// fp32LanesPerSM is the number of FP32 FMA units per SM by compute capability (CUDA C
// Programming Guide, "Arithmetic Instructions": 32-bit floating-point multiply-add results per
// clock cycle per multiprocessor).
var fp32LanesPerSM = map[[2]int]int{
	{6, 0}: 64, {6, 1}: 128, {6, 2}: 128, {7, 0}: 64, {7, 2}: 64, {7, 5}: 64, {8, 0}: 64,
	{8, 6}: 128, {8, 7}: 128, {8, 9}: 128, {9, 0}: 128, {10, 0}: 128, {12, 0}: 128,
}

// bf16FLOPsPerClockPerSM is the dense BF16 tensor-core rate of the data centre architectures
// whose rate is uniform across products: A100 (312 TFLOPS = 108 SMs × 1410 MHz × 2048) and H100
// (989 TFLOPS = 132 SMs × 1830 MHz × 4096). Consumer parts of the same compute capability differ.
var bf16FLOPsPerClockPerSM = map[[2]int]int{{8, 0}: 2048, {9, 0}: 4096}

// Derive records Ceilings (results.DeviceCeilings: later labs, the site and the notes read them).
func (Lab) Derive(info gpu.DeviceInfo, entries []lab.EntryView) (map[string]any, error) {
	return results.ExtraOf(Ceilings(info, entries))
}

// Ceilings picks every ceiling's best entry and the peak it is compared with.
func Ceilings(info gpu.DeviceInfo, entries []lab.EntryView) results.DeviceCeilings {
	pk := peaks(info)
	out := results.DeviceCeilings{Device: info.Name, Emulated: info.Emulated, Datasheet: pk.Datasheet}
	if info.Emulated {
		out.Note = "emulated device: these figures are not performance figures"
	}
	ds := cmp.Or(pk.Datasheet, &results.Datasheet{}) // zero figures when there is no datasheet
	peakFor := func(dsVal float64, clocks *float64, clocksHow string) (*float64, string) {
		if dsVal > 0 {
			return new(dsVal), "datasheet: " + ds.Source
		}
		if clocks != nil {
			return clocks, "theoretical from clocks: " + clocksHow
		}
		return nil, sourceNoneForThis
	}
	hbmPeak, hbmSrc := peakFor(ds.HBMGBps, pk.HBMGBpsFromClocks, "2 × memory clock × bus width / 8")
	fp32Peak, fp32Src := peakFor(ds.FP32TFLOPs, pk.FP32TFLOPsFromClocks, "SMs × FP32 lanes per SM × 2 × SM clock")
	bf16Peak, bf16Src := peakFor(ds.BF16TFLOPs, pk.BF16TFLOPsFromClocks, "SMs × dense BF16 FLOPs per clock per SM × SM clock")
	linkPeak, linkSrc := (*float64)(nil), sourceNoneForThis+" (see NVML's PCIe generation and width)"
	if ds.HostLinkGBps > 0 {
		linkPeak, linkSrc = new(ds.HostLinkGBps), "datasheet: "+ds.Source+" ("+ds.HostLink+", per direction)"
	}
	l2Limit, l2Size := info.L2Bytes, "the L2 size ("+gpu.HumanBytes(info.L2Bytes)+")"
	if l2Limit <= 0 {
		l2Limit, l2Size = fallbackL2Bytes, gpu.HumanBytes(fallbackL2Bytes)+" (the device reports no L2 size)"
	}
	// HBM is read from copies whose working set is far larger than L2, L2 from the in-kernel
	// multi-pass read of a buffer that fits in it (a copy of such a buffer, repeated launch after
	// launch, measures the launch rate instead: see l2_read_launches).
	atHBM := func(e lab.EntryView) bool { return problemBytes(e) >= hbmMinBytes }
	inL2 := func(e lab.EntryView) bool { b := problemBytes(e); return b > 0 && b <= l2Limit }
	for _, c := range []struct {
		dst                  *results.Ceiling
		suite, variant, unit string // variant "": every variant of the suite
		keep                 func(lab.EntryView) bool
		peak                 *float64
		source, note         string
	}{
		{&out.HBM, SuiteHBM, "", "GB/s", atHBM, hbmPeak, hbmSrc, "best copy (bytes read + written) at working sets ≥ 1 GiB"},
		{&out.L2, SuiteL2, VariantL2Read, "GB/s", inL2, nil, sourceNoPeak + " (NVIDIA does not publish L2 bandwidth); compare with hbm_gbps",
			"best read of a buffer ≤ " + l2Size + ", every pass in one launch (bytes read)"},
		{&out.FP32, SuiteFMA, "", "TFLOP/s", nil, fp32Peak, fp32Src, "best FMA-chain kernel"},
		{&out.BF16, SuiteTensor, "", "TFLOP/s", nil, bf16Peak, bf16Src, "best cuBLAS bf16 GEMM (dense)"},
		{&out.Launch, SuiteLaunch, VariantLaunch, "us", nil, nil, sourceNoPeak, "time per launch, launches back to back (lower is better)"},
		{&out.LaunchSync, SuiteLaunch, VariantLaunchSync, "us", nil, nil, sourceNoPeak,
			"launch, run and wait for completion, per launch (lower is better)"},
		{&out.H2D, SuiteHostLink, VariantH2DPinned, "GB/s", nil, linkPeak, linkSrc, "best pinned host-to-device copy"},
		{&out.D2H, SuiteHostLink, VariantD2HPinned, "GB/s", nil, linkPeak, linkSrc, "best pinned device-to-host copy"},
	} {
		*c.dst = best(entries, c.suite, c.variant, c.unit, c.keep)
		c.dst.Peak, c.dst.Source, c.dst.Note = c.peak, c.source, c.note
		if c.dst.Measured != nil && c.peak != nil && *c.peak > 0 {
			c.dst.Ratio = new(*c.dst.Measured / *c.peak)
		}
	}
	if mc := best(entries, SuiteHBM, VariantMemcpyDtoD, "GB/s", atHBM); mc.Measured != nil {
		out.HBM.Baseline = mc.Measured
		notMemcpy := func(e lab.EntryView) bool { return e.Variant != VariantMemcpyDtoD && atHBM(e) }
		if k := best(entries, SuiteHBM, "", "GB/s", notMemcpy); k.Measured != nil {
			out.CopyVsMemcpy = &results.CopyRatio{Ratio: *k.Measured / *mc.Measured, Variant: k.Variant, Problem: k.Problem}
		}
	}
	out.Ridge = results.Ridge{
		BF16PerByte: results.RidgeOf(out.BF16, out.HBM), FP32PerByte: results.RidgeOf(out.FP32, out.HBM),
		BF16PerL2Byte: results.RidgeOf(out.BF16, out.L2), FP32PerL2Byte: results.RidgeOf(out.FP32, out.L2),
	}
	return out
}

// best is the ceiling measured by the best successful entry of a suite (of one variant when
// variant != "") that passes keep, in unit: GB/s or TFLOP/s, where higher is better, or us (a
// time per op), where lower is. Its Measured is nil when there is none.
func best(entries []lab.EntryView, suite, variant, unit string, keep func(lab.EntryView) bool) results.Ceiling {
	c := results.Ceiling{Unit: unit}
	for _, e := range entries {
		v, sign := e.GBps, 1.0
		switch unit {
		case "TFLOP/s":
			v = e.TFLOPs
		case "us":
			v, sign = e.PerOpUs, -1
		}
		if e.OK && e.Suite == suite && (variant == "" || e.Variant == variant) && (keep == nil || keep(e)) && v > 0 &&
			(c.Measured == nil || v*sign > *c.Measured*sign) {
			c.Measured, c.Variant, c.Problem = new(v), e.Variant, e.Problem
		}
	}
	return c
}

// problemBytes is the working set of an hbm_bandwidth entry: its `bytes` parameter, or its
// problem name read as a size ("1 GiB") when the parameters are not recorded.
func problemBytes(e lab.EntryView) int64 {
	if b, ok := e.Params["bytes"]; ok {
		return b
	}
	b, _ := lab.ParseSize(e.Problem) // 0 if it is not a size
	return b
}

// RecordDevice records what the device says about itself, for the chapter's property tables
// (results.DeviceProperties): its identity and limits, every attribute the backend reads, the
// memory free now, the peak figures the ceilings are compared with, and what NVML adds.
func (Lab) RecordDevice(env *lab.Env) (map[string]any, error) {
	info := env.Device.Info()
	p := results.DeviceProperties{Info: info, Peaks: peaks(info), NVML: nvml.Properties(info)}
	var err error
	if p.Attributes, err = env.Device.Attributes(); err != nil {
		p.Attributes, p.AttributesError = nil, err.Error()
	}
	if free, total, err := env.Device.MemInfo(); err != nil {
		p.MemoryError = err.Error()
	} else {
		p.Memory = &results.MemoryNow{FreeBytes: free, TotalBytes: total}
	}
	return results.ExtraOf(p)
}

// peaks lists every peak figure Derive may compare with (the property page shows them all): the
// product's datasheet (the first that matches the CUDA device name) and the theoretical figures
// from the clocks, where they are known.
func peaks(info gpu.DeviceInfo) results.Peaks {
	var p results.Peaks
	if i := slices.IndexFunc(datasheets, func(d datasheet) bool { return d.match(info.Name) }); i >= 0 {
		p.Datasheet = new(datasheets[i].Datasheet) // a copy: the table stays as it is
	}
	// Memory: two transfers per clock (double data rate) × bus width in bytes.
	if info.MemClockKHz > 0 && info.MemBusWidthBits > 0 {
		p.HBMGBpsFromClocks = new(2 * float64(info.MemClockKHz) * 1e3 * float64(info.MemBusWidthBits) / 8 / 1e9)
	}
	// FP32: 2 FLOPs per FMA on every lane at the (boost) SM clock. Datasheets often quote tensor
	// rates at a lower clock than the boost clock, so the BF16 figure can exceed them.
	p.FP32TFLOPsFromClocks = fromClocks(info, fp32LanesPerSM, 2)
	p.BF16TFLOPsFromClocks = fromClocks(info, bf16FLOPsPerClockPerSM, 1)
	return p
}

// fromClocks is SMs × perSM[compute capability] × flopsEach × the SM clock in TFLOP/s, or nil where
// one of them is not known.
func fromClocks(info gpu.DeviceInfo, perSM map[[2]int]int, flopsEach float64) *float64 {
	per, ok := perSM[[2]int{info.ComputeMajor, info.ComputeMinor}]
	if !ok || info.SMs <= 0 || info.SMClockKHz <= 0 {
		return nil
	}
	return new(float64(info.SMs) * float64(per) * flopsEach * float64(info.SMClockKHz) * 1e3 / 1e12)
}
