package results

import (
	"encoding/json"
	"math"
	"sort"
)

// TimelineKey is the key of a timeline in an entry's data.
const TimelineKey = "timeline"

// Timeline is the recorded schedule of one run of kernels that log their work (the debug
// variants of labs 03 and 05, built with -DKL_TIMELINE): which SM ran each tile, and when. It is
// kept in the entry's data under TimelineKey; the site draws it as a Gantt chart per SM.
type Timeline struct {
	SMs      int        `json:"sms"`      // the device's SMs (the figure's rows; the emulator's workers)
	Launches int        `json:"launches"` // kernel launches in one run
	Tiles    [][4]int64 `json:"tiles"`    // sm, start ns, end ns, group (or kind); from the first start, by start
	Missing  int        `json:"missing"`  // tiles that left no record
	// Kinds, when set, name what the records are (lab 05: "compute", "copy", "wait"): a tile's
	// fourth number is then its kind, an index into Kinds, instead of a group.
	Kinds []string `json:"kinds,omitempty"`
}

// TimelineOfRecords turns the raw records of a -DKL_TIMELINE build (four words each, as
// labs/common/timeline.cuh writes them: SM, group or kind, start ns, end ns; all four 0 in a slot
// no tile wrote, counted as missing) into the Timeline of one run: times from the earliest start,
// records by start, SMs raised to the highest SM seen.
func TimelineOfRecords(recs []uint64, sms, launches int) Timeline {
	t := Timeline{SMs: sms, Launches: launches, Tiles: [][4]int64{}}
	first := int64(math.MaxInt64)
	for i := 0; i+3 < len(recs); i += 4 {
		sm, group, start, end := int64(recs[i]), int64(recs[i+1]), int64(recs[i+2]), int64(recs[i+3])
		if start == 0 && end == 0 {
			t.Missing++
			continue
		}
		first = min(first, start)
		t.SMs = max(t.SMs, int(sm)+1)
		t.Tiles = append(t.Tiles, [4]int64{sm, start, end, group})
	}
	for i := range t.Tiles {
		t.Tiles[i][1] -= first
		t.Tiles[i][2] -= first
	}
	sort.SliceStable(t.Tiles, func(a, b int) bool { return t.Tiles[a][1] < t.Tiles[b][1] })
	return t
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
	for _, r := range t.Tiles {
		if len(t.Kinds) > 0 && (r[3] < 0 || r[3] >= int64(len(t.Kinds))) {
			return nil, false // a kind that Kinds does not name
		}
	}
	return &t, true
}
