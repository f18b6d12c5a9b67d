package grouped

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/labtest"
	"github.com/kernel-labs/kernellabs/internal/results"
)

func TestGroupsOfExplicit(t *testing.T) {
	p := lab.Problem{Name: "x", Params: map[string]int64{"g": 3, "m0": 0, "n0": 5, "k0": 7, "m1": 1, "m2": 9, "n2": 2, "n": 4, "k": 6}}
	s, err := GroupsOf(p)
	require.NoError(t, err)
	assert.Equal(t, []Shape{{0, 5, 7}, {1, 4, 6}, {9, 2, 6}}, s)
	assert.False(t, SharedNK(s))
	assert.True(t, s[0].Empty())

	for _, bad := range []map[string]int64{
		{"g": 0},
		{"g": 2, "m0": 1, "n": 1, "k": 1},                            // m1 missing
		{"g": 1, "m0": 1, "n": 1},                                    // k missing
		{"g": 1, "m0": 1, "n": 1, "k": 0},                            // K must be at least 1
		{"g": 1, "m0": -1, "n": 1, "k": 1},                           // negative
		{"g": 1, "m0": 1 << 16, "n": 1 << 16, "k": 1},                // 2^32 outputs
		{"g": 1, "m0": 1, "n": 1, "k": 1, "experts": 2, "tokens": 1}, // both forms
		{"n": 1},
	} {
		_, err := GroupsOf(lab.Problem{Name: "bad", Params: bad})
		assert.Error(t, err, "%v", bad)
	}
}

func TestExpertRows(t *testing.T) {
	sum := func(r []int) int {
		s := 0
		for _, v := range r {
			s += v
		}
		return s
	}
	r, err := ExpertRows(8, 100, DistUniform, 1, 0, 1)
	require.NoError(t, err)
	assert.Equal(t, []int{13, 13, 13, 13, 12, 12, 12, 12}, r, "the remainder goes to the first experts")

	r, err = ExpertRows(64, 6144, DistZipf, 0.3, 0, 1)
	require.NoError(t, err)
	assert.Equal(t, 6144, sum(r))
	lo, hi := r[0], r[0]
	for _, v := range r {
		lo, hi = min(lo, v), max(hi, v)
	}
	assert.LessOrEqual(t, hi, 256, "the small-groups problem keeps every expert at 256 rows or fewer")
	assert.Greater(t, hi, 2*lo, "and it is skewed")

	r, err = ExpertRows(128, 16384, DistZipf, 1, 16, 1)
	require.NoError(t, err)
	assert.Equal(t, 16384, sum(r))
	empty := 0
	for _, v := range r {
		if v == 0 {
			empty++
		}
	}
	assert.GreaterOrEqual(t, empty, 16)

	// The same parameters give the same sizes; another seed other ones.
	r2, _ := ExpertRows(128, 16384, DistZipf, 1, 16, 1)
	assert.Equal(t, r, r2)
	r3, _ := ExpertRows(128, 16384, DistZipf, 1, 16, 2)
	assert.NotEqual(t, r, r3)

	r, err = ExpertRows(4, 0, DistZipf, 1, 4, 1)
	require.NoError(t, err)
	assert.Equal(t, []int{0, 0, 0, 0}, r)
	_, err = ExpertRows(4, 10, DistZipf, 1, 4, 1)
	assert.Error(t, err, "all experts empty but rows to place")
	_, err = ExpertRows(4, 10, 7, 1, 0, 1)
	assert.Error(t, err)
}

// Every problem parses; emulator problems are small; the sets have the cases the issue names.
func TestManifestProblems(t *testing.T) {
	m := labtest.Manifest(t)
	labtest.EachProblem(t, m, func(s *lab.Suite, set string, p lab.Problem) {
		shapes, err := GroupsOf(p)
		require.NoError(t, err, "%s/%s %s", s.Name, set, p.Name)
		if set == "emu" {
			assert.LessOrEqual(t, totalFLOPs(shapes), 2e8, "%s: emulator problem %s", s.Name, p.Name)
		}
		if set == "grade" {
			assert.LessOrEqual(t, totalFLOPs(shapes), 2e9, "%s: grade problem %s runs on the emulator too", s.Name, p.Name)
		}
	})
	// The grade set of the exercise's suite has an empty group, a 1×1×1 group, sizes that are not
	// multiples of the tile, and more tiles than a GPU's persistent grid has blocks (132 × 2).
	var empty, one, ragged, many bool
	for _, p := range m.Suite("fp32").Problems.Grade {
		shapes, _ := GroupsOf(p)
		tiles := 0
		for _, s := range shapes {
			empty = empty || s.Empty()
			one = one || s == Shape{1, 1, 1}
			ragged = ragged || (s.M%128 != 0 && s.M > 128)
			tiles += s.Tiles(128, 128)
		}
		many = many || tiles > 264
	}
	assert.True(t, empty && one && ragged && many, "empty %v, 1×1×1 %v, ragged %v, many tiles %v", empty, one, ragged, many)
}

func TestLayoutMoE(t *testing.T) {
	shapes := []Shape{{3, 8, 4}, {0, 8, 4}, {5, 8, 4}}
	l := NewLayout(shapes, 2)
	require.True(t, l.MoE)
	assert.Equal(t, []int32{0, 3, 3, 8}, l.Offsets)
	assert.Equal(t, []int64{0, 12, 12}, l.A, "rows of X one after the other")
	assert.Equal(t, []int64{0, 32, 64}, l.B, "W[e] at e·K·N")
	assert.Equal(t, []int64{0, 24, 24}, l.C)
	assert.Equal(t, int64(8*4), l.ALen)
	assert.Equal(t, int64(3*4*8), l.BLen)
	assert.Equal(t, int64(8*8+128), l.CLen, "Y then a 256-byte canary")
	assert.Equal(t, [][2]int64{{64, 192}}, l.Canaries)
	assert.Equal(t, 8, l.Rows)
}

// Of B, the groups with rows are read (neighbours as one range), and W_0 in the MoE form, for the
// dense variant; an empty expert's weights are not.
func TestLayoutReadB(t *testing.T) {
	moe := NewLayout([]Shape{{0, 8, 4}, {3, 8, 4}, {5, 8, 4}, {0, 8, 4}, {2, 8, 4}}, 2)
	assert.Equal(t, lab.Ranges{{0, 96}, {128, 160}}, moe.ReadB(), "W_0 although empty, W_1 and W_2 in one range, W_4")
	general := NewLayout([]Shape{{3, 5, 7}, {0, 16, 16}, {1, 1, 1}}, 4)
	assert.Equal(t, lab.Ranges{{general.B[0], general.B[0] + 35}, {general.B[2], general.B[2] + 1}}, general.ReadB(),
		"groups of other shapes: the empty one is not read, nor are the gaps")
}

func TestLayoutGeneral(t *testing.T) {
	shapes := []Shape{{3, 5, 7}, {0, 16, 16}, {1, 1, 1}, {17, 33, 65}}
	l := NewLayout(shapes, 4)
	require.False(t, l.MoE)
	owned := make([]int, l.CLen) // how many groups own each element of C
	for g, s := range shapes {
		assert.Zero(t, l.A[g]%64, "A starts 256-byte aligned")
		assert.Zero(t, l.B[g]%64)
		assert.Zero(t, l.C[g]%64)
		for i := int64(0); i < int64(s.M*s.N); i++ {
			owned[l.C[g]+i]++
		}
		if g > 0 {
			assert.GreaterOrEqual(t, l.A[g], l.A[g-1]+int64(shapes[g-1].M*shapes[g-1].K))
			assert.GreaterOrEqual(t, l.C[g], l.C[g-1]+int64(shapes[g-1].M*shapes[g-1].N)+16, "a gap after every C")
		}
	}
	canary := make([]bool, l.CLen)
	for _, r := range l.Canaries {
		for i := r[0]; i < r[1]; i++ {
			canary[i] = true
		}
	}
	for i, n := range owned {
		assert.LessOrEqual(t, n, 1, "element %d belongs to one group at most", i)
		assert.Equal(t, n == 0, canary[i], "element %d: a canary exactly when no group owns it", i)
	}
	assert.True(t, canary[l.CLen-1], "C ends with a canary")
}

func TestEncodeGroups(t *testing.T) {
	shapes := []Shape{{3, 5, 7}, {2, 4, 6}}
	l := NewLayout(shapes, 2)
	words := l.EncodeGroups([]int{1, 0}, 0x1000, 0x2000, 0x3000, 2)
	require.Len(t, words, 2*GroupDescBytes/8)
	b := make([]byte, 0, 2*GroupDescBytes)
	for _, w := range words {
		b = binary.LittleEndian.AppendUint64(b, w)
	}
	le := binary.LittleEndian
	// First descriptor: group 1.
	assert.Equal(t, uint64(0x1000+2*l.A[1]), le.Uint64(b[0:]))
	assert.Equal(t, uint64(0x2000+2*l.B[1]), le.Uint64(b[8:]))
	assert.Equal(t, uint64(0x3000+2*l.C[1]), le.Uint64(b[16:]))
	ints := func(off int) []uint32 {
		var out []uint32
		for i := 0; i < 6; i++ {
			out = append(out, le.Uint32(b[off+24+4*i:]))
		}
		return out
	}
	assert.Equal(t, []uint32{2, 4, 6, 6, 4, 4}, ints(0), "M, N, K, lda=K, ldb=N, ldc=N")
	assert.Equal(t, []uint32{3, 5, 7, 7, 5, 5}, ints(GroupDescBytes))
}

func TestLongestFirst(t *testing.T) {
	shapes := []Shape{{128, 128, 128}, {256, 256, 256}, {64, 64, 1024}, {512, 512, 256}}
	assert.Equal(t, []int{2, 3, 1, 0}, LongestFirst(shapes), "by K, then by size")
	tiles := []int{}
	for _, s := range []Shape{{0, 5, 5}, {200, 256, 1}, {1, 1, 1}, {512, 512, 9}} {
		tiles = append(tiles, s.Tiles(128, 128))
	}
	assert.Equal(t, []int{0, 4, 1, 16}, tiles)
}

// The records of lab 03's kernels (four words a tile: SM, group, start, end) as a timeline.
func TestTimelineOfTileRecords(t *testing.T) {
	recs := []uint64{
		1, 0, 1000, 1500, // tile 0: SM 1, group 0
		0, 2, 900, 2000, // tile 1: SM 0, group 2
		0, 0, 0, 0, // tile 2: never recorded
		5, 1, 1100, 1200,
	}
	tl := results.TimelineOfRecords(recs, 4, 2)
	assert.Equal(t, 1, tl.Missing)
	assert.Equal(t, 6, tl.SMs, "an SM id beyond the device's count widens the figure")
	assert.Equal(t, 2, tl.Launches)
	assert.Equal(t, [][4]int64{{0, 0, 1100, 2}, {1, 100, 600, 0}, {5, 200, 300, 1}}, tl.Tiles)
}

// totalFLOPs is the work of all groups.
func totalFLOPs(shapes []Shape) float64 {
	f := 0.0
	for _, s := range shapes {
		f += s.FLOPs()
	}
	return f
}

func TestParseCustom(t *testing.T) {
	moe := &lab.Suite{Name: "moe", Problems: lab.ProblemSet{GPU: []lab.Problem{{Params: map[string]int64{"experts": 8, "tokens": 64, "n": 8, "k": 8}}}}}
	plain := &lab.Suite{Name: "fp32", Problems: lab.ProblemSet{GPU: []lab.Problem{{Params: map[string]int64{"g": 4, "m0": 8}}}}}
	p, err := Lab{}.ParseCustom(moe, map[string]string{"experts": "128", "tokens": "zipf:17480", "k": "7168", "n": "2048"})
	require.NoError(t, err)
	assert.Equal(t, map[string]int64{"experts": 128, "tokens": 17480, "dist": DistZipf, "k": 7168, "n": 2048}, p.Params)

	p, err = Lab{}.ParseCustom(moe, map[string]string{"experts": "8", "tokens": "zipf1.5:100", "k": "64", "n": "64", "param": "empty=2"})
	require.NoError(t, err)
	assert.Equal(t, int64(150), p.Params["skew"])
	assert.Equal(t, int64(2), p.Params["empty"])

	p, err = Lab{}.ParseCustom(moe, map[string]string{"experts": "8", "tokens": "1Ki", "k": "64", "n": "64"})
	require.NoError(t, err)
	assert.Equal(t, int64(DistUniform), p.Params["dist"])
	assert.Equal(t, int64(1024), p.Params["tokens"])

	for flags, want := range map[string]map[string]string{
		"missing --k":         {"experts": "8", "tokens": "64", "n": "8"},
		"uniform:N, zipf:N":   {"experts": "8", "tokens": "gauss:64", "n": "8", "k": "8"},
		"is not an integer":   {"experts": "eight", "tokens": "64", "n": "8", "k": "8"},
		"must be 1..":         {"experts": "0", "tokens": "64", "n": "8", "k": "8"},
		"write key=value":     {"experts": "8", "tokens": "64", "n": "8", "k": "8", "param": "empty"},
		"Zipf exponent \"x\"": {"experts": "8", "tokens": "zipfx:64", "n": "8", "k": "8"},
	} {
		_, err := Lab{}.ParseCustom(moe, want)
		require.Error(t, err, flags)
		assert.Contains(t, err.Error(), flags)
	}
	_, err = Lab{}.ParseCustom(plain, map[string]string{"experts": "8"})
	var na *lab.NotApplicable
	assert.ErrorAs(t, err, &na)
	_, err = Lab{}.ParseCustom(moe, map[string]string{"shape": "1x2x3"})
	assert.ErrorAs(t, err, &na)
}
