package grouped

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	_ "github.com/kernel-labs/kernellabs/internal/gpu/emu"
	"github.com/kernel-labs/kernellabs/internal/gpu/emu/emucc"
	"github.com/kernel-labs/kernellabs/internal/gpu/emu/emucc/emutest"
	"github.com/kernel-labs/kernellabs/internal/grade"
	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/labtest"
	"github.com/kernel-labs/kernellabs/internal/labtest/coursedir"
	"github.com/kernel-labs/kernellabs/internal/matref"
	"github.com/kernel-labs/kernellabs/internal/results"
	"github.com/kernel-labs/kernellabs/internal/toolchain"
)

// emuDevice opens an emulated device, or skips the test when the emulator cannot run here.
func emuDevice(t *testing.T) gpu.Device {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: builds kernels for the emulator")
	}
	emutest.Need(t)
	be, _, err := gpu.Open("emu")
	if err != nil {
		t.Skipf("the emulator backend is not available: %v", err)
	}
	dev, err := be.Open(0)
	require.NoError(t, err)
	t.Cleanup(func() { dev.Close() })
	return dev
}

// buildKernel compiles a kernel file for the emulator and returns its entry.
func buildKernel(t *testing.T, dev gpu.Device, src, entry string, flags ...string) gpu.Kernel {
	t.Helper()
	root, err := lab.FindRoot(".")
	require.NoError(t, err)
	labDir, _ := filepath.Abs(".")
	src, _ = filepath.Abs(src)
	art, err := emucc.Build(context.Background(), toolchain.Request{Source: src,
		IncludeDirs: []string{filepath.Join(root, "labs", "common"), labDir}, Flags: flags})
	require.NoError(t, err, "building %s", src)
	mod, err := dev.LoadModule(art.Path)
	require.NoError(t, err)
	t.Cleanup(func() { mod.Close() })
	k, err := mod.Kernel(entry)
	require.NoError(t, err)
	return k
}

// newEnv is an Env on dev with the given kernels by variant name.
func newEnv(t *testing.T, dev gpu.Device, kernels map[string]gpu.Kernel) *lab.Env {
	t.Helper()
	s, err := dev.NewStream()
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return lab.NewEnv(dev, s, 11, kernels, nil)
}

// variantOnEmulator is a variant of the lab's suite with its kernel built for the emulator, and
// an Env that holds it.
func variantOnEmulator(t *testing.T, suite, variant string) (*lab.Env, *lab.Suite, *lab.Variant) {
	t.Helper()
	dev := emuDevice(t)
	s := labtest.Manifest(t).Suite(suite)
	v := s.Variant(variant)
	return newEnv(t, dev, map[string]gpu.Kernel{v.Name: buildKernel(t, dev, v.File, v.Entry)}), s, v
}

func problemNamed(t *testing.T, s *lab.Suite, name string) lab.Problem {
	t.Helper()
	for _, set := range [][]lab.Problem{s.Problems.Emu, s.Problems.Grade, s.Problems.GPU} {
		for _, p := range set {
			if p.Name == name {
				return p
			}
		}
	}
	t.Fatalf("suite %s has no problem %q", s.Name, name)
	return lab.Problem{}
}

// The check sees the poison, a stray write outside the groups and one wrong element.
func TestCheckCatchesUnwrittenStrayAndWrong(t *testing.T) {
	env, s, v := variantOnEmulator(t, "fp32", "persistent")
	dev := env.Device
	for _, name := range []string{"edge groups", "8 experts, Zipf, 3 empty"} {
		c, err := lab.NewTrial(env, Lab{}, s, v, problemNamed(t, s, name))
		require.NoError(t, err)
		gc := c.Case.(*groupedCase)

		require.NoError(t, c.Poison())
		require.NoError(t, env.Stream.Synchronize())
		rep, err := c.Check()
		require.NoError(t, err)
		assert.False(t, rep.OK, "%s: the poison alone passed the check", name)
		assert.Positive(t, rep.Unwritten)

		require.NoError(t, c.Poison())
		require.NoError(t, c.Run())
		require.NoError(t, env.Stream.Synchronize())
		rep, err = c.Check()
		require.NoError(t, err)
		require.True(t, rep.OK, "%s: %s", name, rep.Detail())
		assert.Contains(t, rep.Method, "every element")

		// A write into the first canary: a tile that strayed outside its group.
		canary := gc.lay.Canaries[0][0]
		one := float32(1)
		require.NoError(t, dev.CopyHtoD(gc.c+gpu.Ptr(4*canary), unsafe.Pointer(&one), 4, nil))
		rep, err = c.Check()
		require.NoError(t, err)
		assert.False(t, rep.OK, "%s: a write outside the groups passed", name)
		assert.Contains(t, rep.Note, "outside every group")

		// One wrong element of a group.
		require.NoError(t, c.Poison())
		require.NoError(t, c.Run())
		require.NoError(t, env.Stream.Synchronize())
		last := len(gc.shapes) - 1
		for gc.shapes[last].Empty() {
			last--
		}
		at := gc.lay.C[last] + int64(gc.shapes[last].M*gc.shapes[last].N) - 1
		var bad float32
		require.NoError(t, dev.CopyDtoH(unsafe.Pointer(&bad), gc.c+gpu.Ptr(4*at), 4, nil))
		bad += 0.5
		require.NoError(t, dev.CopyHtoD(gc.c+gpu.Ptr(4*at), unsafe.Pointer(&bad), 4, nil))
		rep, err = c.Check()
		require.NoError(t, err)
		assert.False(t, rep.OK, "%s: a wrong element passed", name)
		require.NotEmpty(t, rep.Mismatches)
		assert.Equal(t, int(at), rep.Mismatches[0].Index)

		w := c.Case.Work()
		assert.Positive(t, w.FLOPs)
		require.NoError(t, c.Release())
	}
}

// The bf16 check: the MoE-form WMMA kernel, the poison, and the work count.
func TestBF16MoEOnEmulator(t *testing.T) {
	env, s, v := variantOnEmulator(t, "bf16_moe", "wmma_moe")
	c, err := lab.NewTrial(env, Lab{}, s, v, problemNamed(t, s, "sizes 0, 1, 17, 129"))
	require.NoError(t, err)
	defer c.Release()
	require.NoError(t, c.Poison())
	require.NoError(t, env.Stream.Synchronize())
	rep, err := c.Check()
	require.NoError(t, err)
	assert.False(t, rep.OK)
	require.NoError(t, c.Run())
	require.NoError(t, env.Stream.Synchronize())
	rep, err = c.Check()
	require.NoError(t, err)
	assert.True(t, rep.OK, rep.Detail())
	assert.Less(t, rep.RelErr, 5e-3, "bf16 outputs: the rounding of C, no more")
	assert.Equal(t, 2*float64(1+17+129)*136*72, c.Case.Work().FLOPs)
}

// Variants that cannot describe a problem refuse it with a reason.
func TestRefusals(t *testing.T) {
	dev := emuDevice(t)
	m := labtest.Manifest(t)
	s := m.Suite("fp32")
	moe := &lab.Variant{Name: "moe_x", File: "x.cu", Entry: "x", Suite: s, Params: map[string]int64{ParamPersistent: 1, ParamMoE: 1}}
	env2 := newEnv(t, dev, map[string]gpu.Kernel{"moe_x": buildKernel(t, dev, "kernels/04_wmma.cu", "moe_wmma_persistent")})
	c2, err := lab.NewTrial(env2, Lab{}, s, moe, problemNamed(t, s, "3 groups"))
	require.NoError(t, err)
	defer c2.Release()
	err = c2.Run()
	var skip *lab.SkipError
	require.ErrorAs(t, err, &skip)
	assert.Contains(t, err.Error(), "differ in N or K")

	_, err = shapeOf(&lab.Variant{Name: "both", Params: map[string]int64{ParamLoop: 1, ParamPersistent: 1}})
	assert.Error(t, err)
	_, err = shapeOf(&lab.Variant{Name: "none", Params: map[string]int64{}})
	assert.Error(t, err)
	_, err = shapeOf(&lab.Variant{Name: "tma", Params: map[string]int64{ParamPersistent: 1, ParamTMA: 1}})
	assert.Error(t, err)
	_, err = shapeOf(&lab.Variant{Name: "gather", Params: map[string]int64{ParamPersistent: 1, ParamGather: 1}})
	assert.ErrorContains(t, err, "moe: 1")
	_, err = shapeOf(&lab.Variant{Name: "align", Params: map[string]int64{ParamPersistent: 1, ParamAlign: 0}})
	assert.ErrorContains(t, err, "bad launch parameters")
}

// ---- the exercise ----

// studentEdition is what `labrun export` hands out: each solution region replaced by a TODO.
func studentEdition(t *testing.T, src string) (string, int) {
	t.Helper()
	out, n, err := grade.StripSolutions("ex1_moe_gather.cu", []byte(src))
	require.NoError(t, err)
	return string(out), n
}

func TestExerciseSolutionRegions(t *testing.T) {
	labtest.NeedsSolutions(t)
	b, err := os.ReadFile("exercises/ex1_moe_gather.cu")
	require.NoError(t, err)
	begins, ends, open := 0, 0, false
	for _, line := range strings.Split(string(b), "\n") {
		switch strings.TrimSpace(line) {
		case "// BEGIN SOLUTION":
			assert.False(t, open, "nested BEGIN SOLUTION")
			assert.Equal(t, "// BEGIN SOLUTION", strings.TrimLeft(line, " \t"), "on a line of its own")
			begins++
			open = true
		case "// END SOLUTION":
			assert.True(t, open, "END SOLUTION without BEGIN")
			ends++
			open = false
		}
	}
	assert.Equal(t, 3, begins)
	assert.Equal(t, begins, ends)
	assert.False(t, open)
	stub, n := studentEdition(t, string(b))
	assert.Equal(t, 3, n)
	assert.NotContains(t, stub, "SOLUTION")
	assert.NotContains(t, stub, "rows[r0 + r]", "the row lookup is gone")
	assert.NotContains(t, stub, "load4(arow[l]", "the gathered load is gone")
	assert.NotContains(t, stub, "kl_tile_prefix_moe(", "the scheduler's loop is gone")
	assert.Contains(t, stub, "ra[l] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);", "the stub lines make it compile")
	assert.Contains(t, stub, "arow[l] = nullptr;")
}

// The student edition compiles and fails every grade problem; the reference passes them.
func TestExerciseStubFailsReferencePasses(t *testing.T) {
	labtest.NeedsSolutions(t)
	dev := emuDevice(t)
	m := labtest.Manifest(t)
	s := m.Suite("fp32_moe")
	v := s.Variant("ex1_moe_gather")
	src, err := os.ReadFile(v.File)
	require.NoError(t, err)
	stub, _ := studentEdition(t, string(src))
	dir := t.TempDir()
	stubFile := filepath.Join(dir, "ex1_moe_gather.cu")
	require.NoError(t, os.WriteFile(stubFile, []byte(stub), 0o644))

	ref := newEnv(t, dev, map[string]gpu.Kernel{v.Name: buildKernel(t, dev, v.File, v.Entry)})
	student := newEnv(t, dev, map[string]gpu.Kernel{v.Name: buildKernel(t, dev, stubFile, v.Entry)})
	for _, p := range s.Problems.Grade {
		for _, tc := range []struct {
			env  *lab.Env
			pass bool
		}{{ref, true}, {student, false}} {
			c, err := lab.NewTrial(tc.env, Lab{}, s, v, p)
			require.NoError(t, err)
			require.NoError(t, c.Poison())
			require.NoError(t, c.Run())
			require.NoError(t, tc.env.Stream.Synchronize())
			rep, err := c.Check()
			require.NoError(t, err)
			assert.Equal(t, tc.pass, rep.OK, "%s (reference %v): %s", p.Name, tc.pass, rep.String())
			require.NoError(t, c.Release())
		}
	}
}

// ---- the reference check without a device ----

func randomProduct(seed uint64, m, n, k int) *matref.Product {
	p := &matref.Product{M: m, N: n, K: k, Alpha: 1, A: make([]float32, m*k), B: make([]float32, k*n)}
	matref.FillHash(p.A, seed)
	matref.FillHash(p.B, seed+1)
	return p
}

func TestGroupCheck(t *testing.T) {
	small := randomProduct(1, 37, 29, 61)
	big := randomProduct(2, 256, 520, 600) // 8e7 multiply-adds: Freivalds
	require.Greater(t, int64(big.M)*int64(big.N)*int64(big.K), int64(FullCheckLimit))
	outS, outB := labtest.NaiveProduct(small), labtest.NaiveProduct(big)

	run := func(mutate func(s, b []float32)) (ok bool, rel float64, note string) {
		s := append([]float32(nil), outS...)
		b := append([]float32(nil), outB...)
		if mutate != nil {
			mutate(s, b)
		}
		gc := newGroupCheck(1e-5)
		gc.group(small, s, 0, "group 0", 7)
		gc.group(big, b, len(s), "group 1", 8)
		r := gc.report()
		return r.OK, r.RelErr, r.Note + " | " + r.Method
	}
	ok, rel, note := run(nil)
	assert.True(t, ok, note)
	assert.Less(t, rel, 1e-6)
	assert.Contains(t, note, "1 element by element, 1 by Freivalds")

	ok, _, note = run(func(s, b []float32) { s[5] += 0.01 })
	assert.False(t, ok, "a wrong element of the small group")
	assert.Contains(t, note, "group 0")

	norm := 0.0
	for _, v := range outB {
		norm += float64(v) * float64(v)
	}
	ok, _, note = run(func(s, b []float32) { b[101*520+333] += float32(1e-3 * math.Sqrt(norm)) })
	assert.False(t, ok, "Freivalds sees one wrong element of the big group")
	assert.Contains(t, note, "group 1")

	ok, rel, _ = run(func(s, b []float32) { b[7] = float32(math.NaN()) })
	assert.False(t, ok)
	assert.True(t, math.IsInf(rel, 1))

	// A wrong last corner is caught by the samples even when it is small against ‖C‖.
	ok, _, _ = run(func(s, b []float32) { b[len(b)-1] += 0.05 })
	assert.False(t, ok)
}

func TestBF16Rounding(t *testing.T) {
	for _, tc := range []struct {
		in   float32
		want uint16
	}{
		{0, 0}, {1, 0x3F80}, {-2, 0xC000},
		{math.Float32frombits(0x3F808000), 0x3F80}, // halfway, even below: stays
		{math.Float32frombits(0x3F818000), 0x3F82}, // halfway, odd below: up to even
		{float32(math.Inf(1)), 0x7F80},
	} {
		assert.Equal(t, tc.want, matref.BF16FromFloat32(tc.in), "%v", tc.in)
	}
	assert.True(t, math.IsNaN(float64(matref.Float32FromBF16(0xFFFF))), "the poison is a NaN")
	for i := uint64(0); i < 10000; i++ {
		v := matref.HashUniform(99, i)
		require.True(t, v >= -1 && v < 1, "%v", v)
	}
	assert.NotEqual(t, matref.HashUniform(1, 5), matref.HashUniform(2, 5))
}

// A peer gets the groups exactly as the lab's kernels do (a MoE problem's sizes come from its
// seed, which the Python side cannot reproduce), and its rates come from the lab's own work.
func TestPeerProblemCarriesTheGroups(t *testing.T) {
	m := labtest.Manifest(t)
	s := m.Suite("bf16_moe")
	require.NotNil(t, s)
	p := lab.Problem{Name: "moe", Params: map[string]int64{"experts": 8, "tokens": 300, "dist": 1, "empty": 2, "n": 72, "k": 40}}
	params, work, err := Lab{}.PeerProblem(s, p)
	require.NoError(t, err)
	shapes, err := GroupsOf(p)
	require.NoError(t, err)

	raw, err := json.Marshal(params) // what the script reads
	require.NoError(t, err)
	var got struct {
		Groups   [][3]int `json:"groups"`
		SharedNK bool     `json:"shared_nk"`
		Data     string   `json:"data"`
	}
	require.NoError(t, json.Unmarshal(raw, &got))
	require.Len(t, got.Groups, len(shapes))
	for i, g := range shapes {
		assert.Equal(t, [3]int{g.M, g.N, g.K}, got.Groups[i])
	}
	assert.True(t, got.SharedNK)
	assert.Equal(t, "bf16", got.Data)
	assert.Equal(t, totalFLOPs(shapes), work.FLOPs)

	_, _, err = Lab{}.PeerProblem(s, lab.Problem{Name: "bad", Params: map[string]int64{"g": 1}})
	assert.ErrorContains(t, err, "group 0 has no m0")
}

// The floor counts the weights of the experts with rows only, and each ok variant's time over it.
func TestExpertWeights(t *testing.T) {
	oneToken := map[string]int64{"experts": 8, "tokens": 2, "empty": 6, "n": 1024, "k": 512}
	explicit := map[string]int64{"g": 3, "m0": 0, "m1": 4, "m2": 1, "n": 256, "k": 128}
	entries := []lab.EntryView{
		{Suite: "bf16_decode", Variant: "decode_stream", Problem: "one token", Params: oneToken, OK: true, PerOpUs: 2.5},
		{Suite: "bf16_decode", Variant: "wgmma_moe", Problem: "one token", Params: oneToken, OK: true, PerOpUs: 5},
		{Suite: "bf16_decode", Variant: "broken", Problem: "one token", Params: oneToken, OK: false, PerOpUs: 1},
		{Suite: "bf16_moe", Variant: "decode_stream", Problem: "explicit", Params: explicit, OK: true, PerOpUs: 1},
		{Suite: "fp32", Variant: "persistent", Problem: "explicit", Params: explicit, OK: true, PerOpUs: 1},
	}
	fl := lab.ReadFloorsOf(entries, 2000, expertWeights) // 2000 GB/s: 2000 bytes a nanosecond
	require.Len(t, fl.Suites, 2, "bf16 suites only")
	f := fl.Suites["bf16_decode"]["one token"]
	require.NotNil(t, f)
	assert.Equal(t, 2, f.Matrices)
	assert.Equal(t, float64(2*2*512*1024), f.WeightBytes)
	assert.InDelta(t, f.WeightBytes/2000/1e3, f.Us, 1e-9)
	assert.Equal(t, map[string]float64{"decode_stream": 2.5 / f.Us, "wgmma_moe": 5 / f.Us}, f.OverFloor, "failed entries have no ratio")
	g := fl.Suites["bf16_moe"]["explicit"]
	require.NotNil(t, g)
	assert.Equal(t, 2, g.Matrices, "the empty group's weights are not read")
	assert.Equal(t, float64(2*2*128*256), g.WeightBytes)
}

// Derive divides by the HBM bandwidth that lab 01 recorded for the same device, says where it
// read it, records nothing on the emulator, and says what to run when lab 01 has no results.
func TestDeriveReadsLab01(t *testing.T) {
	root := coursedir.Root(t)
	gpuInfo := gpu.DeviceInfo{Name: "NVIDIA Test GPU", Backend: "cuda"}
	entries := []lab.EntryView{{Suite: "bf16_decode", Variant: "decode_stream", Problem: "p", OK: true, PerOpUs: 10,
		Params: map[string]int64{"experts": 4, "tokens": 1, "empty": 3, "n": 1000, "k": 1000}}}

	_, err := Lab{}.Derive(gpuInfo, entries)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "labrun 01")

	measured := 4000.0
	f := &results.File{Lab: "01_device_props", Device: gpuInfo, Extra: map[string]any{
		"hbm_gbps": results.Ceiling{Unit: "GB/s", Measured: &measured}}}
	require.NoError(t, results.Save(results.PathFor(root, gpuInfo, "01_device_props"), f))
	extra, err := Lab{}.Derive(gpuInfo, entries)
	require.NoError(t, err)
	fl, ok := extra[lab.ReadFloorKey].(lab.ReadFloors)
	require.True(t, ok, "%T", extra[lab.ReadFloorKey])
	assert.Equal(t, measured, fl.HBMGBps)
	assert.Equal(t, "results/nvidia-test-gpu/01_device_props.json ceiling hbm_gbps", fl.Source)
	p := fl.Suites["bf16_decode"]["p"]
	require.NotNil(t, p)
	assert.InDelta(t, 2e6/4000/1e3, p.Us, 1e-12, "one expert's 1000×1000 bf16 weights at 4000 GB/s")
	assert.InDelta(t, 10/p.Us, p.OverFloor["decode_stream"], 1e-9)

	extra, err = Lab{}.Derive(gpu.DeviceInfo{Name: "emu", Emulated: true}, entries)
	assert.NoError(t, err)
	assert.Nil(t, extra, "no floor on the emulator")
}
