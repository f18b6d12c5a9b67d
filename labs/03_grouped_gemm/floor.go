package grouped

import (
	"fmt"
	"strings"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/lab"
)

// The weight-read floor. At decode a MoE layer does a few flops per byte of weights, so no kernel
// can be faster than reading, once, the weights of every expert that got a row: Σ 2·K·N bytes
// (bf16) over the non-empty groups, at the HBM bandwidth lab 01 measured on the same device
// (results/<device>/01_device_props.json, ceiling hbm_gbps). Derive records it per problem of the
// run's bf16 suites, with each variant's time over it, under the key FloorKey of the results'
// extra data. Not on the emulator, whose times and bandwidth are no performance figures.

// FloorKey is the key of the floors in the extra data of results/<device>/03_grouped_gemm.json.
const FloorKey = "weight_read_floor"

// Floors is what Derive records: the bandwidth divided by, where it was read, and the floors.
type Floors struct {
	HBMGBps float64                      `json:"hbm_gbps"`
	Source  string                       `json:"source"` // the file and ceiling of HBMGBps
	Suites  map[string]map[string]*Floor `json:"suites"` // suite → problem → floor
}

// Floor is one problem's weight-read floor.
type Floor struct {
	WeightBytes float64            `json:"weight_bytes"` // the weights of the groups with rows
	Experts     int                `json:"experts_read"` // how many groups those are
	Us          float64            `json:"floor_us"`     // WeightBytes at HBMGBps, in µs
	OverFloor   map[string]float64 `json:"over_floor"`   // each ok variant's median time over Us
}

// Derive records the weight-read floors of the run (lab.Deriver).
func (Lab) Derive(info gpu.DeviceInfo, entries []lab.EntryView) (map[string]any, error) {
	if info.Emulated {
		return nil, nil
	}
	hbm, source, err := lab.MeasuredCeiling(info, "hbm_gbps")
	if err != nil {
		return nil, fmt.Errorf("no weight-read floor: %w", err)
	}
	fl := FloorsOf(entries, hbm)
	fl.Source = source
	return map[string]any{FloorKey: fl}, nil
}

// FloorsOf computes the floors of the bf16 suites' problems among entries at hbmGBps.
func FloorsOf(entries []lab.EntryView, hbmGBps float64) Floors {
	fl := Floors{HBMGBps: hbmGBps, Suites: map[string]map[string]*Floor{}}
	for _, e := range entries {
		if !strings.HasPrefix(e.Suite, "bf16") {
			continue
		}
		byProblem := fl.Suites[e.Suite]
		if byProblem == nil {
			byProblem = map[string]*Floor{}
			fl.Suites[e.Suite] = byProblem
		}
		f := byProblem[e.Problem]
		if f == nil {
			shapes, err := GroupsOf(lab.Problem{Name: e.Problem, Params: e.Params})
			if err != nil {
				continue // not a problem of this lab's kind: nothing to read
			}
			f = &Floor{OverFloor: map[string]float64{}}
			for _, s := range shapes {
				if !s.Empty() {
					f.WeightBytes += float64(lab.BF16.Bytes()) * float64(s.K) * float64(s.N)
					f.Experts++
				}
			}
			f.Us = f.WeightBytes / (hbmGBps * 1e3) // bytes / (GB/s) = ns; /1e3 µs
			byProblem[e.Problem] = f
		}
		if e.OK && e.PerOpUs > 0 && f.Us > 0 {
			f.OverFloor[e.Variant] = e.PerOpUs / f.Us
		}
	}
	return fl
}
