package lab

import (
	"fmt"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

// The weight-read floor. A decode-sized product does a few flops per byte of its weights, so no
// implementation can take less time than reading those weights once at the HBM bandwidth that
// lab 01 measured on the same device. A lab's Derive records, through DeriveReadFloors, the floor
// of every problem its ReadBytes function knows and each ok variant's time over it, under
// ReadFloorKey in the results' extra data; not on the emulator, whose times are no performance
// figures.
const ReadFloorKey = "weight_read_floor"

// ReadFloors is what DeriveReadFloors records: the bandwidth, where it was read, the floors.
type ReadFloors struct {
	HBMGBps float64                          `json:"hbm_gbps"`
	Source  string                           `json:"source"` // the file and ceiling of HBMGBps
	Suites  map[string]map[string]*ReadFloor `json:"suites"` // suite → problem → floor
}

// ReadFloor is one problem's weight-read floor.
type ReadFloor struct {
	WeightBytes float64            `json:"weight_bytes"`  // what a run must read at least
	Matrices    int                `json:"matrices_read"` // how many weight matrices those are
	Us          float64            `json:"floor_us"`      // WeightBytes at HBMGBps, in µs
	OverFloor   map[string]float64 `json:"over_floor"`    // each ok variant's median time over Us
}

// ReadBytes says of an entry's problem the weight bytes a run must read and in how many matrices;
// ok false where the problem has no floor (a suite or a shape the lab does not bound this way).
type ReadBytes func(e EntryView) (bytes float64, matrices int, ok bool)

// ReadFloorsOf computes the floors of the problems among entries that bytesOf knows, at hbmGBps.
func ReadFloorsOf(entries []EntryView, hbmGBps float64, bytesOf ReadBytes) ReadFloors {
	fl := ReadFloors{HBMGBps: hbmGBps, Suites: map[string]map[string]*ReadFloor{}}
	for _, e := range entries {
		f := fl.Suites[e.Suite][e.Problem]
		if f == nil {
			bytes, matrices, ok := bytesOf(e)
			if !ok {
				continue
			}
			if fl.Suites[e.Suite] == nil {
				fl.Suites[e.Suite] = map[string]*ReadFloor{}
			}
			f = &ReadFloor{WeightBytes: bytes, Matrices: matrices, Us: bytes / (hbmGBps * 1e3), // bytes / (GB/s) = ns
				OverFloor: map[string]float64{}}
			fl.Suites[e.Suite][e.Problem] = f
		}
		if e.OK && e.PerOpUs > 0 && f.Us > 0 {
			f.OverFloor[e.Variant] = e.PerOpUs / f.Us
		}
	}
	return fl
}

// DeriveReadFloors is a Deriver's work for a lab with weight-read floors: nothing on the emulator,
// else the floors at lab 01's measured HBM bandwidth (an error that says to run lab 01 without it).
func DeriveReadFloors(info gpu.DeviceInfo, entries []EntryView, bytesOf ReadBytes) (map[string]any, error) {
	if info.Emulated {
		return nil, nil
	}
	hbm, source, err := MeasuredCeiling(info, "hbm_gbps")
	if err != nil {
		return nil, fmt.Errorf("no weight-read floor: %w", err)
	}
	fl := ReadFloorsOf(entries, hbm, bytesOf)
	fl.Source = source
	return map[string]any{ReadFloorKey: fl}, nil
}
