package lab

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/kernel-labs/kernellabs/internal/bench"
	"github.com/kernel-labs/kernellabs/internal/gpu"
)

// Timing a collective as nccl-tests does: after a host barrier, every rank queues K runs back to
// back between two events, behind a hold of its stream where the backend has one (hold.go: the
// runs synchronise on the device, and no host launch is in between), and the
// time of one run is the slowest rank's (t_end − t_start)/K. K is chosen from a first run so that a
// batch lasts about batchTarget. The outputs are poisoned before every batch and the last batch's
// are checked on every rank: no time is of unchecked work.

// batchTarget is how long a timed batch of K runs should last; maxBatch bounds K.
const (
	batchTarget = 2 * time.Millisecond
	maxBatch    = 1000
)

// timeStep is one rank's message between batches: its time of the last batch, and (rank 0's)
// whether another batch follows.
type timeStep struct {
	Ms   float64 `json:"ms"`
	More bool    `json:"more"`
}

// step shares this rank's last batch time and rank 0's decision; it returns the slowest rank's
// time and the decision.
func (w *worker) step(ms float64, more bool) (float64, bool, error) {
	all, err := w.agree("time", rankMsg{Data: mustJSON(timeStep{ms, more})})
	if err != nil {
		return 0, false, err
	}
	slowest := 0.0
	var first timeStep
	for r, m := range all {
		var t timeStep
		if err := json.Unmarshal(m.Data, &t); err != nil {
			return 0, false, fmt.Errorf("rank %d's time: %w", r, err)
		}
		if r == 0 {
			first = t
		}
		slowest = math.Max(slowest, t.Ms)
	}
	return slowest, first.More, nil
}

// rankTime measures runs of v on every rank (see above) and returns the same statistics on every
// rank, per run.
func (w *worker) rankTime(v *Variant, t *Trial, o bench.Options) (bench.Stats, error) {
	rc, ok := t.Case.(*rankCase)
	if !ok {
		return bench.Stats{}, fmt.Errorf("a lab of ranks times its cases through the engine's rank case")
	}
	inner, st := rc.Case, w.env.Stream
	start, end, closeEvents, err := w.timingEvents()
	if err != nil {
		return bench.Stats{}, err
	}
	defer closeEvents()

	var graph gpu.Graph
	defer func() {
		if graph != nil {
			graph.Destroy()
		}
	}()
	// batch poisons the outputs and times k runs (or the captured graph of k). A poison needs no
	// host barrier after it: every run starts with a device barrier, so no peer writes into this
	// rank's buffers before this rank's stream has reached the run.
	batch := func(k int) (float64, error) {
		if err := t.Poison(); err != nil {
			return 0, err
		}
		_, err := w.holds.queued(w.env, v, st, func() error {
			if err := start.Record(st); err != nil {
				return err
			}
			var err error
			if graph != nil {
				err = graph.Launch(st)
			} else {
				for i := 0; i < k && err == nil; i++ {
					err = inner.Run(v)
				}
			}
			if err == nil {
				err = end.Record(st)
			}
			return err
		}, nil) // a collective's batches are not paced: they run back to back, as in a model
		if err == nil {
			err = end.Synchronize()
		}
		if err != nil {
			return 0, err
		}
		ms, err := end.ElapsedMs(start)
		if err == nil && (ms < 0 || math.IsNaN(ms)) {
			err = fmt.Errorf("negative or NaN time from the device timer")
		}
		return ms / float64(k), err
	}

	// A host barrier, then a first batch of one run, whose slowest time sets K.
	if _, _, err := w.step(0, true); err != nil {
		return bench.Stats{}, err
	}
	probe, err := batch(1)
	if err != nil {
		return bench.Stats{}, err
	}
	t1, _, err := w.step(probe, true)
	if err != nil {
		return bench.Stats{}, err
	}
	k := 1
	if t1 > 0 {
		k = int(math.Ceil(float64(batchTarget.Microseconds()) / 1e3 / t1))
	}
	k = min(max(k, 1), maxBatch)
	if _, ok := st.(gpu.Holder); ok {
		k = min(k, maxHeldBatch) // a held batch needs no length to hide the host's launches
	}
	if w.spec.Graph {
		if gc, ok := st.(gpu.GraphCapturer); ok {
			g, err := gc.CaptureGraph(func() error {
				for range k {
					if err := inner.Run(v); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				return bench.Stats{}, fmt.Errorf("capturing %d runs in a graph: %w", k, err)
			}
			graph = g
		} else if w.rk.world.Rank == 0 && !w.graphNoted {
			w.graphNoted = true
			w.env.Logf("--graph: the %s backend cannot capture a stream into a graph; the runs are launched one by one", w.env.Backend)
		}
	}

	// Warm-up batches, then timed ones until rank 0's budget is spent: rank 0 decides for every
	// rank at the host barrier before each batch, where the ranks also share the last batch's time.
	began := time.Now()
	for i := 0; ; i++ {
		more := (i < o.Warmup || time.Since(began) < o.WarmupMin) && i < 1000
		if _, next, err := w.step(0, more); err != nil {
			return bench.Stats{}, err
		} else if !next {
			break
		}
		if _, err := batch(k); err != nil {
			return bench.Stats{}, fmt.Errorf("warm-up batch %d: %w", i+1, err)
		}
	}
	var samples []float64
	began = time.Now()
	ms := 0.0
	for i := 0; ; i++ {
		more := i < max(o.MaxReps, 1) && (i < max(o.MinReps, 1) || time.Since(began) < o.Budget) // i batches ran
		slowest, next, err := w.step(ms, more)
		if err != nil {
			return bench.Stats{}, err
		}
		if i > 0 {
			samples = append(samples, slowest)
		}
		if !next {
			break
		}
		if ms, err = batch(k); err != nil {
			return bench.Stats{}, fmt.Errorf("timed batch %d: %w", i+1, err)
		}
	}
	// The last timed batch's outputs, on every rank.
	rep, err := t.Check()
	if err != nil {
		return bench.Stats{}, err
	}
	if !rep.OK {
		return bench.Stats{}, fmt.Errorf("the outputs of the timed runs are wrong, although the first run's were right: %s", rep.Detail())
	}
	w.timing = map[string]any{"batch": k, "graph": graph != nil}
	return bench.StatsOf(samples), nil
}
