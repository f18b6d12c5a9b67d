// Package bench times device work the way the course teaches: device events around each
// repetition, warm-up first, repetitions until a time budget, the median quoted with min and max.
package bench

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"time"
)

// Stats summarises repeated timings in milliseconds.
type Stats struct {
	N        int     `json:"n"`
	MedianMs float64 `json:"median_ms"`
	MinMs    float64 `json:"min_ms"`
	MaxMs    float64 `json:"max_ms"`
	MeanMs   float64 `json:"mean_ms"`
	StdMs    float64 `json:"std_ms"`
}

// StatsOf computes Stats of samples (not modified).
func StatsOf(samples []float64) Stats {
	if len(samples) == 0 {
		return Stats{}
	}
	s := append([]float64(nil), samples...)
	sort.Float64s(s)
	n := len(s)
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	var sum float64
	for _, v := range s {
		sum += v
	}
	mean := sum / float64(n)
	var ss float64
	for _, v := range s {
		ss += (v - mean) * (v - mean)
	}
	std := 0.0
	if n > 1 {
		std = math.Sqrt(ss / float64(n-1))
	}
	return Stats{N: n, MedianMs: med, MinMs: s[0], MaxMs: s[n-1], MeanMs: mean, StdMs: std}
}

// Options bound a measurement.
type Options struct {
	Warmup    int           // untimed runs first (module load, clocks ramping, caches)
	MinReps   int           // at least this many timed runs
	MaxReps   int           // at most this many
	Budget    time.Duration // stop adding repetitions once this much wall time was spent timing
	WarmupMin time.Duration // keep warming up at least this long (GPU clocks ramp up)
}

// Default is the budget of a normal run; Quick of --quick.
var (
	Default = Options{Warmup: 2, MinReps: 5, MaxReps: 2000, Budget: 250 * time.Millisecond, WarmupMin: 30 * time.Millisecond}
	Quick   = Options{Warmup: 2, MinReps: 5, MaxReps: 200, Budget: 80 * time.Millisecond, WarmupMin: 5 * time.Millisecond}
)

// Rep runs one repetition and returns its device time in milliseconds. setup is not timed (an L2
// flush, say) and may be nil.
type Rep func() (ms float64, err error)

// Measure runs rep until the options are met and returns the statistics.
func Measure(o Options, rep Rep) (Stats, []float64, error) {
	if o.MinReps < 1 {
		o.MinReps = 1
	}
	if o.MaxReps < o.MinReps {
		o.MaxReps = o.MinReps
	}
	start := time.Now()
	for i := 0; i < o.Warmup || time.Since(start) < o.WarmupMin; i++ {
		if _, err := rep(); err != nil {
			return Stats{}, nil, fmt.Errorf("warm-up run %d: %w", i+1, err)
		}
		if i > 1000 {
			break
		}
	}
	var samples []float64
	start = time.Now()
	for len(samples) < o.MaxReps && (len(samples) < o.MinReps || time.Since(start) < o.Budget) {
		ms, err := rep()
		if err != nil {
			return Stats{}, samples, fmt.Errorf("timed run %d: %w", len(samples)+1, err)
		}
		if ms < 0 || math.IsNaN(ms) {
			return Stats{}, samples, errors.New("negative or NaN time from the device timer")
		}
		samples = append(samples, ms)
	}
	return StatsOf(samples), samples, nil
}
