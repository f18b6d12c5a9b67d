package overlap

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/lab"
)

func TestRowSplitCoversEveryRowOnce(t *testing.T) {
	for _, tc := range []struct{ m, n int }{{64, 2}, {100, 3}, {3, 2}, {3, 3}, {129, 4}, {8192, 8}, {7, 5}} {
		next := 0
		for s := range tc.n {
			assert.Equal(t, next, Row0Of(s, tc.m, tc.n), "m=%d n=%d rank %d starts where rank %d ended", tc.m, tc.n, s, s-1)
			rows := RowsOf(s, tc.m, tc.n)
			assert.GreaterOrEqual(t, rows, tc.m/tc.n)
			assert.LessOrEqual(t, rows, tc.m/tc.n+1)
			next += rows
		}
		assert.Equal(t, tc.m, next, "m=%d n=%d: the blocks cover M", tc.m, tc.n)
	}
}

func TestTilesNeverSpanTwoBlocks(t *testing.T) {
	// 100 rows over 2 ranks: 50 + 50, one row tile each (a 64-row tile over all 100 would need 2).
	assert.Equal(t, 2*2, Tiles(Shape{M: 100, N: 70, K: 50}, 2))
	assert.Equal(t, 3*1, Tiles(Shape{M: 3, N: 5, K: 7}, 3))
	// 130 rows over 2 ranks: 65 + 65, two row tiles each (a 64-row tile plus a 1-row edge tile).
	assert.Equal(t, (2+2)*2, Tiles(Shape{M: 130, N: 128, K: 1}, 2))
}

func TestRingStartsWithOwnRank(t *testing.T) {
	assert.Equal(t, []int{0, 1, 2}, Ring(0, 3))
	assert.Equal(t, []int{2, 0, 1}, Ring(2, 3))
	assert.Equal(t, []int{1, 0}, Ring(1, 2))
}

func TestPersistentGrid(t *testing.T) {
	g, err := PersistentGrid(132*2, 8, 10000)
	require.NoError(t, err)
	assert.Equal(t, 264, g, "one wave")
	g, err = PersistentGrid(264, 8, 3)
	require.NoError(t, err)
	assert.Equal(t, 11, g, "no more blocks than producers + tiles")
	g, err = PersistentGrid(4, 1, 0)
	require.NoError(t, err)
	assert.Equal(t, 2, g, "at least one consumer")
	_, err = PersistentGrid(2, 2, 10)
	assert.Error(t, err, "producers that fill the wave would leave the GEMM blocks nowhere to run")
}

func TestWorkCountsEveryRank(t *testing.T) {
	w := WorkOf(Shape{M: 8192, N: 3584, K: 4096}, 4)
	assert.InDelta(t, 4*2*8192.0*3584*4096, w.FLOPs, 1)
	assert.Zero(t, w.Bytes)
}

func TestShapeOf(t *testing.T) {
	s, err := ShapeOf(lab.Problem{Name: "x", Params: map[string]int64{"m": 100, "n": 70, "k": 50}})
	require.NoError(t, err)
	assert.Equal(t, Shape{M: 100, N: 70, K: 50}, s)
	_, err = ShapeOf(lab.Problem{Name: "x", Params: map[string]int64{"m": 100, "n": 70}})
	assert.Error(t, err)
	_, err = ShapeOf(lab.Problem{Name: "x", Params: map[string]int64{"m": 1 << 20, "n": 1 << 12, "k": 8}})
	assert.Error(t, err, "2^32 elements of C")
}

func TestManifest(t *testing.T) {
	m, err := lab.LoadManifest(".")
	require.NoError(t, err)
	assert.Equal(t, "05", m.ID)
	assert.True(t, m.HasRanks(), "one process per rank")
	assert.Equal(t, 2, m.DefaultRanks(true, 0), "two ranks on the emulator")
	require.NotNil(t, m.CustomFlag("shape"))
	assert.Equal(t, []string{"m", "n", "k"}, m.CustomFlag("shape").Sets, "labrun 05 --shape MxNxK")
	// Both suites: the sequential baseline, the library's baseline, problems in every set.
	for _, name := range []string{SuiteAGGemm, SuiteGemmRS} {
		s := m.Suite(name)
		require.NotNil(t, s, name)
		assert.Equal(t, VarSequential, s.Baseline, name)
		lib := s.Variant(LibNCCLCublas)
		require.NotNil(t, lib, name)
		assert.Equal(t, LibNCCLCublas, lib.Library, name)
		assert.ElementsMatch(t, []string{"gpu", "nccl", "cublas"}, lib.Needs, name)
		assert.NotEmpty(t, lib.EmuSkip, name)
		for _, set := range []string{"gpu", "emu", "grade"} {
			ps, err := s.ProblemsFor(set)
			require.NoError(t, err, "%s %s", name, set)
			require.NotEmpty(t, ps, "%s %s", name, set)
			for _, p := range ps {
				_, err := ShapeOf(p)
				assert.NoError(t, err, "%s %s %s", name, set, p.Name)
			}
		}
	}
	s := m.Suite(SuiteAGGemm)
	for _, name := range []string{VarSequential, VarChunked, VarFusedPull, VarFusedSignal} {
		v := s.Variant(name)
		require.NotNil(t, v, name)
		assert.True(t, v.IsKernel(), name)
	}
	// The exercise is the push form, which no kernel of the chapter takes; kernel 04 sets its bar.
	ex := s.Variant(VarEx1Push)
	require.NotNil(t, ex)
	assert.NotZero(t, ex.Params[ParamPush])
	for _, v := range s.Variants {
		if v != ex {
			assert.Zero(t, v.Params[ParamPush], "%s: only the exercise takes the push form", v.Name)
		}
	}
	require.NotNil(t, m.Grading)
	require.Len(t, m.Grading.Exercises, 2)
	assert.Equal(t, ex, m.Grading.Exercises[0].V)
	assert.Equal(t, VarFusedSignal, m.Grading.Exercises[0].Ref.Name)
	assert.Equal(t, VarFusedSignal, m.Grading.Exercises[0].Reference)
	// Its bf16 entry, from the same file, is graded in bf16_ag_gemm against kernel 04's bf16 entry.
	bf := m.Grading.Exercises[1].V
	assert.Equal(t, "bf16_"+SuiteAGGemm, bf.Suite.Name)
	assert.Equal(t, ex.File, bf.File)
	assert.Equal(t, ex.Entry+"_bf16", bf.Entry)
	assert.NotZero(t, bf.Params[ParamPush])
	assert.Equal(t, VarFusedSignal, m.Grading.Exercises[1].Ref.Name)
	assert.Equal(t, bf.Suite, m.Grading.Exercises[1].Ref.Suite)

	rs := m.Suite(SuiteGemmRS)
	for name, entry := range map[string]string{VarSequential: EntryGemmRows, VarChunked: EntryGemmRows, VarFused: EntryGemmRSFused} {
		v := rs.Variant(name)
		require.NotNil(t, v, name)
		assert.Equal(t, entry, v.Entry, name)
	}

	var entries []string
	for _, h := range m.Helpers {
		entries = append(entries, h.Entry)
	}
	assert.ElementsMatch(t, []string{lab.BarrierEntry, EntryGather, EntryReduceRows, EntryGather + "_bf16", EntryReduceRows + "_bf16", EntryAddBias, EntryRaiseFlag, EntryGatherTL}, entries)

	// The bf16 suites: the library baseline (NCCL + cuBLASLt) is theirs, the schedules of the fp32
	// suites run on the _bf16 entries, the wgmma variants only on sm_90a GPUs, and problems with a
	// bias in every set.
	for name, fp32 := range map[string]string{"bf16_" + SuiteAGGemm: SuiteAGGemm, "bf16_" + SuiteGemmRS: SuiteGemmRS} {
		s := m.Suite(name)
		require.NotNil(t, s, name)
		assert.Equal(t, lab.BF16, lab.PrecisionOf(s), name)
		lib := s.Variant(s.Baseline)
		require.NotNil(t, lib, name)
		assert.Equal(t, LibNCCLCublas, lib.Library, name)
		for _, v := range s.Variants {
			if HopperOnly(v.Entry) {
				assert.Contains(t, v.Needs, "sm_90a", v.Name)
				assert.NotEmpty(t, v.EmuSkip, v.Name)
			} else if f := m.Suite(fp32).Variant(v.Name); v.IsKernel() && f != nil {
				assert.Equal(t, f.Entry+"_bf16", v.Entry, "%s/%s", name, v.Name)
			}
		}
		for _, set := range []string{"gpu", "emu", "grade"} {
			ps, err := s.ProblemsFor(set)
			require.NoError(t, err)
			bias := false
			for _, p := range ps {
				bias = bias || p.Int(ParamBias, 0) != 0
			}
			assert.True(t, bias, "%s %s: a problem with a bias", name, set)
		}
	}
	assert.NotNil(t, m.Suite("bf16_"+SuiteAGGemm).Variant(VarWgmma))
	for _, name := range []string{"wgmma_rs", "wgmma_rs_sequential"} {
		v := m.Suite("bf16_" + SuiteGemmRS).Variant(name)
		require.NotNil(t, v, name)
		assert.Equal(t, EntryWgmmaRS, v.Entry, name)
		assert.Equal(t, name == "wgmma_rs", v.Params[ParamPush] != 0, "%s: push: 1 is the fused form", name)
	}
}

// Kernel 07's tile count: pushed, every destination's block of rows is tiled on its own (a tile
// never spans two owners), so uneven blocks cost edge tiles; stored locally, the M rows at once.
func TestWgmmaRSTiles(t *testing.T) {
	for _, tc := range []struct {
		sh         Shape
		n          int
		push, want int
	}{
		{Shape{M: 8192, N: 4096}, 1, 0, 64 * 16},
		{Shape{M: 8192, N: 4096}, 1, 1, 64 * 16},
		{Shape{M: 8192, N: 4096}, 4, 1, 4 * 16 * 16},
		{Shape{M: 100, N: 300}, 3, 0, 2},     // one tile row of 128, two tile columns of 256
		{Shape{M: 100, N: 300}, 3, 1, 3 * 2}, // 34, 33, 33 rows: one tile row each
		{Shape{M: 300, N: 256}, 2, 1, 2 * 2}, // 150 rows each: two tile rows each (3 at once)
		{Shape{M: 300, N: 256}, 2, 0, 3},
	} {
		assert.Equal(t, tc.want, WgmmaRSTiles(tc.sh, tc.n, tc.push == 1), "%+v over %d ranks, push %d", tc.sh, tc.n, tc.push)
	}
}

func TestColumnSplitOfGemmRS(t *testing.T) {
	// 50 columns over 3 ranks: 17 + 17 + 16, the same rule as the rows.
	assert.Equal(t, []int{17, 17, 16}, []int{ColsOf(0, 50, 3), ColsOf(1, 50, 3), ColsOf(2, 50, 3)})
	assert.Equal(t, []int{0, 17, 34}, []int{Col0Of(0, 50, 3), Col0Of(1, 50, 3), Col0Of(2, 50, 3)})
}

func TestRSWorkIsOneProduct(t *testing.T) {
	w := RSWorkOf(Shape{M: 8192, N: 4096, K: 14336})
	assert.InDelta(t, 2*8192.0*4096*14336, w.FLOPs, 1, "the partial products together are one M×N×K product")
}

// The timeline suite: debug builds of ag_gemm's three schedules, exactly its variants with
// timeline: 1, at ag_gemm's launch parameters; the records of a run fit the buffer's bound.
func TestTimelineSuite(t *testing.T) {
	m, err := lab.LoadManifest(".")
	require.NoError(t, err)
	tl, ag := m.Suite("timeline"), m.Suite(SuiteAGGemm)
	require.NotNil(t, tl)
	assert.Equal(t, lab.FP32, lab.PrecisionOf(tl))
	var names []string
	for _, v := range tl.Variants {
		names = append(names, v.Name)
		assert.Equal(t, []string{"-DKL_TIMELINE"}, v.Flags, v.Name)
		assert.EqualValues(t, 1, v.Params[ParamTimeline], v.Name)
		twin := ag.Variant(v.Name)
		require.NotNil(t, twin, v.Name)
		assert.Equal(t, twin.Entry, v.Entry, v.Name)
		for k, x := range twin.Params {
			assert.Equal(t, x, v.Params[k], "%s: ag_gemm's %s", v.Name, k)
		}
	}
	assert.Equal(t, []string{VarSequential, VarChunked, VarFusedSignal}, names)
	for _, s := range m.Suites {
		for _, v := range s.Variants {
			assert.Equal(t, s == tl, v.Params[ParamTimeline] != 0, "%s/%s: timeline: 1 in the timeline suite only", s.Name, v.Name)
		}
	}
	// 130 rows over 2 ranks on 4 SMs, 2 blocks each: 8 tiles, twice, and 2 × 4 × 2 copies.
	assert.Equal(t, 2*8+2*4*2, TimelineRecords(Shape{M: 130, N: 128, K: 1}, 2, 4, 2))
}

// HopperOnly says whether entry is one of the wgmma kernels (06, 07: inline PTX for sm_90a, bf16
// suites only), which the emulator skips.
func HopperOnly(entry string) bool { return entry == EntryWgmma || entry == EntryWgmmaRS }

// The variants the tests name besides sequential and chunked (lab.yaml name:).
const (
	VarFusedPull, VarFusedSignal   = "fused_pull", "fused_signal"
	VarFused, VarEx1Push, VarWgmma = "fused", "ex1_push_flags", "wgmma_signal" // gemm_rs; exercise 1 (push form); bf16 kernel 06
)

// Split-K fills the SMs that the tiles leave idle, each unit with MinSplitKBlocks of K or more,
// and every split that the kernels' kl_splitk_range forms has a K block.
func TestSplitK(t *testing.T) {
	for _, tc := range []struct {
		what                 string
		tiles, grid, kBlocks int
		whole, s             int
	}{
		{"the challenge's 64×2304×7168: 9 tiles, 126 units", 9, 132, 112, 0, 14},
		{"45 K blocks in 4 runs of 12", 32, 132, 45, 0, 4},
		{"128 tiles, one wave already", 128, 132, 64, 128, 1},
		{"7 K blocks make no two runs of 4", 1, 132, 7, 1, 1},
		{"8192×3696: 7 waves whole, the last 36 tiles in 3 runs each", 960, 132, 128, 924, 3},
		{"whole waves only", 264, 132, 128, 264, 1},
		{"a last wave of 100 tiles is not split", 364, 132, 128, 364, 1},
	} {
		whole, s := SplitK(tc.tiles, tc.grid, tc.kBlocks, 0)
		assert.Equal(t, []int{tc.whole, tc.s}, []int{whole, s}, tc.what)
		assert.LessOrEqual(t, (tc.tiles-whole)*s, tc.grid, "%s: the split tiles' units are one wave at most", tc.what)
	}
	whole, s := SplitK(9, 132, 112, 3)
	assert.Equal(t, []int{0, 3}, []int{whole, s}, "lab.yaml's splits: 3 runs wanted, 3 given")
	for kb := 1; kb <= 300; kb++ {
		for s := 1; s <= 140; s++ {
			got := evenSplit(s, kb)
			per := lab.CeilDiv(kb, got) // kl_splitk_range's
			require.True(t, got >= 1 && got <= max(1, min(s, kb)) && (got-1)*per < kb, "evenSplit(%d, %d) = %d", s, kb, got)
		}
	}
}

func TestAgTile(t *testing.T) {
	for _, tc := range []struct {
		what        string
		m, n, avail int
		tm, tn      int
	}{
		{"the challenge's 4096×512 at one rank: 64 wide tiles on 132 SMs", 4096, 512, 132, 128, 128},
		{"64 wide tiles beside 16 copiers: more than half of 116", 4096, 512, 116, 128, 256},
		{"8192×512: 128 wide tiles, one wave", 8192, 512, 132, 128, 256},
		{"a decode-sized M: one row of 64-row tiles", 64, 2304, 132, 64, 64},
		{"M = 65 needs a second 64-row tile: the 128-row ones", 65, 2304, 132, 128, 128},
		{"an LLM shard: 448 tiles", 8192, 3584, 132, 128, 256},
	} {
		tm, tn := AgTile(tc.m, tc.n, tc.avail)
		assert.Equal(t, [2]int{tc.tm, tc.tn}, [2]int{tm, tn}, tc.what)
	}
}
