package results

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTimelineOf(t *testing.T) {
	recorded := Timeline{SMs: 4, Launches: 2, Tiles: [][4]int64{{0, 0, 1500, 0}, {3, 200, 900, 1}}}
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
	for name, d := range map[string]map[string]any{
		"no data":       nil,
		"no timeline":   {"other": 1},
		"a tile of two": {TimelineKey: map[string]any{"tiles": []any{[]any{1.0, 2.0}}}},
		"a tile a word": {TimelineKey: map[string]any{"tiles": []any{"x"}}},
		"not an object": {TimelineKey: "x"},
	} {
		_, ok := TimelineOf(&Entry{Data: d})
		assert.False(t, ok, name)
	}
}
