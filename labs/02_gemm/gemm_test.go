package gemm

import (
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kernel-labs/kernellabs/internal/matref"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/labtest"
)

func TestManifestLoads(t *testing.T) {
	m := labtest.Manifest(t)
	assert.Equal(t, "02", m.ID)
	assert.Equal(t, LabDir, m.Name)
	for _, name := range []string{"fp32", "fp32_tiles", "bf16"} {
		require.NotNil(t, m.Suite(name), "suite %s", name)
	}
	assert.Equal(t, lab.FP32, lab.PrecisionOf(m.Suite("fp32")))
	assert.Equal(t, lab.FP32, lab.PrecisionOf(m.Suite("fp32_tiles")))
	assert.Equal(t, lab.BF16, lab.PrecisionOf(m.Suite("bf16")))
	assert.Equal(t, "cublas_sgemm", m.Suite("fp32").Baseline)
	assert.Equal(t, "cublaslt_bf16", m.Suite("bf16").Baseline)
	assert.Equal(t, 1e-5, m.Suite("fp32").Tolerance)
	assert.Equal(t, 1e-3, m.Suite("bf16").Tolerance)
}

// Every problem parses, the emulator problems are small, and the grade set has the edge cases.
func TestManifestProblems(t *testing.T) {
	m := labtest.Manifest(t)
	labtest.EachProblem(t, m, func(s *lab.Suite, set string, p lab.Problem) {
		sh, err := ShapeOf(p)
		require.NoError(t, err, "%s/%s %s", s.Name, set, p.Name)
		if set == "emu" {
			assert.LessOrEqual(t, max(sh.M, sh.N, sh.K), 256, "%s: emulator problem %s", s.Name, p.Name)
		}
	})
	grade := map[string]bool{}
	for _, p := range m.Suite("fp32").Problems.Grade {
		grade[p.Name] = true
	}
	for _, want := range []string{"1×1×1", "17×33×65", "127³", "128³", "129³"} {
		assert.True(t, grade[want], "grade set has %s", want)
	}
}

// Every kernel variant's entry is an extern "C" __global__ function of its file; GPU-only
// variants say why the emulator skips them; library variants name a call the driver knows.
func TestManifestVariantsPointAtKernels(t *testing.T) {
	m := labtest.Manifest(t)
	entryRE := func(entry string) *regexp.Regexp {
		return regexp.MustCompile(`extern "C" __global__ void ((__\w+__|KL_LAUNCH_BOUNDS)\([^)]*\)\s*)*` + regexp.QuoteMeta(entry) + `\(`)
	}
	for _, s := range m.Suites {
		for _, v := range s.Variants {
			if v.Library != "" {
				assert.Contains(t, []string{LibSgemm, LibGemmEx, LibLt}, v.Library, "%s/%s", s.Name, v.Name)
				continue
			}
			if v.IsPeer() { // a Python script: the manifest reader checks it exists and needs torch
				continue
			}
			src, err := os.ReadFile(filepath.Join(m.Dir, v.File))
			require.NoError(t, err)
			assert.Regexp(t, entryRE(v.Entry), string(src), "%s/%s: entry %s in %s", s.Name, v.Name, v.Entry, v.File)
			assert.True(t, strings.HasPrefix(string(src), `#include "kl.cuh"`), "%s includes kl.cuh first", v.File)
			usesPTX, gpuOnly, err := labtest.PTXOnGPUOnly(filepath.Join(m.Dir, v.File), filepath.Join(m.Dir, "..", "common"))
			require.NoError(t, err)
			if usesPTX {
				assert.Contains(t, v.Needs, "nvidia", "%s/%s uses inline PTX: it is NVIDIA-only", s.Name, v.Name)
			}
			if gpuOnly {
				assert.NotEmpty(t, v.EmuSkip, "%s/%s uses inline PTX that has no emulator form: it needs emu_skip", s.Name, v.Name)
				assert.Contains(t, v.Needs, "gpu", "%s/%s uses inline PTX", s.Name, v.Name)
			} else {
				assert.Empty(t, v.EmuSkip, "%s/%s runs on the emulator", s.Name, v.Name)
			}
			if v.Params[ParamTMA] != 0 {
				assert.Contains(t, v.Needs, "sm_90a", "%s/%s uses TMA and wgmma", s.Name, v.Name)
			}
			if v.Params[ParamSmem] > 0 {
				assert.LessOrEqual(t, v.Params[ParamSmem], int64(227<<10), "%s/%s: shared memory beyond Hopper's 227 KiB", s.Name, v.Name)
			}
		}
	}
}

// The exercise files mark their solution regions exactly, on lines of their own.
func TestExerciseSolutionRegions(t *testing.T) {
	labtest.NeedsSolutions(t)
	for _, f := range []string{"exercises/ex1_smem_tiling.cu", "exercises/ex2_linear.cu"} {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		begins, ends, open := 0, 0, false
		for _, line := range strings.Split(string(b), "\n") {
			switch strings.TrimSpace(line) {
			case "// BEGIN SOLUTION":
				assert.False(t, open, "%s: nested BEGIN SOLUTION", f)
				begins++
				open = true
			case "// END SOLUTION":
				assert.True(t, open, "%s: END SOLUTION without BEGIN", f)
				ends++
				open = false
			}
		}
		assert.Equal(t, 1, begins, f)
		assert.Equal(t, begins, ends, f)
		assert.False(t, open, f)
	}
}

func TestBF16Rounding(t *testing.T) {
	for _, tc := range []struct {
		in   float32
		want uint16
	}{
		{0, 0x0000},
		{1, 0x3F80},
		{-2, 0xC000},
		{float32(math.Float32frombits(0x3F808000)), 0x3F80}, // exactly halfway, even below: stays
		{float32(math.Float32frombits(0x3F818000)), 0x3F82}, // halfway, odd below: rounds up to even
		{float32(math.Float32frombits(0x3F808001)), 0x3F81}, // just above halfway: up
		{float32(math.Float32frombits(0x3F807FFF)), 0x3F80}, // just below halfway: down
		{float32(math.Inf(1)), 0x7F80},
		{math.MaxFloat32, 0x7F80}, // beyond the largest bf16: infinity, as __float2bfloat16_rn
	} {
		assert.Equal(t, tc.want, matref.BF16FromFloat32(tc.in), "bf16(%v = %#08x)", tc.in, math.Float32bits(tc.in))
	}
	nan := matref.BF16FromFloat32(float32(math.NaN()))
	assert.True(t, math.IsNaN(float64(matref.Float32FromBF16(nan))), "NaN stays NaN (%#04x)", nan)
	// Round trip of every bf16 value that is a number.
	for h := 0; h < 1<<16; h++ {
		f := matref.Float32FromBF16(uint16(h))
		if f == f {
			require.Equal(t, uint16(h), matref.BF16FromFloat32(f), "%#04x", h)
		}
	}
	// Rounding error is at most half a unit in the last place: 2^-8 relative (7 stored bits).
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 10000; i++ {
		x := r.Float32()*2 - 1
		y := matref.Float32FromBF16(matref.BF16FromFloat32(x))
		assert.LessOrEqual(t, math.Abs(float64(x-y)), math.Abs(float64(x))/256+1e-45)
	}
}

func randomProduct(seed uint64, m, n, k int, beta0 bool) *matref.Product {
	p := &matref.Product{M: m, N: n, K: k, Alpha: Alpha, Beta: Beta, A: make([]float32, m*k), B: make([]float32, k*n)}
	matref.FillUniform(p.A, seed)
	matref.FillUniform(p.B, seed+1)
	if beta0 {
		p.Beta = 0
	} else {
		p.C0 = make([]float32, m*n)
		matref.FillUniform(p.C0, seed+2)
	}
	return p
}

func TestReferenceSmall(t *testing.T) {
	p := &matref.Product{M: 2, N: 2, K: 3, Alpha: 2, Beta: 0.5,
		A:  []float32{1, 2, 3, 4, 5, 6},
		B:  []float32{1, -1, 0, 2, -1, 0},
		C0: []float32{10, 20, 30, 40}}
	ref, scale := p.Reference()
	// A·B = [[1-3, -1+4], [4-6, -4+10]] = [[-2, 3], [-2, 6]]
	assert.Equal(t, []float64{2*-2 + 5, 2*3 + 10, 2*-2 + 15, 2*6 + 20}, ref)
	assert.Equal(t, []float64{2*(1+3) + 5, 2*(1+4) + 10, 2*(4+6) + 15, 2*(4+10) + 20}, scale)
	w, s := p.Entry(1, 1)
	assert.Equal(t, ref[3], w)
	assert.Equal(t, scale[3], s)
}

func TestCompareFull(t *testing.T) {
	p := randomProduct(7, 37, 29, 61, false)
	ref, scale := p.Reference()
	out := labtest.NaiveProduct(p)
	rep := matref.CheckFull(out, ref, scale, p.Terms(), 1e-5)
	assert.True(t, rep.OK, rep.Detail())
	assert.Less(t, rep.RelErr, 1e-6)

	// One wrong element fails the check even though the norm barely moves.
	bad := append([]float32(nil), out...)
	bad[5*29+7] += 0.01
	rep = matref.CheckFull(bad, ref, scale, p.Terms(), 1e-5)
	assert.False(t, rep.OK)
	require.NotEmpty(t, rep.Mismatches)
	assert.Equal(t, 5*29+7, rep.Mismatches[0].Index)

	// An unwritten element (the NaN poison) fails it.
	bad = append([]float32(nil), out...)
	bad[0] = float32(math.NaN())
	rep = matref.CheckFull(bad, ref, scale, p.Terms(), 1e-5)
	assert.False(t, rep.OK)
	assert.Equal(t, 1, rep.Unwritten)

	// bf16-level noise passes the bf16 tolerance and fails the fp32 one.
	noisy := append([]float32(nil), out...)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range noisy {
		noisy[i] *= 1 + float32(r.NormFloat64())*1e-4
	}
	assert.False(t, matref.CheckFull(noisy, ref, scale, p.Terms(), 1e-5).OK)
	assert.True(t, matref.CheckFull(noisy, ref, scale, p.Terms(), 1e-3).OK)
}

func TestFreivaldsAcceptsACorrectProduct(t *testing.T) {
	for _, beta0 := range []bool{false, true} {
		p := randomProduct(11, 150, 170, 190, beta0)
		out := labtest.NaiveProduct(p)
		samples := matref.SampleEntries(p.M, p.N, 64, 5)
		rep := matref.Freivalds(p, out, matref.FreivaldsVectors, samples, 9, 1e-5)
		assert.True(t, rep.OK, "beta0=%v: %s", beta0, rep.Detail())
		assert.Less(t, rep.RelErr, 1e-6)
		assert.Equal(t, p.M*p.N, rep.Checked)
	}
}

func TestFreivaldsDetectsOneWrongElement(t *testing.T) {
	p := randomProduct(12, 150, 170, 190, false)
	out := labtest.NaiveProduct(p)
	ref, _ := p.Reference()
	norm := 0.0
	for _, v := range ref {
		norm += v * v
	}
	norm = math.Sqrt(norm)
	// An error of 1e-3·‖C‖ in one element, far from any sample: Freivalds sees it (±1 vectors
	// carry every element's error at full weight), whatever the random vectors are.
	i, j := 77, 91
	samples := matref.SampleEntries(p.M, p.N, 64, 5)
	for _, s := range samples {
		require.False(t, s[0] == i && s[1] == j, "the planted element must not be a sample")
	}
	for seed := uint64(0); seed < 20; seed++ {
		bad := append([]float32(nil), out...)
		bad[i*p.N+j] += float32(1e-3 * norm)
		rep := matref.Freivalds(p, bad, matref.FreivaldsVectors, samples, seed, 1e-5)
		assert.False(t, rep.OK, "seed %d: %s", seed, rep.String())
		assert.Greater(t, rep.RelErr, 5e-4)
	}
	// A NaN anywhere fails it too.
	bad := append([]float32(nil), out...)
	bad[3] = float32(math.NaN())
	rep := matref.Freivalds(p, bad, matref.FreivaldsVectors, samples, 1, 1e-5)
	assert.False(t, rep.OK)
	assert.Equal(t, 1, rep.Unwritten)
}

func TestFreivaldsSamplesCatchAWrongCorner(t *testing.T) {
	p := randomProduct(13, 64, 48, 40, false)
	out := labtest.NaiveProduct(p)
	samples := matref.SampleEntries(p.M, p.N, 64, 5)
	bad := append([]float32(nil), out...)
	bad[(p.M-1)*p.N+p.N-1] += 0.05 // small against ‖C‖, large against the element's error scale
	rep := matref.Freivalds(p, bad, matref.FreivaldsVectors, samples, 2, 1e-3)
	assert.False(t, rep.OK, rep.Detail())
	require.NotEmpty(t, rep.Mismatches)
	assert.Equal(t, (p.M-1)*p.N+p.N-1, rep.Mismatches[0].Index)
}

func TestSampleEntries(t *testing.T) {
	s := matref.SampleEntries(100, 300, 64, 1)
	assert.Len(t, s, 64)
	seen := map[[2]int]bool{}
	for _, e := range s {
		assert.False(t, seen[e], "sample %v twice", e)
		seen[e] = true
		assert.True(t, e[0] >= 0 && e[0] < 100 && e[1] >= 0 && e[1] < 300, "%v inside", e)
	}
	for _, c := range [][2]int{{0, 0}, {0, 299}, {99, 0}, {99, 299}} {
		assert.True(t, seen[c], "corner %v sampled", c)
	}
	// A 1×1 output has one element to sample.
	assert.Equal(t, [][2]int{{0, 0}}, matref.SampleEntries(1, 1, 64, 1))
}

// The grid of every kernel variant covers C for the edge sizes; refusals say why.
func TestLaunchShapes(t *testing.T) {
	m := labtest.Manifest(t)
	sizes := [][3]int{{1, 1, 1}, {17, 33, 65}, {127, 127, 127}, {128, 128, 128}, {129, 129, 129}, {4097, 4097, 4097}, {4096, 11008, 4096}}
	for _, s := range m.Suites {
		for _, v := range s.Variants {
			if v.Library != "" {
				continue
			}
			for _, sz := range sizes {
				mm, nn, kk := sz[0], sz[1], sz[2]
				ls, err := shapeFor(v, mm, nn, kk, 132, 1024)
				if err != nil {
					require.True(t, isSkip(err), "%s %v: %v", v.Name, sz, err)
					assert.NotEmpty(t, err.Error(), "a refusal says why")
					continue
				}
				assert.GreaterOrEqual(t, ls.Block.Count(), int64(32), "%s: at least a warp", v.Name)
				assert.Zero(t, int(ls.Grid.X)%ls.Cluster, "%s %v: whole clusters", v.Name, sz)
				if ls.StreamK > 0 { // every slot streams a share, whatever the tiles
					assert.Equal(t, 132*int(v.Int(ParamCTAsPerSM, 1)), int(ls.Grid.X), "%s %v", v.Name, sz)
					continue
				}
				if ls.Persistent {
					assert.Equal(t, uint32(1), ls.Grid.Y)
					assert.LessOrEqual(t, int(ls.Grid.X), 132)
					tiles := lab.CeilDiv(mm, ls.BM) * lab.CeilDiv(nn, ls.BN)
					assert.LessOrEqual(t, int(ls.Grid.X), lab.CeilDiv(tiles, ls.Cluster)*ls.Cluster, "%s %v: no more clusters than tiles need", v.Name, sz)
					continue
				}
				// split_k blocks share a tile of C: the grid's columns of tiles are grid.x / split_k.
				split := int(max(v.Params[ParamSplitK], 1))
				tilesX := int(ls.Grid.X) / split
				assert.GreaterOrEqual(t, tilesX*ls.BN, nn, "%s %v: grid covers N", v.Name, sz)
				assert.GreaterOrEqual(t, int(ls.Grid.Y)*ls.BM, mm, "%s %v: grid covers M", v.Name, sz)
				assert.Less(t, (tilesX-1)*ls.BN, nn, "%s %v: no block entirely outside N", v.Name, sz)
				assert.Less(t, (int(ls.Grid.Y)-1)*ls.BM, mm, "%s %v: no block entirely outside M", v.Name, sz)
			}
		}
	}
}

func TestLaunchRefusals(t *testing.T) {
	tma := map[string]int64{ParamBM: 128, ParamBN: 256, ParamThreads: 384, ParamTMA: 1}
	_, err := shapeFor(variant("w", tma), 4097, 4097, 4097, 132, 1024)
	require.Error(t, err)
	assert.True(t, isSkip(err))
	assert.Contains(t, err.Error(), "multiples of 8")
	_, err = shapeFor(variant("w", tma), 4097, 4096, 4096, 132, 1024) // M is free
	assert.NoError(t, err)

	slow := map[string]int64{ParamBM: 32, ParamBN: 32, ParamBX: 32, ParamBY: 32, ParamMaxGFLOP: 150}
	_, err = shapeFor(variant("naive", slow), 8192, 8192, 8192, 132, 1024)
	assert.True(t, isSkip(err))
	assert.Contains(t, err.Error(), "too slow")
	_, err = shapeFor(variant("naive", slow), 4096, 4096, 4096, 132, 1024)
	assert.NoError(t, err)

	_, err = shapeFor(variant("big", map[string]int64{ParamThreads: 2048}), 16, 16, 16, 132, 1024)
	assert.Error(t, err)
	assert.False(t, isSkip(err), "a bad block size is an error of the manifest, not a refusal")

	ls, err := shapeFor(variant("p", map[string]int64{ParamBM: 128, ParamBN: 256, ParamThreads: 384, ParamPersistent: 1}), 8192, 8192, 8192, 132, 1024)
	require.NoError(t, err)
	assert.Equal(t, uint32(132), ls.Grid.X, "one block per SM")
	ls, err = shapeFor(variant("p", map[string]int64{ParamBM: 128, ParamBN: 256, ParamThreads: 384, ParamPersistent: 1}), 128, 256, 64, 132, 1024)
	require.NoError(t, err)
	assert.Equal(t, uint32(1), ls.Grid.X, "no more blocks than tiles")

	// Clusters: a persistent grid of whole clusters, at most one block per SM; a split-K grid has
	// split_k blocks per tile of C.
	pc := map[string]int64{ParamBM: 128, ParamBN: 256, ParamThreads: 384, ParamPersistent: 1, ParamCluster: 2}
	ls, err = shapeFor(variant("c", pc), 8192, 8192, 8192, 133, 1024)
	require.NoError(t, err)
	assert.Equal(t, uint32(132), ls.Grid.X, "66 whole clusters of 2 on 133 SMs")
	ls, err = shapeFor(variant("c", pc), 128, 256, 64, 132, 1024)
	require.NoError(t, err)
	assert.Equal(t, uint32(2), ls.Grid.X, "one tile still takes a whole cluster")
	sk := map[string]int64{ParamBM: 64, ParamBN: 128, ParamThreads: 160, ParamSplitK: 4, ParamCluster: 4}
	ls, err = shapeFor(variant("s", sk), 16, 8192, 8192, 132, 1024)
	require.NoError(t, err)
	assert.Equal(t, gpu.D2(64*4, 1), ls.Grid)
	_, err = shapeFor(variant("s", map[string]int64{ParamCluster: 17}), 16, 16, 16, 132, 1024)
	assert.ErrorContains(t, err, "cluster")

}

// The tensor maps Run builds for the wgmma kernels (bm 128, bk 64, cbox 64 × 64), through lab.BF16Tiles.
func TestTensorMapDescs(t *testing.T) {
	a, b := lab.BF16Tiles(0x1000, 4096, 4096, 128, 64), lab.BF16Tiles(0x2000, 4096, 11008, 64, 64)
	assert.Equal(t, []uint64{4096, 4096}, a.Dims, "A: K innermost, then M")
	assert.Equal(t, []uint64{4096 * 2}, a.Strides)
	assert.Equal(t, []uint32{64, 128}, a.Box)
	assert.Equal(t, []uint64{11008, 4096}, b.Dims, "B: N innermost, then K")
	assert.Equal(t, []uint64{11008 * 2}, b.Strides)
	assert.Equal(t, []uint32{64, 64}, b.Box, "64 bf16 = 128 bytes, the swizzle span")
	for _, d := range []int{a.Swizzle, b.Swizzle} {
		assert.Equal(t, 128, d)
	}
	assert.Zero(t, a.Strides[0]%16)
	assert.Zero(t, b.Strides[0]%16)
	assert.LessOrEqual(t, int(a.Box[0])*2, 128, "the inner box fits the 128-byte swizzle")
}

// A tensor map of C (tmac) is a bf16 TMA store target: it needs the A and B maps and a bf16 C, and
// a box whose rows fit the 128-byte swizzle; a wrong combination is an error of the manifest.
func TestLaunchCTensorMap(t *testing.T) {
	base := func(extra map[string]int64) map[string]int64 {
		p := map[string]int64{ParamBM: 128, ParamBN: 256, ParamThreads: 384, ParamPersistent: 1}
		for k, v := range extra {
			p[k] = v
		}
		return p
	}
	for _, tc := range []struct {
		name   string
		params map[string]int64
		err    string
	}{
		{"ok", base(map[string]int64{ParamTMA: 1, ParamCBF16: 1, ParamTMAC: 1}), ""},
		{"no tma", base(map[string]int64{ParamCBF16: 1, ParamTMAC: 1}), "needs tma: 1 and cbf16: 1"},
		{"fp32 C", base(map[string]int64{ParamTMA: 1, ParamTMAC: 1}), "needs tma: 1 and cbf16: 1"},
		{"wide box", base(map[string]int64{ParamTMA: 1, ParamCBF16: 1, ParamTMAC: 1, ParamCBoxN: 128}), "at most 128 bytes"},
		{"tall box", base(map[string]int64{ParamTMA: 1, ParamCBF16: 1, ParamTMAC: 1, ParamCBoxM: 512}), "rows must be 1..256"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ls, err := shapeFor(variant("v", tc.params), 4096, 4096, 4096, 132, 1024)
			if tc.err != "" {
				require.Error(t, err)
				assert.False(t, isSkip(err), "a manifest error, not a refusal")
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.True(t, ls.TMAC)
			assert.True(t, ls.CBF16)
			assert.Equal(t, [2]int{64, 64}, ls.CBox, "the default box: 64 rows of 64 bf16")
		})
	}
}

func TestCTensorMapDesc(t *testing.T) {
	d := lab.BF16Tiles(0x3000, 4096, 11008, 64, 64)
	assert.Equal(t, gpu.BF16, d.DataType)
	assert.Equal(t, []uint64{11008, 4096}, d.Dims, "C: N innermost, then M")
	assert.Equal(t, []uint64{11008 * 2}, d.Strides, "bf16 rows")
	assert.Equal(t, []uint32{64, 64}, d.Box, "columns, then rows")
	assert.Equal(t, 128, d.Swizzle, "the layout the kernel writes its staging buffer in")
}

// Variants that write a bf16 C are checked with the rounding of the output allowed: a correct
// product rounded to bf16 passes, the same fails the suite's fp32-output tolerance, and a dropped
// k16 step fails either way.
func TestBF16OutputTolerance(t *testing.T) {
	assert.True(t, WritesBF16(&lab.Variant{Library: LibLt}))
	assert.True(t, WritesBF16(&lab.Variant{File: "k.cu", Params: map[string]int64{ParamCBF16: 1}}))
	assert.False(t, WritesBF16(&lab.Variant{Library: LibGemmEx}))
	assert.False(t, WritesBF16(&lab.Variant{File: "k.cu", Params: map[string]int64{ParamTMA: 1}}))

	const m, n, k, tol = 64, 48, 256, 1e-3
	p := matref.Product{M: m, N: n, K: k, Alpha: Alpha, Beta: 0, A: make([]float32, m*k), B: make([]float32, k*n)}
	matref.FillUniform(p.A, 1)
	matref.FillUniform(p.B, 2)
	for i, v := range matref.RoundBF16(p.A) {
		p.A[i] = matref.Float32FromBF16(v)
	}
	for i, v := range matref.RoundBF16(p.B) {
		p.B[i] = matref.Float32FromBF16(v)
	}
	ref, scale := p.Reference()
	out := make([]float32, len(ref))
	for i, r := range ref {
		out[i] = matref.Float32FromBF16(matref.BF16FromFloat32(float32(r)))
	}
	assert.True(t, matref.CheckFull(out, ref, scale, p.Terms(), tol+BF16OutputRounding).OK, "a correct bf16 C passes")
	assert.False(t, matref.CheckFull(out, ref, scale, p.Terms(), tol).OK, "bf16 rounding exceeds the fp32-output tolerance")

	dropped := p
	dropped.K = k - 16 // the same rows of A and B, without the last k16 step
	dropped.A = make([]float32, m*(k-16))
	for i := 0; i < m; i++ {
		copy(dropped.A[i*(k-16):(i+1)*(k-16)], p.A[i*k:i*k+k-16])
	}
	dropped.B = p.B[:(k-16)*n]
	short, _ := dropped.Reference()
	for i, r := range short {
		out[i] = matref.Float32FromBF16(matref.BF16FromFloat32(float32(r)))
	}
	assert.False(t, matref.CheckFull(out, ref, scale, p.Terms(), tol+BF16OutputRounding).OK, "a dropped k16 step fails")
}

func TestShapeAndWork(t *testing.T) {
	sh, err := ShapeOf(lab.Problem{Name: "sq", Params: map[string]int64{"m": 64}})
	require.NoError(t, err)
	assert.Equal(t, Shape{lab.MNK{M: 64, N: 64, K: 64}, Beta}, sh)
	sh, err = ShapeOf(lab.Problem{Name: "r", Params: map[string]int64{"m": 4096, "n": 11008, "k": 4096, "beta0": 1}})
	require.NoError(t, err)
	assert.Zero(t, sh.Beta)
	_, err = ShapeOf(lab.Problem{Name: "zero", Params: map[string]int64{"m": 0}})
	assert.Error(t, err)
	_, err = ShapeOf(lab.Problem{Name: "huge", Params: map[string]int64{"m": 1 << 16, "n": 1 << 16, "k": 8}})
	assert.ErrorContains(t, err, "32-bit")

	w := WorkOf(lab.FP32, Shape{lab.MNK{M: 4096, N: 4096, K: 4096}, Beta}, 4)
	assert.Equal(t, 2*math.Pow(4096, 3), w.FLOPs)
	assert.Equal(t, 4*3*4096*4096.0+4*4096*4096.0, w.Bytes, "A, B, C read and C written")
	w = WorkOf(lab.BF16, Shape{lab.MNK{M: 4096, N: 4096, K: 4096}, 0}, 4)
	assert.Equal(t, 2*2*4096*4096.0+4*4096*4096.0, w.Bytes, "bf16 A and B, fp32 C written only")
	w = WorkOf(lab.BF16, Shape{lab.MNK{M: 4096, N: 4096, K: 4096}, Beta}, 2)
	assert.Equal(t, 2*2*4096*4096.0+2*2*4096*4096.0, w.Bytes, "bf16 A and B, bf16 C read and written")
}

func TestFillUniform(t *testing.T) {
	x := make([]float32, 200000)
	matref.FillUniform(x, 42)
	y := make([]float32, len(x))
	matref.FillUniform(y, 42)
	assert.Equal(t, x, y, "the same seed gives the same values")
	zeros, lo, hi := 0, float32(1), float32(-1)
	for _, v := range x {
		if v == 0 {
			zeros++
		}
		lo, hi = min(lo, v), max(hi, v)
	}
	assert.Less(t, zeros, 3)
	assert.GreaterOrEqual(t, lo, float32(-1))
	assert.Less(t, hi, float32(1))
	assert.Less(t, lo, float32(-0.99))
	assert.Greater(t, hi, float32(0.99))
}

// Both chapters are in step and every cell points at something that exists (labtest.NotesCells);
// every kernel file has its source cell, and every suite has a results table of all its variants.
func TestNotesCellsPointAtRealThings(t *testing.T) {
	cells, m := labtest.NotesCells(t)
	sources, full := map[string]bool{}, map[string]bool{}
	for _, c := range cells {
		switch c.Kind {
		case "kl-plot":
			assert.Contains(t, []string{"speedup", "throughput", "roofline"}, c.Body["kind"])
		case "kl-results":
			full[c.Body["suite"]] = full[c.Body["suite"]] || c.Body["variants"] == ""
		case "kl-source":
			sources[c.Body["file"]] = true
		case "kl-ceilings":
			assert.Empty(t, c.Body, "kl-ceilings finds lab 01's ceilings by itself")
		case "kl-profile", "kl-figure": // the site build checks their variants and files
		default:
			t.Errorf("unknown cell kind %q", c.Kind)
		}
	}
	for _, s := range m.Suites {
		assert.True(t, full[s.Name], "suite %s has a full kl-results cell", s.Name)
		for _, v := range s.Variants {
			if v.File != "" {
				assert.True(t, sources[v.File], "kernel file %s has a kl-source cell", v.File)
			}
		}
	}
}

// The epilogue's reference: bias by column, clamped at 0, the bias in the error scale.
func TestBiasReLU(t *testing.T) {
	ref := []float64{-1, 0.5, 2, -3} // 2×2
	scale := []float64{1, 1, 1, 1}
	BiasReLU(ref, scale, []float32{0.25, -1}, nil, 2)
	assert.Equal(t, []float64{0, 0, 2.25, 0}, ref)
	assert.Equal(t, []float64{1.25, 2, 1.25, 2}, scale)

	sref, sscale := []float64{-1, 2}, []float64{1, 1}
	BiasReLU(sref, sscale, []float32{0.25, -1}, []int{0*2 + 0, 1*2 + 0}, 2) // elements (0, 0) and (1, 0)
	assert.Equal(t, []float64{0, 2.25}, sref)
	assert.Equal(t, []float64{1.25, 1.25}, sscale)
}

// A suite prepares a column-major A, a transposed B or a bias only when one of its variants takes it.
func TestSuiteLayouts(t *testing.T) {
	m := labtest.Manifest(t)
	need, bf16Out := suiteNeeds(m.Suite("fp32"))
	assert.Equal(t, Layout{}, need)
	assert.False(t, bf16Out)
	need, bf16Out = suiteNeeds(m.Suite("fp32_exercises"))
	assert.Equal(t, Layout{AColMajor: true, BTransposed: true, BiasReLU: true}, need)
	assert.False(t, bf16Out, "an fp32 suite has no bf16 C")
	_, bf16Out = suiteNeeds(m.Suite("bf16"))
	assert.True(t, bf16Out, "cuBLASLt writes a bf16 C")
	assert.Equal(t, Layout{AColMajor: true}, LayoutOf(m.Suite("fp32_exercises").Variant("ex1_smem_tiling").Params))
	assert.Equal(t, Layout{BTransposed: true, BiasReLU: true}, LayoutOf(m.Suite("fp32_exercises").Variant("ex2_linear").Params))
}

func variant(name string, params map[string]int64) *lab.Variant {
	return &lab.Variant{Name: name, Params: params}
}

// isSkip reports whether err is a refusal (lab.Skip) rather than a failure.
func isSkip(err error) bool {
	var s *lab.SkipError
	return errors.As(err, &s)
}
