package results

import (
	"encoding/json"
	"sort"
)

// Ceiling is one measured ceiling of a device next to the figure it is compared with. A lab
// records its ceilings as top-level entries of its results file's extra data, keyed by name
// ("hbm_gbps", "fp32_tflops"); the site shows them (kl-ceilings, the device pages, rooflines) and
// the notes quote them, without knowing which lab measured them.
type Ceiling struct {
	Unit     string   `json:"unit"`               // "GB/s", "TFLOP/s", "us"
	Measured *float64 `json:"measured"`           // best successful entry; null when none ran
	Peak     *float64 `json:"peak"`               // datasheet or theoretical figure; null when none
	Ratio    *float64 `json:"ratio"`              // measured / peak
	Source   string   `json:"source"`             // where Peak comes from
	Variant  string   `json:"variant,omitempty"`  // the entry that set Measured
	Problem  string   `json:"problem,omitempty"`  //
	Note     string   `json:"note,omitempty"`     // how Measured was chosen
	Baseline *float64 `json:"baseline,omitempty"` // for hbm_gbps: memcpy's best, for the copy kernels' ratio
}

// NamedCeiling is a ceiling with its key.
type NamedCeiling struct {
	Key string
	Ceiling
}

// ceilingOrder is the order of the known ceilings; others follow by name.
var ceilingOrder = []string{"hbm_gbps", "l2_gbps", "fp32_tflops", "tf32_tflops", "bf16_tflops", "fp16_tflops",
	"launch_us", "launch_sync_us", "h2d_gbps", "d2h_gbps"}

// CeilingsIn picks the ceilings out of a results file's extra data: the entries of its
// "ceilings" object when it has one (each a Ceiling, or a bare number: the measured figure), else
// the top-level entries that are objects with both "unit" and "measured" (a Ceiling as JSON).
// They come in the order of the known ceilings and then by name; nil when there are none.
func CeilingsIn(extra map[string]any) []NamedCeiling {
	var out []NamedCeiling
	if group, ok := extra["ceilings"].(map[string]any); ok {
		for k, v := range group {
			if f, isNum := v.(float64); isNum {
				out = append(out, NamedCeiling{Key: k, Ceiling: Ceiling{Measured: &f}})
			} else if c, ok := DecodeCeiling(v); ok {
				out = append(out, NamedCeiling{Key: k, Ceiling: c})
			}
		}
	} else {
		for k, v := range extra {
			if c, ok := AsCeiling(v); ok {
				out = append(out, NamedCeiling{Key: k, Ceiling: c})
			}
		}
	}
	rank := map[string]int{}
	for i, k := range ceilingOrder {
		rank[k] = i + 1
	}
	sort.Slice(out, func(i, j int) bool {
		ri, rj := rank[out[i].Key], rank[out[j].Key]
		switch {
		case ri > 0 && rj > 0:
			return ri < rj
		case ri > 0 || rj > 0:
			return ri > 0
		}
		return out[i].Key < out[j].Key
	})
	return out
}

// AsCeiling decodes a value of the extra data as a Ceiling, when it is shaped like one.
func AsCeiling(v any) (Ceiling, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return Ceiling{}, false
	}
	_, hasUnit := m["unit"]
	_, hasMeasured := m["measured"]
	if !hasUnit || !hasMeasured {
		return Ceiling{}, false
	}
	return DecodeCeiling(m)
}

// DecodeCeiling decodes an object of the extra data (a ceiling, or a pair such as a ridge point's
// measured and peak figures) as a Ceiling.
func DecodeCeiling(v any) (Ceiling, bool) {
	if _, ok := v.(map[string]any); !ok {
		return Ceiling{}, false
	}
	data, err := json.Marshal(v)
	if err != nil {
		return Ceiling{}, false
	}
	var c Ceiling
	if err := json.Unmarshal(data, &c); err != nil {
		return Ceiling{}, false
	}
	return c, true
}

// FindCeiling returns the ceiling of key among cs, or nil.
func FindCeiling(cs []NamedCeiling, key string) *Ceiling {
	for i := range cs {
		if cs[i].Key == key {
			return &cs[i].Ceiling
		}
	}
	return nil
}

// DeviceCeilings is what a lab that measures the device derives from its entries (lab 01's
// Derive): every ceiling next to its peak, the ridge points of the roofline, and the device it
// was measured on. Its fields are top-level entries of the results file's extra data; the keys of
// the ceilings are the ones CeilingsIn finds and later labs and the notes quote.
type DeviceCeilings struct {
	Device    string     `json:"device"`
	Emulated  bool       `json:"emulated"`
	Note      string     `json:"note,omitempty"` // why the figures may mean little (an emulator)
	Datasheet *Datasheet `json:"datasheet,omitempty"`

	HBM        Ceiling `json:"hbm_gbps"`
	L2         Ceiling `json:"l2_gbps"`
	FP32       Ceiling `json:"fp32_tflops"`
	BF16       Ceiling `json:"bf16_tflops"`
	Launch     Ceiling `json:"launch_us"`
	LaunchSync Ceiling `json:"launch_sync_us"`
	H2D        Ceiling `json:"h2d_gbps"`
	D2H        Ceiling `json:"d2h_gbps"`

	// CopyVsMemcpy is the best copy kernel's bandwidth over the driver's copy at HBM sizes.
	CopyVsMemcpy *CopyRatio `json:"copy_kernel_vs_memcpy,omitempty"`
	Ridge        Ridge      `json:"ridge"`
}

// CopyRatio is one variant's figure over a baseline's, on the problem where it was best.
type CopyRatio struct {
	Ratio   float64 `json:"ratio"`
	Variant string  `json:"variant"`
	Problem string  `json:"problem"`
}

// Ridge holds the ridge points of the roofline: the arithmetic intensity (FLOPs per byte of
// memory traffic) above which a kernel can be compute-bound, for HBM and for L2 traffic.
type Ridge struct {
	BF16PerByte   RidgePoint `json:"bf16_flop_per_byte"`
	FP32PerByte   RidgePoint `json:"fp32_flop_per_byte"`
	BF16PerL2Byte RidgePoint `json:"bf16_flop_per_l2_byte"`
	FP32PerL2Byte RidgePoint `json:"fp32_flop_per_l2_byte"`
}

// RidgePoint is a ridge point from the measured ceilings and from the peaks (null when either
// figure is missing).
type RidgePoint struct {
	Measured *float64 `json:"measured"`
	Peak     *float64 `json:"peak"`
}

// RidgeOf is the ridge point of a compute ceiling (TFLOP/s) over a memory ceiling (GB/s).
func RidgeOf(flop, mem Ceiling) RidgePoint {
	ratio := func(f, m *float64) *float64 {
		if f == nil || m == nil || *m <= 0 {
			return nil
		}
		r := *f * 1e12 / (*m * 1e9)
		return &r
	}
	return RidgePoint{Measured: ratio(flop.Measured, mem.Measured), Peak: ratio(flop.Peak, mem.Peak)}
}
