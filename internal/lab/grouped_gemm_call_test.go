package lab

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

type recordedGrouped struct {
	groups  []gpu.GemmGroup
	a, b, c gpu.Ptr
	in, out gpu.DataType
}

func (r *recordedGrouped) GemmGroupedBatched(s gpu.Stream, groups []gpu.GemmGroup, a, b, c gpu.Ptr, in, out gpu.DataType) error {
	*r = recordedGrouped{groups, a, b, c, in, out}
	return nil
}

// Equal shapes share a group, in the order of their first product; the pointer arrays follow the
// groups and lie one after the other.
func TestGroupedGemm(t *testing.T) {
	env := caseEnv(t)
	p := NewPrep(env)
	ds := []gpu.GemmDesc{
		gpu.RowMajorGemm(3, 8, 16, 0x100, 0x200, 0x300, gpu.BF16, gpu.BF16),
		gpu.RowMajorGemm(5, 8, 16, 0x110, 0x210, 0x310, gpu.BF16, gpu.BF16),
		gpu.RowMajorGemm(3, 8, 16, 0x120, 0x220, 0x320, gpu.BF16, gpu.BF16),
	}
	g := PrepGroupedGemm(p, ds, gpu.BF16, gpu.BF16)
	require.NoError(t, p.Err)
	require.Len(t, g.Groups, 2)
	assert.Equal(t, gpu.GemmGroup{M: 8, N: 3, K: 16, Alpha: 1, LDA: 8, LDB: 16, LDC: 8, Count: 2}, g.Groups[0])
	assert.Equal(t, 1, g.Groups[1].Count)
	ptrs, err := g.Ptrs.Download()
	require.NoError(t, err)
	// cuBLAS's A is the row-major B (gpu.RowMajorGemm).
	assert.Equal(t, []uint64{0x200, 0x220, 0x210, 0x100, 0x120, 0x110, 0x300, 0x320, 0x310}, ptrs)

	var r recordedGrouped
	require.NoError(t, g.Run(&r, env.Stream))
	base := g.Ptrs.DevicePtr()
	assert.Equal(t, recordedGrouped{g.Groups, base, base + 24, base + 48, gpu.BF16, gpu.BF16}, r)
}
