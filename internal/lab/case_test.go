package lab

import (
	"errors"
	"math"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/check"
	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/gpu/fake"
	"github.com/kernel-labs/kernellabs/internal/results"
)

// The engine owns a case's buffers: whatever the driver does (fails, refuses, panics), every
// buffer it allocated is freed when the job ends, and every output is poisoned before the run.

// countingDevice counts the live allocations of the device under it.
type countingDevice struct {
	gpu.Device
	mu   sync.Mutex
	live map[gpu.Ptr]bool
}

func (d *countingDevice) Malloc(n int64) (gpu.Ptr, error) {
	p, err := d.Device.Malloc(n)
	if err == nil {
		d.mu.Lock()
		d.live[p] = true
		d.mu.Unlock()
	}
	return p, err
}

func (d *countingDevice) Free(p gpu.Ptr) error {
	d.mu.Lock()
	delete(d.live, p)
	d.mu.Unlock()
	return d.Device.Free(p)
}

func (d *countingDevice) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.live)
}

// lifeDriver allocates an input, an output and a scratch buffer, then does what its problem's
// "fail" parameter says, at the stage its "at" parameter says.
type lifeDriver struct{}

type lifeCase struct {
	env       *Env
	in, out   *gpu.Buffer[float32]
	scratch   *gpu.Buffer[int32]
	fail, at  int64
	sawPoison bool
}

const (
	atPrepare = iota + 1
	atRun
	atCheck
)

const (
	failError = iota + 1
	failSkip
	failPanic
	failWrong
)

func (c *lifeCase) act(stage int64) error {
	if c.at != stage {
		return nil
	}
	switch c.fail {
	case failError:
		return errors.New("the driver failed")
	case failSkip:
		return Skip("the driver refused")
	case failPanic:
		panic("the driver panicked")
	}
	return nil
}

func (lifeDriver) Prepare(env *Env, s *Suite, p Problem) (Case, error) {
	c := &lifeCase{env: env, fail: p.Int("fail", 0), at: p.Int("at", 0)}
	var err error
	if c.in, err = Upload(env, "in", []float32{1, 2, 3}); err != nil {
		return nil, err
	}
	if c.out, err = Output[float32](env, "out", 3, PoisonNaN32); err != nil {
		return nil, err
	}
	if c.scratch, err = Scratch[int32](env, "counters", 2, PoisonBytes(0)); err != nil {
		return nil, err
	}
	if err := c.act(atPrepare); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *lifeCase) Run(v *Variant) error {
	if err := c.act(atRun); err != nil {
		return err
	}
	out := fake.Float32s(c.out.DevicePtr(), 3)
	c.sawPoison = math.Float32bits(out[0]) == NaNBits32 && fake.Float32s(c.scratch.DevicePtr(), 2)[0] == 0
	in := fake.Float32s(c.in.DevicePtr(), 3)
	for i := range out {
		out[i] = 2 * in[i]
	}
	// A buffer allocated while running belongs to the case too.
	_, err := Alloc[uint8](c.env, "workspace", 16)
	return err
}

func (c *lifeCase) Check(v *Variant, o *Outputs) (check.Report, error) {
	if err := c.act(atCheck); err != nil {
		return check.Report{}, err
	}
	if !c.sawPoison {
		return check.Fail("poison", "the output was not poisoned before the run"), nil
	}
	want := []float64{2, 4, 6}
	if c.fail == failWrong {
		want[1] = 5
	}
	if _, err := o.Float32((*gpu.Buffer[float32])(nil)); err == nil {
		return check.Report{}, errors.New("a nil output was readable")
	}
	return o.Check(c.out, want)
}

func (c *lifeCase) Work() Work { return Work{Bytes: 24} }

const lifeManifest = `id: "99"
title: {en: Lifecycle, zh: 生命周期}
timeout: 2s
suites:
  - name: life
    title: {en: Life, zh: 生命}
    metric: gbps
    tolerance: 1e-6
    flush_l2: false
    variants:
      - {name: lib, library: fake_copy}
    problems:
      gpu:
        - {name: ok}
        - {name: prepare error, fail: 1, at: 1}
        - {name: prepare skip, fail: 2, at: 1}
        - {name: prepare panic, fail: 3, at: 1}
        - {name: run error, fail: 1, at: 2}
        - {name: run skip, fail: 2, at: 2}
        - {name: run panic, fail: 3, at: 2}
        - {name: check error, fail: 1, at: 3}
        - {name: check panic, fail: 3, at: 3}
        - {name: wrong, fail: 4}
`

func TestEngineFreesEveryBufferOnEveryPath(t *testing.T) {
	root := newCourse(t, lifeManifest)
	man, err := LoadManifest(filepath.Join(root, "labs", "99_test"))
	require.NoError(t, err)
	be, _ := fakeBackend(t)
	raw, err := be.Open(0)
	require.NoError(t, err)
	dev := &countingDevice{Device: raw, live: map[gpu.Ptr]bool{}}
	stream, err := dev.NewStream()
	require.NoError(t, err)
	env := NewEnv(dev, stream, 1, nil, nil)
	w := &worker{spec: WorkerSpec{Seed: 1, Quick: true}, man: man, drv: lifeDriver{}, dev: dev, env: env}
	want := map[string]string{
		"ok": results.StatusOK, "prepare error": results.StatusFailed, "prepare skip": results.StatusSkipped,
		"prepare panic": results.StatusCrashed, "run error": results.StatusFailed, "run skip": results.StatusSkipped,
		"run panic": results.StatusCrashed, "check error": results.StatusFailed, "check panic": results.StatusCrashed,
		"wrong": results.StatusWrong,
	}
	s := man.Suite("life")
	for _, p := range s.Problems.GPU {
		e, _ := w.runJob(Job{Suite: "life", Variant: "lib", Problem: p.Name, Set: "gpu"})
		assert.Equal(t, want[p.Name], e.Status, "%s: %s", p.Name, e.Error)
		assert.Zero(t, dev.count(), "%s: every buffer of the case is freed", p.Name)
	}
}

func TestOutputsReadOnlyDeclaredOutputs(t *testing.T) {
	dev := &fake.Device{}
	stream, err := dev.NewStream()
	require.NoError(t, err)
	env := NewEnv(dev, stream, 1, nil, nil)
	env.openCase()
	defer env.closeCase()
	in, err := Upload(env, "in", []float32{1, 2})
	require.NoError(t, err)
	out, err := Output[float32](env, "out", 2, PoisonNaN32)
	require.NoError(t, err)
	src, err := Upload(env, "C0", []float32{5, 6})
	require.NoError(t, err)
	restored, err := Output[float32](env, "C", 2, RestoreFrom(src))
	require.NoError(t, err)
	_, err = Output[uint16](env, "bad", 2, PoisonNaN32)
	assert.ErrorContains(t, err, "32-bit poison")
	_, err = Output[float32](env, "bad", 3, RestoreFrom(src))
	assert.ErrorContains(t, err, "RestoreFrom a buffer of 2 elements")

	require.NoError(t, env.arena().poison())
	o := newOutputs(env, 1e-6)
	got, err := o.Float32(out)
	require.NoError(t, err)
	assert.True(t, math.IsNaN(float64(got[0])))
	got, err = o.Float32(restored)
	require.NoError(t, err)
	assert.Equal(t, []float32{5, 6}, got)
	_, err = o.Float32(in)
	assert.ErrorContains(t, err, "not an output")
	raw, err := env.caseOutputs()
	require.NoError(t, err)
	assert.Len(t, raw, 2, "the outputs, in allocation order")
}
