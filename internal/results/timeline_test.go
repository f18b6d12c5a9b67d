package results

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTimelineOf(t *testing.T) {
	grouped := Timeline{SMs: 4, Launches: 2, Tiles: [][4]int64{{0, 0, 1500, 0}, {3, 200, 900, 1}}}
	kinds := Timeline{SMs: 4, Launches: 3, Tiles: [][4]int64{{0, 0, 1500, 1}, {3, 200, 900, 2}}, Kinds: []string{"compute", "copy", "wait"}}
	for _, recorded := range []Timeline{grouped, kinds} {
		// As a run keeps it (the typed value) and as a results file gives it back (decoded JSON).
		var e Entry
		data, err := json.Marshal(map[string]any{"data": map[string]any{TimelineKey: recorded}})
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(data, &e))
		for _, entry := range []*Entry{{Data: map[string]any{TimelineKey: recorded}}, &e} {
			got, ok := TimelineOf(entry)
			require.True(t, ok)
			assert.Equal(t, recorded, *got)
		}
	}
	for name, d := range map[string]map[string]any{
		"no data":               nil,
		"no timeline":           {"other": 1},
		"a tile of two":         {TimelineKey: map[string]any{"tiles": []any{[]any{1.0, 2.0}}}},
		"a tile a word":         {TimelineKey: map[string]any{"tiles": []any{"x"}}},
		"not an object":         {TimelineKey: "x"},
		"a kind past the kinds": {TimelineKey: map[string]any{"kinds": []any{"compute"}, "tiles": []any{[]any{0.0, 0.0, 1.0, 1.0}}}},
	} {
		_, ok := TimelineOf(&Entry{Data: d})
		assert.False(t, ok, name)
	}
}

// The raw records of a -DKL_TIMELINE build: slots nobody wrote count as missing, times start at
// the earliest record, records come by start, and an SM past the device's raises SMs.
func TestTimelineOfRecords(t *testing.T) {
	recs := []uint64{
		3, 1, 5000, 6000,
		0, 0, 0, 0,
		7, 0, 4000, 4500,
	}
	tl := TimelineOfRecords(recs, 4, 2)
	assert.Equal(t, Timeline{SMs: 8, Launches: 2, Tiles: [][4]int64{{7, 0, 500, 0}, {3, 1000, 2000, 1}}, Missing: 1}, tl)
	assert.Equal(t, Timeline{SMs: 4, Launches: 1, Tiles: [][4]int64{}}, TimelineOfRecords(nil, 4, 1))
}
