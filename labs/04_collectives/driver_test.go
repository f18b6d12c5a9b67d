package collectives

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/lab"
)

func TestBusFactorsAreNCCLTests(t *testing.T) {
	tests := []struct {
		op   Op
		n    int
		want float64
	}{
		{AllReduce, 2, 1}, {AllReduce, 4, 1.5}, {AllReduce, 8, 1.75},
		{AllGather, 2, 0.5}, {AllGather, 4, 0.75}, {AllGather, 8, 0.875},
		{AllReduce, 1, 0}, {AllGather, 0, 0},
	}
	for _, tc := range tests {
		assert.InDelta(t, tc.want, BusFactor(tc.op, tc.n), 1e-12, "%v n=%d", tc.op, tc.n)
	}
}

func TestWorkIsBusBytes(t *testing.T) {
	// 64 MiB per rank on 8 ranks: allreduce algbw counts S, busbw 2·7/8 of it.
	s := 64 << 20
	w := WorkOf(AllReduce, 8, s/4)
	assert.InDelta(t, float64(s)*1.75, w.Bytes, 1)
	assert.Zero(t, w.FLOPs)
	// All-gather: algbw counts the n·S received, busbw (n−1)/n of it = (n−1)·S.
	w = WorkOf(AllGather, 8, s/4)
	assert.InDelta(t, float64(s)*7, w.Bytes, 1)
	assert.InDelta(t, 8*float64(s), AlgBytes(AllGather, 8, s/4), 1)
}

func TestCountOf(t *testing.T) {
	p := func(b int64) lab.Problem { return lab.Problem{Name: "x", Params: map[string]int64{"bytes": b}} }
	n, err := CountOf(p(4004))
	require.NoError(t, err)
	assert.Equal(t, 1001, n)
	_, err = CountOf(p(6))
	assert.ErrorContains(t, err, "multiple of 4")
	_, err = CountOf(p(0))
	assert.ErrorContains(t, err, "at least 4")
	_, err = CountOf(lab.Problem{Name: "none"})
	assert.ErrorContains(t, err, "at least 4")
}

func TestReference(t *testing.T) {
	ins := [][]float32{{1, 2, 3}, {10, 20, 30}, {100, 200, 300}}
	assert.Equal(t, []float64{111, 222, 333}, Reference(AllReduce, ins))
	assert.Equal(t, []float64{1, 2, 3, 10, 20, 30, 100, 200, 300}, Reference(AllGather, ins))
	assert.Nil(t, Reference(AllReduce, nil))
}

func TestInputsAreNeverZero(t *testing.T) {
	x := make([]float32, 1<<14)
	fillInputs(x, 7)
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
	fillInputs(y, 8)
	assert.NotEqual(t, x[:8], y[:8], "another seed, other inputs")
}

func TestGrid(t *testing.T) {
	g, th := Grid(map[string]int64{"threads": 512, "blocks_per_sm": 2}, 1<<20, 132)
	assert.Equal(t, 264, g)
	assert.Equal(t, 512, th)
	g, th = Grid(nil, 1, 132)
	assert.Equal(t, 1, g)
	assert.Equal(t, 256, th)
	g, _ = Grid(nil, 0, 0)
	assert.Equal(t, 1, g, "an empty chunk still launches one block")
}

func TestManifest(t *testing.T) {
	m, err := lab.LoadManifest(".")
	require.NoError(t, err)
	assert.Equal(t, 2, m.DeviceCount())
	for _, s := range m.Suites {
		assert.Equal(t, "gbps", s.Metric)
		base := s.Variant(s.Baseline)
		require.NotNil(t, base, s.Name)
		assert.NotEmpty(t, base.EmuSkip, "the NCCL baseline is skipped on the emulator")
		assert.Contains(t, base.Needs, "gpu")
		for _, set := range []string{"gpu", "emu", "grade"} {
			ps, err := s.ProblemsFor(set)
			require.NoError(t, err)
			require.NotEmpty(t, ps, "%s/%s", s.Name, set)
			for _, p := range ps {
				_, err := CountOf(p)
				assert.NoError(t, err, "%s/%s %s", s.Name, set, p.Name)
			}
		}
		assert.Equal(t, s.Name == "allgather", OpOf(s) == AllGather)
	}
	grade := m.Suite("allreduce").Problems.Grade
	counts := map[int]bool{}
	for _, p := range grade {
		c, _ := CountOf(p)
		counts[c] = true
	}
	assert.True(t, counts[1], "the grade set has a one-element problem")
	assert.True(t, counts[3], "and a count that 2 ranks do not divide")
}
