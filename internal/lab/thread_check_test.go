package lab

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCheckThreads(t *testing.T) {
	out := make([]int32, 1000)
	for i := range out {
		out[i] = int32(3 * i)
	}
	calls := 0
	want := func(tid int) int32 { calls++; return int32(3 * tid) }
	rep := CheckThreads(out, 128, 20, 1, want)
	assert.True(t, rep.OK, rep.Detail())
	assert.Equal(t, 1000, rep.Checked, "every output counts as checked")
	assert.Equal(t, 20, calls, "only the sampled threads are recomputed")

	out[999]++ // the last thread is always sampled
	rep = CheckThreads(out, 128, 20, 1, want)
	assert.False(t, rep.OK)
	assert.Equal(t, 999, rep.MaxErrAt, "named by thread")
	assert.Equal(t, 999, rep.Mismatches[0].Index)

	assert.True(t, CheckThreads(out[:3], 128, 20, 1, want).OK, "fewer threads than samples: all of them")
}
