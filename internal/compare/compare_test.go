package compare

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/bench"
	"github.com/kernel-labs/kernellabs/internal/results"
)

func entry(variant, problem, status string, med, min, max float64) results.Entry {
	e := results.Entry{Suite: "fp32", Variant: variant, Problem: problem, Status: status}
	if status == results.StatusOK {
		e.Time = &bench.Stats{N: 10, MedianMs: med, MinMs: min, MaxMs: max}
	}
	return e
}

func TestFiles(t *testing.T) {
	old := &results.File{Entries: []results.Entry{
		entry("tiled", "4096", "ok", 10, 9.8, 10.3), // regresses by 20%, ranges apart
		entry("warp", "4096", "ok", 5, 4.9, 5.2),    // 2% slower but within the noise
		entry("dbuf", "4096", "ok", 4, 3.9, 4.1),    // 25% faster
		entry("naive", "4096", "ok", 100, 99, 101),  // fails in the new run
		entry("gone", "4096", "ok", 1, 1, 1),        // only in old
	}}
	newer := &results.File{Entries: []results.Entry{
		entry("tiled", "4096", "ok", 12, 11.7, 12.4),
		entry("warp", "4096", "ok", 5.1, 4.95, 5.3),
		entry("dbuf", "4096", "ok", 3.2, 3.1, 3.3),
		entry("naive", "4096", "wrong", 0, 0, 0),
		entry("fresh", "4096", "ok", 2, 2, 2),
	}}
	rows := Files(old, newer)
	by := map[string]Row{}
	for _, r := range rows {
		by[r.Variant] = r
	}
	require.Len(t, rows, 6)
	assert.Equal(t, Slower, by["tiled"].Verdict)
	assert.InDelta(t, 20, by["tiled"].Change, 1e-9)
	assert.InDelta(t, 10.0/12, by["tiled"].Speedup, 1e-9)
	assert.Equal(t, Noise, by["warp"].Verdict)
	assert.Equal(t, Faster, by["dbuf"].Verdict)
	assert.Equal(t, NotTimed, by["naive"].Verdict)
	assert.Equal(t, "old ok, new wrong", by["naive"].Note)
	assert.Equal(t, OnlyOld, by["gone"].Verdict)
	assert.Equal(t, OnlyNew, by["fresh"].Verdict)

	reg := Regressions(rows, 10)
	require.Len(t, reg, 1)
	assert.Equal(t, "tiled", reg[0].Variant)
	assert.Empty(t, Regressions(rows, 25), "a 20% regression is under a 25% threshold")
}

func TestEmulatorTimesAreNeverARegression(t *testing.T) {
	for _, tc := range []struct {
		name       string
		old, newer *results.File
	}{
		{"both files emulated", emulatorFile(10), emulatorFile(20)},
		{"old emulated", emulatorFile(10), &results.File{Entries: []results.Entry{entry("tiled", "4096", "ok", 20, 20, 20)}}},
		{"entries marked emulated", &results.File{Entries: []results.Entry{emulated(entry("tiled", "4096", "ok", 10, 10, 10))}},
			&results.File{Entries: []results.Entry{entry("tiled", "4096", "ok", 20, 20, 20)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := Files(tc.old, tc.newer)
			require.Len(t, rows, 1)
			assert.Equal(t, Emulated, rows[0].Verdict, "twice as slow, but emulated")
			assert.Zero(t, rows[0].Change)
			assert.Empty(t, Regressions(rows, 0))
		})
	}
}

func emulated(e results.Entry) results.Entry {
	e.Emulated = true
	return e
}

func emulatorFile(med float64) *results.File {
	f := &results.File{Entries: []results.Entry{emulated(entry("tiled", "4096", "ok", med, med, med))}}
	f.Device.Emulated = true
	return f
}
