package collectives

import (
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/lab"
)

// The Layouts of the tests' collectives: even ones (count from the inputs), the uneven forms.
func layoutOf(op Op, ins [][]float32) Layout {
	count := len(ins[0])
	if ops[op].inN {
		count /= len(ins)
	}
	return Layout{Op: op, Ranks: len(ins), Count: count}
}

// algBytes are nccl-tests' algbw bytes of an even collective: the larger of a rank's input and output.
func algBytes(op Op, n, count, size int) float64 {
	in, out := Layout{Op: op, Ranks: n, Count: count}.Sizes(0)
	return float64(size) * float64(max(in, out))
}

func blockSizes(p lab.Problem, n, count int, rng *rand.Rand) (lab.Blocks, error) {
	l, err := LayoutOf(AllToAllV, p, n, count, rng)
	return l.Blocks, err
}

func reference(op Op, ins [][]float32, r int) []float64 { return layoutOf(op, ins).Reference(ins, r) }
func workOf(op Op, n, count, size int) lab.Work {
	return Layout{Op: op, Ranks: n, Count: count}.Work(size)
}
func referenceV(ins [][]float32, b lab.Blocks, r int) []float64 {
	return Layout{Op: AllToAllV, Ranks: len(b), Blocks: b}.Reference(ins, r)
}
func workOfV(b lab.Blocks, size int) lab.Work {
	return Layout{Op: AllToAllV, Ranks: len(b), Blocks: b}.Work(size)
}
func referenceRSV(ins [][]float32, shards []int, r int) []float64 {
	return Layout{Op: ReduceScatterV, Ranks: len(shards), Shards: shards}.Reference(ins, r)
}
func workOfRSV(shards []int, size int) lab.Work {
	return Layout{Op: ReduceScatterV, Ranks: len(shards), Shards: shards}.Work(size)
}

func TestBusFactorsAreNCCLTests(t *testing.T) {
	tests := []struct {
		op   Op
		n    int
		want float64
	}{
		{AllReduce, 2, 1}, {AllReduce, 4, 1.5}, {AllReduce, 8, 1.75},
		{AllGather, 2, 0.5}, {AllGather, 4, 0.75}, {AllGather, 8, 0.875},
		{ReduceScatter, 2, 0.5}, {ReduceScatter, 8, 0.875}, {AllToAll, 4, 0.75}, {AllToAll, 8, 0.875},
		{AllReduce, 1, 0}, {AllGather, 1, 0},
	}
	for _, tc := range tests {
		assert.InDelta(t, tc.want, workOf(tc.op, tc.n, 1, 1).Bytes/algBytes(tc.op, tc.n, 1, 1), 1e-12, "%v n=%d", tc.op, tc.n)
	}
}

func TestWorkIsBusBytes(t *testing.T) {
	// 64 MiB per rank on 8 ranks: allreduce algbw counts S, busbw 2·7/8 of it.
	s := 64 << 20
	w := workOf(AllReduce, 8, s/4, 4)
	assert.InDelta(t, float64(s)*1.75, w.Bytes, 1)
	assert.Zero(t, w.FLOPs)
	// All-gather: algbw counts the n·S received, busbw (n−1)/n of it = (n−1)·S.
	w = workOf(AllGather, 8, s/4, 4)
	assert.InDelta(t, float64(s)*7, w.Bytes, 1)
	assert.InDelta(t, 8*float64(s), algBytes(AllGather, 8, s/4, 4), 1)
	// Reduce-scatter and all-to-all: S is one block (nccl-tests' count); algbw counts the n·S
	// sent, busbw (n−1)/n of it.
	for _, op := range []Op{ReduceScatter, AllToAll} {
		assert.InDelta(t, 8*float64(s), algBytes(op, 8, s/4, 4), 1, "%v", op)
		assert.InDelta(t, float64(s)*7, workOf(op, 8, s/4, 4).Bytes, 1, "%v", op)
	}
}

func TestCounts(t *testing.T) {
	tests := []struct {
		op      Op
		in, out int
	}{{AllReduce, 10, 10}, {AllGather, 10, 40}, {ReduceScatter, 40, 10}, {AllToAll, 40, 40}}
	for _, tc := range tests {
		in, out := Layout{Op: tc.op, Ranks: 4, Count: 10}.Sizes(0)
		assert.Equal(t, tc.in, in, "%v", tc.op)
		assert.Equal(t, tc.out, out, "%v", tc.op)
	}
}

func TestCountOf(t *testing.T) {
	p := func(b int64) lab.Problem { return lab.Problem{Name: "x", Params: map[string]int64{"bytes": b}} }
	n, err := CountOf(p(4004), lab.FP32)
	require.NoError(t, err)
	assert.Equal(t, 1001, n)
	_, err = CountOf(p(6), lab.FP32)
	assert.ErrorContains(t, err, "multiple of 4")
	_, err = CountOf(p(0), lab.FP32)
	assert.ErrorContains(t, err, "at least 4")
	_, err = CountOf(lab.Problem{Name: "none"}, lab.FP32)
	assert.ErrorContains(t, err, "at least 4")
	// bf16: two bytes an element, so 2002 bytes are 1001 elements and an odd size is refused.
	n, err = CountOf(p(2002), lab.BF16)
	require.NoError(t, err)
	assert.Equal(t, 1001, n)
	_, err = CountOf(p(3), lab.BF16)
	assert.ErrorContains(t, err, "not a whole number of bf16 elements (a multiple of 2)")
	_, err = CountOf(p(1), lab.BF16)
	assert.ErrorContains(t, err, "at least 2 (one bf16 element)")
}

// The same bytes per rank give the same busbw bytes in either precision: twice the bf16 elements.
func TestWorkBF16(t *testing.T) {
	for _, op := range []Op{AllReduce, AllGather, ReduceScatter, AllToAll} {
		assert.InDelta(t, workOf(op, 4, 1<<20, 4).Bytes, workOf(op, 4, 2<<20, 2).Bytes, 1e-6, "%v", op)
	}
}

func TestReference(t *testing.T) {
	ins := [][]float32{{1, 2, 3}, {10, 20, 30}, {100, 200, 300}}
	for r := range 3 {
		assert.Equal(t, []float64{111, 222, 333}, reference(AllReduce, ins, r))
		assert.Equal(t, []float64{1, 2, 3, 10, 20, 30, 100, 200, 300}, reference(AllGather, ins, r))
	}
	assert.Empty(t, Layout{Op: AllReduce}.Reference(nil, 0))
	// Two ranks, blocks of 2: rank r gets block r of the sum, or block r of every input.
	ins = [][]float32{{1, 2, 3, 4}, {10, 20, 30, 40}}
	assert.Equal(t, []float64{11, 22}, reference(ReduceScatter, ins, 0))
	assert.Equal(t, []float64{33, 44}, reference(ReduceScatter, ins, 1))
	assert.Equal(t, []float64{1, 2, 10, 20}, reference(AllToAll, ins, 0))
	assert.Equal(t, []float64{3, 4, 30, 40}, reference(AllToAll, ins, 1))
}

func TestRingChunksCoverUnevenCounts(t *testing.T) {
	for _, n := range []int{2, 3, 4, 8} {
		for _, count := range []int{1, 3, 7, 1001, 4096} {
			next := 0
			for c := range n {
				b, e := RingChunk(count, n, c)
				require.Equal(t, next, b, "n=%d count=%d chunk %d", n, count, c)
				require.LessOrEqual(t, b, e)
				next = e
			}
			assert.Equal(t, count, next, "n=%d count=%d: the chunks cover every element once", n, count)
		}
	}
}

// TestRingScheduleSimulated replays the ring's steps on the host, in the order the events allow
// the least (every rank one step at a time, the ranks in an adversarial order), with symbolic
// values: every rank must end with every chunk reduced over all n ranks exactly once, and no step
// may read a chunk that is not yet complete for that step.
func TestRingScheduleSimulated(t *testing.T) {
	for _, n := range []int{2, 3, 4, 8} {
		// out[r][c] is the set of ranks whose input rank r's chunk c holds (as a bit mask).
		out := make([][]uint, n)
		for r := range out {
			out[r] = make([]uint, n)
		}
		full := uint(1)<<n - 1
		for step := range 2 * (n - 1) {
			// Within a step the ranks are independent: they read their left neighbour's state of
			// the previous step (the events order only steps), so compute from a snapshot.
			prev := make([][]uint, n)
			for r := range out {
				prev[r] = append([]uint(nil), out[r]...)
			}
			for r := range n {
				c, reduce := RingStep(n, r, step)
				left := (r + n - 1) % n
				// The events let rank r's left neighbour run the same step at the same time (never a
				// later one): it must write another chunk than the one rank r reads from it.
				if wc, _ := RingStep(n, left, step); step > 0 {
					require.NotEqual(t, c, wc, "n=%d step %d: rank %d writes the chunk rank %d reads", n, step, left, r)
				}
				src := prev[left][c]
				if step == 0 {
					src = 1 << left // the neighbour's input
				}
				if reduce {
					require.Zero(t, src&(1<<r), "n=%d step %d rank %d: its own input would be added twice", n, step, r)
					out[r][c] = src | 1<<r
				} else {
					require.Equal(t, full, src, "n=%d step %d rank %d: copies an incomplete chunk %d", n, step, r, c)
					out[r][c] = src
				}
			}
			if step == n-2 {
				for r := range n {
					assert.Equal(t, full, out[r][(r+1)%n], "n=%d: after the reduce-scatter rank %d owns chunk %d", n, r, (r+1)%n)
				}
			}
		}
		for r := range n {
			for c := range n {
				assert.Equal(t, full, out[r][c], "n=%d: rank %d chunk %d", n, r, c)
			}
		}
	}
}

func TestInputsAreNeverZero(t *testing.T) {
	x := make([]float32, 1<<14)
	fillInputs[float32](x, 7)
	neg := 0
	for _, v := range x {
		require.NotZero(t, v)
		require.Less(t, v*v, float32(1))
		if v < 0 {
			neg++
		}
	}
	assert.InDelta(t, len(x)/2, neg, float64(len(x))/10, "both signs")
	y := make([]float32, len(x))
	fillInputs[float32](y, 8)
	assert.NotEqual(t, x[:8], y[:8], "another seed, other inputs")

	// bf16: the same draws rounded to bf16, x holding the values of the returned bit patterns
	// (what the reference sums), still never zero and below 1.
	z := make([]float32, len(x))
	bits := fillInputs[uint16](z, 7)
	require.Len(t, bits, len(z))
	for i, v := range z {
		require.Equal(t, math.Float32bits(v)>>16, uint32(bits[i]), "element %d is its bf16 pattern", i)
		require.Zero(t, math.Float32bits(v)&0xFFFF, "element %d is a bf16 value", i)
		require.NotZero(t, v)
		require.LessOrEqual(t, math.Abs(float64(v-x[i])), math.Abs(float64(x[i]))/256, "element %d: rounded to nearest", i)
	}
}

// PartialSums: with inputs of one sign a partial sum never exceeds the whole (1); cancellation
// makes it larger; the offset selects a reduce-scatter block.
func TestPartialSums(t *testing.T) {
	ins := [][]float32{{1, 2, 0.5, -0.5}, {1, 2, -0.5, 0.25}}
	assert.InDelta(t, 1, PartialSums(ins, reference(AllReduce, ins, 0)[:2], 0), 1e-12)
	// Block 1: sums 0 and -0.25 with |x| sums 1 and 0.75: ‖(1, 0.75)‖ / ‖(0, 0.25)‖ = 5.
	assert.InDelta(t, 5, PartialSums(ins, reference(ReduceScatter, ins, 1), 2), 1e-12)
}

func TestManifest(t *testing.T) {
	m, err := lab.LoadManifest(".")
	require.NoError(t, err)
	assert.True(t, m.HasRanks(), "one process per rank")
	assert.Equal(t, 2, m.DefaultRanks(true, 0), "two ranks on the emulator")
	for _, s := range m.Suites {
		if strings.HasPrefix(s.Name, "moe_") {
			checkMoESuite(t, s)
			continue
		}
		assert.Equal(t, "gbps", s.Metric)
		base := s.Variant(s.Baseline)
		require.NotNil(t, base, s.Name)
		if OpOf(s) == AllToAllV {
			// The exercise's bar: kernel 06 on equal blocks (NCCL's grouped send/receive runs beside it).
			assert.True(t, base.IsKernel(), s.Name)
			assert.NotNil(t, s.Variant("nccl_alltoall"), s.Name)
		} else {
			assert.NotEmpty(t, base.EmuSkip, "the NCCL baseline is skipped on the emulator")
			assert.Contains(t, base.Needs, "gpu")
		}
		for _, set := range []string{"gpu", "emu", "grade"} {
			ps, err := s.ProblemsFor(set)
			require.NoError(t, err)
			require.NotEmpty(t, ps, "%s/%s", s.Name, set)
			for _, p := range ps {
				_, err := CountOf(p, lab.PrecisionOf(s))
				assert.NoError(t, err, "%s/%s %s", s.Name, set, p.Name)
			}
		}
		assert.Equal(t, strings.TrimPrefix(s.Name, "bf16_"), OpOf(s).String())
	}
	grade := m.Suite("allreduce").Problems.Grade
	counts := map[int]bool{}
	for _, p := range grade {
		c, _ := CountOf(p, lab.FP32)
		counts[c] = true
	}
	assert.True(t, counts[1], "the grade set has a one-element problem")
	assert.True(t, counts[3], "and a count that 2 ranks do not divide")

	// Exercise 1 is the uneven all-to-all, graded against kernel 06 on equal blocks.
	require.NotNil(t, m.Grading)
	require.Len(t, m.Grading.Exercises, 2)
	ex := m.Grading.Exercises[0]
	assert.Equal(t, "ex1_all_to_allv", ex.Variant)
	require.NotNil(t, ex.V)
	assert.Equal(t, "all_to_allv", ex.V.Suite.Name)
	assert.Equal(t, "a2a_pull", ex.Ref.Name)
	gpuSet := map[string]lab.Problem{}
	for _, p := range ex.V.Suite.Problems.GPU {
		gpuSet[p.Name] = p
	}
	for _, name := range ex.Speed.Problems {
		assert.Zero(t, gpuSet[name].Int(ParamUneven, 0), "speed problem %s has equal blocks, which kernel 06 runs", name)
		assert.Zero(t, gpuSet[name].Int(ParamEmptyPct, 0), "speed problem %s has no empty blocks", name)
	}

	// Exercise 2 is the uneven bf16 reduce-scatter: checked on uneven shards (kernel 13 cannot run
	// them), timed against kernel 13 on equal shards, and on equal shards of a count that is not
	// a multiple of 8 against kernel 13's time at the aligned size.
	ex = m.Grading.Exercises[1]
	assert.Equal(t, "ex2_reduce_scatter_v", ex.Variant)
	require.NotNil(t, ex.V)
	assert.Equal(t, "bf16_reduce_scatter_v", ex.V.Suite.Name)
	assert.Equal(t, ReduceScatterV, OpOf(ex.V.Suite))
	assert.Equal(t, "direct_bf16", ex.Ref.Name)
	uneven := 0
	for _, td := range ex.Tests {
		for _, name := range td.TestProblems() {
			for _, p := range ex.V.Suite.Problems.Grade {
				if p.Name == name && p.Int(ParamUneven, 0) != 0 {
					uneven++
				}
			}
		}
	}
	assert.GreaterOrEqual(t, uneven, 4, "most tests have uneven shards, which kernel 13 does not run")
	gpuSet = map[string]lab.Problem{}
	for _, p := range ex.V.Suite.Problems.GPU {
		gpuSet[p.Name] = p
	}
	odd := 0
	for _, name := range ex.Speed.Problems {
		require.Contains(t, gpuSet, name)
		assert.Zero(t, gpuSet[name].Int(ParamUneven, 0), "speed problem %s: sizes drawn afresh every run set no bar", name)
		c, err := CountOf(gpuSet[name], lab.BF16)
		require.NoError(t, err)
		ref, err := CountOf(gpuSet[ex.Speed.ReferenceProblem(name)], lab.BF16)
		require.NoError(t, err)
		assert.Zero(t, ref%8, "speed problem %s: kernel 13 is timed where it takes vectors", name)
		if c%8 != 0 {
			odd++
		}
	}
	assert.Positive(t, odd, "a speed problem of a count off the vectors, against kernel 13 at the aligned size")
}

// The shards of an uneven reduce-scatter: offsets, the reference and the bytes.
func TestShards(t *testing.T) {
	shards := []int{3, 0, 2}
	assert.Equal(t, []int64{0, 3, 3, 5}, ShardOffsets(shards))
	ins := [][]float32{{1, 2, 3, 4, 5}, {10, 20, 30, 40, 50}}
	assert.Equal(t, []float64{11, 22, 33}, referenceRSV(ins, shards, 0))
	assert.Empty(t, referenceRSV(ins, shards, 1))
	assert.Equal(t, []float64{44, 55}, referenceRSV(ins, shards, 2))
	// Equal shards are reduce_scatter's layout: the same reference and the same bytes.
	eq := []int{2, 2}
	ins2 := [][]float32{{1, 2, 3, 4}, {5, 6, 7, 8}}
	for r := range 2 {
		assert.Equal(t, reference(ReduceScatter, ins2, r), referenceRSV(ins2, eq, r))
	}
	assert.Equal(t, workOf(ReduceScatter, 2, 2, 2), workOfRSV(eq, 2))
	assert.True(t, lab.AllEqual(eq))
	assert.False(t, lab.AllEqual(shards))
}

// The block sizes of an uneven all-to-all: offsets, totals and the reference agree.
func TestBlocks(t *testing.T) {
	b := lab.Blocks{{2, 0, 1}, {3, 4, 0}, {0, 0, 5}} // b[src][dst]
	assert.Equal(t, []int{3, 7, 5}, []int{b.Sent(0), b.Sent(1), b.Sent(2)})
	assert.Equal(t, []int{5, 4, 6}, []int{b.Received(0), b.Received(1), b.Received(2)})
	assert.Equal(t, 15, b.Total())
	assert.Equal(t, 2, b.SendOffset(0, 2))
	assert.Equal(t, 7, b.SendOffset(1, 2))
	assert.Equal(t, 1, b.RecvOffset(2, 2), "rank 2 receives 1 element from rank 0, then 0 from rank 1")
	assert.False(t, b.Equal())
	assert.True(t, lab.Blocks{{4, 4}, {4, 4}}.Equal())
	assert.Equal(t, []int32{3, 4, 0}, b.Row(1))

	ins := [][]float32{{1, 2, 3}, {10, 11, 12, 13, 14, 15, 16}, {20, 21, 22, 23, 24}}
	assert.Equal(t, []float64{1, 2, 10, 11, 12}, referenceV(ins, b, 0))
	assert.Equal(t, []float64{13, 14, 15, 16}, referenceV(ins, b, 1))
	assert.Equal(t, []float64{3, 20, 21, 22, 23, 24}, referenceV(ins, b, 2))
	// Equal blocks are kernel 06's layout: the same reference as all_to_all.
	eq := lab.Blocks{{2, 2}, {2, 2}}
	ins2 := [][]float32{{1, 2, 3, 4}, {5, 6, 7, 8}}
	for r := range 2 {
		assert.Equal(t, reference(AllToAll, ins2, r), referenceV(ins2, eq, r))
	}
	assert.InDelta(t, workOf(AllToAll, 2, 2, 4).Bytes, workOfV(eq, 4).Bytes, 1e-9)
}

func TestBlockSizes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	p := lab.Problem{Name: "x", Params: map[string]int64{"bytes": 400}}
	b, err := blockSizes(p, 3, 100, rng)
	require.NoError(t, err)
	assert.True(t, b.Equal())
	assert.Equal(t, 100, b[0][0])

	p.Params[ParamUneven], p.Params[ParamEmptyPct] = 1, 50
	empty, sizes := 0, map[int]bool{}
	for range 50 {
		b, err = blockSizes(p, 4, 100, rng)
		require.NoError(t, err)
		for _, row := range b {
			for _, v := range row {
				assert.LessOrEqual(t, v, 200)
				sizes[v] = true
				if v == 0 {
					empty++
				}
			}
		}
	}
	assert.Greater(t, empty, 300, "about half of 800 blocks are empty")
	assert.Greater(t, len(sizes), 50, "the sizes vary")

	p.Params[ParamEmptyPct] = 101
	_, err = blockSizes(p, 2, 100, rng)
	assert.ErrorContains(t, err, "percentage")
}

// What NCCL's grouped send/receive is given moves exactly the reference's data: replaying every
// rank's PerPeer on the host reproduces the reference on every rank.
func TestPerPeerMovesTheReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 2, 3, 4} {
		b, err := blockSizes(lab.Problem{Name: "u", Params: map[string]int64{"uneven": 1, "empty_pct": 25}}, n, 5, rng)
		require.NoError(t, err)
		ins := make([][]float32, n)
		for r := range ins {
			ins[r] = make([]float32, b.Sent(r))
			for i := range ins[r] {
				ins[r][i] = float32(100*r + i + 1)
			}
		}
		for dst := range n {
			got := make([]float64, b.Received(dst))
			_, _, rc, ro := b.PerPeer(dst)
			for src := range n {
				sc, so, _, _ := b.PerPeer(src)
				require.Equal(t, sc[dst], rc[src], "what %d sends to %d is what %d receives", src, dst, dst)
				for i := range sc[dst] {
					got[ro[src]+i] = float64(ins[src][so[dst]+i])
				}
			}
			assert.Equal(t, referenceV(ins, b, dst), got, "n=%d rank %d", n, dst)
		}
	}
	assert.Equal(t, lab.Blocks{{2, 2}, {2, 2}}, lab.EqualBlocks(2, 2))
}

// The kernels on NCCL's device API: one allreduce and one all-gather, NVIDIA-only (RCCL has no
// such API, so hip-check leaves them out), skipped on the emulator, and each taking what
// runSymmetric passes: the device communicator, the window, the output and the count.
func TestNCCLDeviceVariants(t *testing.T) {
	m, err := lab.LoadManifest(".")
	require.NoError(t, err)
	ops := map[Op]string{}
	for _, s := range m.Suites {
		for _, v := range s.Variants {
			if !OnNCCLDevice(v) {
				continue
			}
			ops[OpOf(s)] = v.Entry
			assert.Contains(t, v.Needs, lab.NeedNVIDIA, v.Name)
			assert.False(t, v.Portable(), "%s is left out of hip-check", v.Name)
			assert.NotEmpty(t, v.EmuSkip, v.Name)
			src, err := os.ReadFile(v.File)
			require.NoError(t, err)
			assert.Contains(t, string(src), "#include <nccl_device.h>", v.Name)
			assert.Contains(t, string(src), "ncclLsaBarrierSession", "%s synchronises the ranks with NCCL's LSA barrier", v.Name)
			assert.Contains(t, string(src), `extern "C" __global__ void `+v.Entry+`(ncclDevComm const* comm, ncclWindow_t win, float* out, int count)`, v.Name)
		}
	}
	assert.Equal(t, map[Op]string{AllReduce: EntryNCCLOneShot, AllGather: EntryNCCLAllGather}, ops)
}

// The MoE suites: a time per call against NCCL's all-to-allv (skipped on the emulator), and problems
// whose routing every world size of the tests can draw.
func checkMoESuite(t *testing.T, s *lab.Suite) {
	assert.Equal(t, "us", s.Metric, s.Name)
	base := s.Variant(s.Baseline)
	require.NotNil(t, base, s.Name)
	assert.Equal(t, LibAllToAll, base.Library, s.Name)
	assert.NotEmpty(t, base.EmuSkip, s.Name)
	for _, set := range []string{"gpu", "emu", "grade"} {
		ps, err := s.ProblemsFor(set)
		require.NoError(t, err)
		require.NotEmpty(t, ps, "%s/%s", s.Name, set)
		for _, p := range ps {
			for n := 1; n <= 8; n++ {
				m, err := drawRouting(p, n, rand.New(rand.NewPCG(1, uint64(n))))
				require.NoError(t, err, "%s/%s %s", s.Name, set, p.Name)
				rows := 0
				for d := range n {
					rows += len(m.rowsOf(d))
				}
				total := 0
				for _, tk := range m.tokens {
					total += tk * m.k
				}
				assert.Equal(t, total, rows, "%s %s at %d ranks: every (token, slot) is received once", s.Name, p.Name, n)
			}
		}
	}
}
