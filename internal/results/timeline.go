package results

import "encoding/json"

// TimelineKey is the key of a timeline in an entry's data.
const TimelineKey = "timeline"

// Timeline is the recorded schedule of one run of a kernel that logs its tiles (lab 03's debug
// variants, built with -DKL_TIMELINE): which SM ran each tile, and when. It is kept in the
// entry's data under TimelineKey; the site draws it as a Gantt chart per SM.
type Timeline struct {
	SMs      int        `json:"sms"`      // the device's SMs (the figure's rows; the emulator's workers)
	Launches int        `json:"launches"` // kernel launches in one run
	Tiles    [][4]int64 `json:"tiles"`    // sm, start ns, end ns, group; from the first start, by start
	Missing  int        `json:"missing"`  // tiles that left no record
}

// TimelineOf reads the timeline of an entry's data; false when it has none (or not one of this
// shape).
func TimelineOf(e *Entry) (*Timeline, bool) {
	v, ok := e.Data[TimelineKey]
	if !ok || v == nil {
		return nil, false
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	var t Timeline
	if err := json.Unmarshal(data, &t); err != nil {
		return nil, false
	}
	// A tile is exactly four numbers: JSON would pad a shorter one into [4]int64 with zeros.
	var raw struct{ Tiles [][]json.RawMessage }
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, false
	}
	for _, r := range raw.Tiles {
		if len(r) != 4 {
			return nil, false
		}
	}
	return &t, true
}
