package devprops

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/check"
	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/labtest"
	"github.com/kernel-labs/kernellabs/internal/results"
)

// fakeEnv loads the manifest and builds an Env on a fake device with Go twins of the kernels.
func fakeEnv(t *testing.T, d *fakeDevice, withFill bool) (*lab.Manifest, *lab.Env, map[string]gpu.Kernel) {
	t.Helper()
	m := labtest.Manifest(t)
	variants := map[string][2]string{}
	for _, s := range m.Suites {
		for _, v := range s.Variants {
			if v.IsKernel() {
				variants[v.Key()] = [2]string{v.File, v.Entry}
			}
		}
	}
	ks, err := loadFakeKernels(d, m.Dir, variants, withFill)
	require.NoError(t, err)
	var logs []string
	env := lab.NewEnv(d, fakeStream{}, 42, ks, func(f string, a ...any) { logs = append(logs, f) })
	return m, env, ks
}

// TestEverySuiteOnFakeDevice runs each variant on each emulator and grading problem the way the
// engine does: Prepare, Poison, Run, Check must pass; Poison then Check (no Run) must fail,
// which proves the poison is visible to the check.
func TestEverySuiteOnFakeDevice(t *testing.T) {
	{
		d := newFakeDevice()
		m, env, _ := fakeEnv(t, d, true)
		for _, s := range m.Suites {
			problems := append(append([]lab.Problem{}, s.Problems.Emu...), s.Problems.Grade...)
			for _, p := range problems {
				for _, v := range s.Variants {
					name := s.Name + "/" + v.Name + "/" + p.Name
					c, err := lab.NewTrial(env, Lab{}, s, v, p)
					require.NoError(t, err, name)
					require.NoError(t, c.Poison(), name)
					require.NoError(t, c.Run(), name)
					rep, err := c.Check()
					require.NoError(t, err, name)
					assert.True(t, rep.OK, "%s: %s", name, rep.Detail())
					assert.Positive(t, rep.Checked, name)

					require.NoError(t, c.Poison(), name)
					rep, err = c.Check()
					require.NoError(t, err, name)
					assert.False(t, rep.OK, "%s: a poisoned output passed the check", name)

					w := c.Case.Work()
					assert.True(t, w.FLOPs > 0 || w.Bytes > 0 || w.Ops > 0, "%s: no work counted", name)
					require.NoError(t, c.Release(), name)
				}
			}
		}
		assert.Empty(t, d.allocs, "device memory leaked")
		assert.Zero(t, d.pinned, "pinned host memory leaked")
	}
}

func TestDeviceFillIsUsedWhenLoaded(t *testing.T) {
	d := newFakeDevice()
	m, env, ks := fakeEnv(t, d, true)
	s := m.Suite(SuiteHBM)
	c, err := lab.NewTrial(env, Lab{}, s, s.Variants[0], s.Problems.Emu[0])
	require.NoError(t, err)
	defer c.Release()
	assert.Equal(t, 1, ks[FillEntry].(*fakeKernel).count)
}

func TestInputsNeedTheFillKernel(t *testing.T) {
	d := newFakeDevice()
	m, env, _ := fakeEnv(t, d, false)
	s := m.Suite(SuiteHBM)
	_, err := lab.NewTrial(env, Lab{}, s, s.Variants[0], s.Problems.Emu[0])
	assert.ErrorContains(t, err, "fill_f32")
	assert.Empty(t, d.allocs, "a refused problem leaves nothing allocated")
}

func TestCopyRepeatsSmallWorkingSets(t *testing.T) {
	d := newFakeDevice()
	d.info.Emulated = false // on a real GPU a Run moves about run_bytes (1 GiB by default)
	m, env, ks := fakeEnv(t, d, true)
	s := m.Suite(SuiteHBM)
	for _, tc := range []struct {
		params map[string]int64
		passes int
	}{
		{map[string]int64{"bytes": 64 << 10, "run_bytes": 1 << 20}, 16},
		{map[string]int64{"bytes": 2 << 20, "run_bytes": 1 << 20}, 1},
		{map[string]int64{"bytes": 3 << 20, "run_bytes": 10 << 20}, 3},
	} {
		c, err := lab.NewTrial(env, Lab{}, s, s.Variant("copy_f4_flat"), lab.Problem{Name: "t", Params: tc.params})
		require.NoError(t, err)
		k := ks["hbm_bandwidth/copy_f4_flat"].(*fakeKernel)
		before := k.count
		require.NoError(t, c.Run())
		assert.Equal(t, tc.passes, k.count-before, "%v", tc.params)
		assert.Equal(t, float64(tc.passes)*float64(tc.params["bytes"]), c.Case.Work().Bytes)
		rep, err := c.Check()
		require.NoError(t, err)
		assert.True(t, rep.OK)
		require.NoError(t, c.Release())
	}
}

func TestWorkCounts(t *testing.T) {
	d := newFakeDevice()
	m, env, _ := fakeEnv(t, d, true)
	prob := func(suite string, params map[string]int64) (lab.Case, *lab.Suite) {
		s := m.Suite(suite)
		c, err := lab.NewTrial(env, Lab{}, s, s.Variants[0], lab.Problem{Name: "t", Params: params})
		require.NoError(t, err)
		t.Cleanup(func() { c.Release() })
		return c.Case, s
	}
	c, _ := prob(SuiteHBM, map[string]int64{"bytes": 1 << 20})
	assert.Equal(t, lab.Work{Bytes: 1 << 20}, c.Work())

	c, _ = prob(SuiteFMA, map[string]int64{"threads_per_sm": 64, "fmas": 256})
	threads := float64(d.info.SMs * 64)
	assert.Equal(t, 2*threads*256, c.Work().FLOPs)

	c, _ = prob(SuiteTensor, map[string]int64{"m": 8, "n": 16, "k": 32})
	assert.Equal(t, float64(2*8*16*32), c.Work().FLOPs)

	c, _ = prob(SuiteLaunch, map[string]int64{"launches": 17})
	assert.Equal(t, 17, c.Work().Ops)

	c, _ = prob(SuiteHostLink, map[string]int64{"bytes": 4097})
	assert.Equal(t, float64(4097), c.Work().Bytes)
}

func TestBadProblemsAreRefused(t *testing.T) {
	d := newFakeDevice()
	m, env, _ := fakeEnv(t, d, true)
	for _, tc := range []struct {
		suite  string
		params map[string]int64
	}{
		{SuiteHBM, map[string]int64{"bytes": 12}},
		{SuiteHBM, map[string]int64{}},
		{SuiteFMA, map[string]int64{"threads_per_sm": 64, "fmas": 12}},
		{SuiteTensor, map[string]int64{"m": 0, "n": 1, "k": 1}},
		{SuiteLaunch, map[string]int64{"launches": 0}},
		{SuiteHostLink, map[string]int64{"bytes": 0}},
	} {
		s := m.Suite(tc.suite)
		_, err := lab.NewTrial(env, Lab{}, s, s.Variants[0], lab.Problem{Name: "bad", Params: tc.params})
		assert.Error(t, err, "%s %v", tc.suite, tc.params)
	}
	_, err := lab.NewTrial(env, Lab{}, &lab.Suite{Name: "nope"}, nil, lab.Problem{})
	assert.ErrorContains(t, err, "no suite")
	assert.Empty(t, d.allocs, "a refused problem leaves nothing allocated")
}

func TestTensorNeedsBLAS(t *testing.T) {
	d := newFakeDevice()
	d.noBLAS = true
	m, env, _ := fakeEnv(t, d, true)
	s := m.Suite(SuiteTensor)
	_, err := lab.NewTrial(env, Lab{}, s, s.Variants[0], s.Problems.Emu[0])
	assert.ErrorContains(t, err, "vendor BLAS")
}

// checkedRun prepares problem p of suite/variant as the engine does, poisons, runs and checks once.
func checkedRun(t *testing.T, env *lab.Env, s *lab.Suite, variant string, p lab.Problem) check.Report {
	t.Helper()
	c, err := lab.NewTrial(env, Lab{}, s, s.Variant(variant), p)
	require.NoError(t, err)
	defer c.Release()
	require.NoError(t, c.Poison())
	require.NoError(t, c.Run())
	rep, err := c.Check()
	require.NoError(t, err)
	return rep
}

// The checks must catch a kernel that is almost right.
func TestChecksCatchNearMisses(t *testing.T) {
	problem := func(params map[string]int64) lab.Problem { return lab.Problem{Name: "t", Params: params} }
	for _, tc := range []struct {
		name, suite, variant string
		problem              lab.Problem // the suite's first emulator problem when it has no name
		// damage makes the fake kernel of the variant (nil: the fake BLAS) almost right.
		damage              func(good fakeBody) fakeBody
		unwritten, maxErrAt int // -1: not asserted
	}{
		{"copy misses its last element", SuiteHBM, "copy_f4", problem(map[string]int64{"bytes": 8008}),
			func(good fakeBody) fakeBody {
				return func(k *fakeKernel, cfg gpu.LaunchConfig, args [][]byte) error {
					n := int64(argU64(args[2]))
					err := good(k, cfg, args)
					dst, _ := k.floats(args[1], n)
					dst[n-1] = float32(math.NaN())
					return err
				}
			}, 1, 1000},
		{"fma thread off by one ulp", SuiteFMA, "fma_chains4", lab.Problem{},
			func(good fakeBody) fakeBody {
				return func(k *fakeKernel, cfg gpu.LaunchConfig, args [][]byte) error {
					err := good(k, cfg, args)
					out, _ := k.floats(args[0], 1)
					out[0] = math.Nextafter32(out[0], 10) // thread 0 is always sampled
					return err
				}
			}, -1, 0},
		{"gemm with one wrong entry", SuiteTensor, VariantCublasBF16, problem(map[string]int64{"m": 48, "n": 40, "k": 56}),
			nil, -1, -1},
		{"launch_sync with a launch missing", SuiteLaunch, VariantLaunchSync, problem(map[string]int64{"launches": 5}),
			func(good fakeBody) fakeBody {
				return func(k *fakeKernel, cfg gpu.LaunchConfig, args [][]byte) error {
					if argU32(args[1]) == 3 {
						return nil // launch 3 does nothing
					}
					return good(k, cfg, args)
				}
			}, 1, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newFakeDevice()
			if tc.damage == nil {
				d.gemmHook = func(c []float32) { c[len(c)/3] += 0.25 }
			}
			m, env, ks := fakeEnv(t, d, true)
			s := m.Suite(tc.suite)
			if tc.damage != nil {
				k := ks[tc.suite+"/"+tc.variant].(*fakeKernel)
				k.body = tc.damage(k.body)
			}
			p := tc.problem
			if p.Name == "" {
				p = s.Problems.Emu[0]
			}
			rep := checkedRun(t, env, s, tc.variant, p)
			assert.False(t, rep.OK, rep.Detail())
			if tc.unwritten >= 0 {
				assert.Equal(t, tc.unwritten, rep.Unwritten)
			}
			if tc.maxErrAt >= 0 {
				assert.Equal(t, tc.maxErrAt, rep.MaxErrAt)
			}
		})
	}
}

// An FMA output left at its NaN poison fails the check, which counts it and names its thread.
func TestFMACheckNamesTheFirstUnwrittenThread(t *testing.T) {
	d := newFakeDevice()
	m, env, ks := fakeEnv(t, d, true)
	s := m.Suite(SuiteFMA)
	k := ks[SuiteFMA+"/fma_chains4"].(*fakeKernel)
	good := k.body
	k.body = func(k *fakeKernel, cfg gpu.LaunchConfig, args [][]byte) error {
		err := good(k, cfg, args)
		out, _ := k.floats(args[0], 8)
		out[5], out[7] = float32(math.NaN()), float32(math.Inf(-1))
		return err
	}
	rep := checkedRun(t, env, s, "fma_chains4", s.Problems.Emu[0])
	assert.False(t, rep.OK, rep.Detail())
	assert.Equal(t, 2, rep.Unwritten)
	assert.Regexp(t, `^2 of \d+ outputs are NaN or Inf \(first at thread 5\)`, rep.Note)
}

func TestDescribeWithoutNVML(t *testing.T) {
	d := newFakeDevice()
	_, env, _ := fakeEnv(t, d, true)
	extra, err := Lab{}.RecordDevice(env)
	require.NoError(t, err)
	var p results.DeviceProperties
	data, err := json.Marshal(extra)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &p))
	assert.Equal(t, d.info, p.Info)
	assert.NotEmpty(t, p.Attributes)
	assert.Equal(t, &results.MemoryNow{FreeBytes: 1 << 30, TotalBytes: 1 << 30}, p.Memory)
	assert.False(t, p.NVML.Available)
	assert.Contains(t, p.NVML.Reason, "emulator")
	assert.Nil(t, p.Peaks.Datasheet, "a fake GPU has no datasheet")
}
