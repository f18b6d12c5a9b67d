package bench

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSummarize(t *testing.T) {
	tests := []struct {
		name     string
		in       []float64
		med      float64
		min      float64
		max      float64
		meanWant float64
	}{
		{"odd", []float64{3, 1, 2}, 2, 1, 3, 2},
		{"even", []float64{4, 1, 3, 2}, 2.5, 1, 4, 2.5},
		{"one", []float64{7}, 7, 7, 7, 7},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := StatsOf(tc.in)
			assert.Equal(t, len(tc.in), s.N)
			assert.InDelta(t, tc.med, s.MedianMs, 1e-12)
			assert.Equal(t, tc.min, s.MinMs)
			assert.Equal(t, tc.max, s.MaxMs)
			assert.InDelta(t, tc.meanWant, s.MeanMs, 1e-12)
		})
	}
	assert.Equal(t, Stats{}, StatsOf(nil))
}

func TestSummarizeDoesNotReorderInput(t *testing.T) {
	in := []float64{3, 1, 2}
	StatsOf(in)
	assert.Equal(t, []float64{3, 1, 2}, in)
}

func TestMeasureCountsWarmupAndReps(t *testing.T) {
	calls := 0
	st, samples, err := Measure(Options{Warmup: 2, MinReps: 5, MaxReps: 5, Budget: time.Hour}, func() (float64, error) {
		calls++
		return float64(calls), nil
	})
	require.NoError(t, err)
	assert.Equal(t, 7, calls)
	assert.Equal(t, []float64{3, 4, 5, 6, 7}, samples)
	assert.Equal(t, 5.0, st.MedianMs)
}

func TestMeasureStopsAtBudgetAfterMinReps(t *testing.T) {
	st, _, err := Measure(Options{MinReps: 3, MaxReps: 1 << 20, Budget: time.Millisecond}, func() (float64, error) {
		time.Sleep(2 * time.Millisecond)
		return 1, nil
	})
	require.NoError(t, err)
	assert.GreaterOrEqual(t, st.N, 3)
	assert.Less(t, st.N, 10)
}

func TestMeasurePropagatesErrors(t *testing.T) {
	boom := errors.New("illegal address")
	_, _, err := Measure(Options{Warmup: 1, MinReps: 1}, func() (float64, error) { return 0, boom })
	require.ErrorIs(t, err, boom)
	assert.Contains(t, err.Error(), "warm-up")
}
