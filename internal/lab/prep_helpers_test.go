package lab

import (
	"errors"
	"math"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Prep keeps the first error: the calls after it allocate nothing, and Done returns no case.
func TestPrepKeepsTheFirstError(t *testing.T) {
	env := caseEnv(t)

	p := NewPrep(env)
	in := PrepUpload(p, "in", []float32{1, 2, 3})
	out := PrepOutput[float32](p, "out", 3, PoisonNaN32)
	scratch := PrepScratch[int32](p, "scratch", 2, PoisonBytes(0))
	require.NoError(t, p.Err)
	assert.Equal(t, 3, in.Len())
	assert.Equal(t, 2, scratch.Len())
	got, err := Done(p, out)
	require.NoError(t, err)
	assert.Same(t, out, got)

	bufs := len(env.arena().bufs)
	p.Need(1 << 62) // more than any device has free
	require.ErrorContains(t, p.Err, "use a smaller problem")
	first := p.Err
	assert.Nil(t, PrepUpload(p, "after", []float32{1}))
	assert.Nil(t, PrepAlloc[uint16](p, "after", 4))
	assert.Nil(t, PrepScratch[int32](p, "after", 2, PoisonBytes(0)))
	assert.Zero(t, p.UploadAs("after", BF16, []float32{1}))
	assert.Same(t, first, p.Err, "the first error stays")
	assert.Len(t, env.arena().bufs, bufs, "nothing is allocated after an error")
	none, err := Done(p, out)
	assert.Equal(t, first, err)
	assert.Nil(t, none)
}

// UploadPartsAs copies the parts it is given (bf16 ones rounded in place) and leaves NaN elsewhere.
func TestUploadPartsAs(t *testing.T) {
	env := caseEnv(t)
	vals := []float32{1, 2, 3.001, 4, 5, 1.00390625}
	parts := [][2]int64{{1, 2}, {4, 6}}

	p := NewPrep(env)
	f32 := p.UploadPartsAs("f32", FP32, vals[:4], [][2]int64{{1, 3}})
	bf := p.UploadPartsAs("bf16", BF16, vals, parts)
	require.NoError(t, p.Err)
	got32 := make([]uint32, 4)
	require.NoError(t, env.Device.CopyDtoH(unsafe.Pointer(&got32[0]), f32, 16, nil))
	assert.Equal(t, []uint32{0xFFFFFFFF, math.Float32bits(2), math.Float32bits(3.001), 0xFFFFFFFF}, got32)
	got16 := make([]uint16, 6)
	require.NoError(t, env.Device.CopyDtoH(unsafe.Pointer(&got16[0]), bf, 12, nil))
	assert.Equal(t, []uint16{0xFFFF, 0x4000, 0xFFFF, 0xFFFF, 0x40A0, 0x3F80}, got16, "2, NaN, NaN, 5 and 1+2⁻⁸ rounded to 1")
	assert.Equal(t, float32(1), vals[5], "the host copy holds what the device has")
	assert.Equal(t, float32(3.001), vals[2], "outside the parts nothing is rounded or copied")

	assert.Zero(t, p.UploadPartsAs("bad", FP32, vals, [][2]int64{{4, 7}}))
	assert.ErrorContains(t, p.Err, "part [4, 7) is outside its 6 elements")
}

// Widened reads an fp32 output as it is and a bf16 one widened.
func TestWidened(t *testing.T) {
	env := caseEnv(t)

	f32, err := Output[float32](env, "f32", 2, PoisonNaN32)
	require.NoError(t, err)
	bf16, err := Output[uint16](env, "bf16", 2, PoisonNaN)
	require.NoError(t, err)
	require.NoError(t, f32.CopyFromHost([]float32{1.5, -2}, nil))
	require.NoError(t, bf16.CopyFromHost([]uint16{0x3FC0, 0xC000}, nil)) // 1.5, -2
	o := newOutputs(env, 0)
	for _, read := range []func() ([]float32, error){
		func() ([]float32, error) { return Widened(o, f32) },
		func() ([]float32, error) { return Widened(o, bf16) },
	} {
		got, err := read()
		require.NoError(t, err)
		assert.Equal(t, []float32{1.5, -2}, got)
	}
}

// Host memory through a Prep is allocated as by the plain calls until an error, then not at all.
func TestPrepHostBuffersKeepTheFirstError(t *testing.T) {
	env := caseEnv(t)

	p := NewPrep(env)
	assert.Len(t, p.PinnedHost("in", 5), 5)
	out := p.HostOutput("out", 3, false, PoisonBytes(0x5A))
	require.NoError(t, p.Err)
	require.NoError(t, env.arena().poison())
	assert.Equal(t, []byte{0x5A, 0x5A, 0x5A}, out)

	assert.Nil(t, p.HostOutput("bad", 4, true, PoisonNaN32))
	require.ErrorContains(t, p.Err, "byte poison")
	first := p.Err
	assert.Nil(t, p.PinnedHost("after", 8))
	assert.Same(t, first, p.Err, "the first error stays")
}

// Prep.Events makes n events that the case closes, and none after an error.
func TestPrepEvents(t *testing.T) {
	env := caseEnv(t)
	p := NewPrep(env)
	bufs := len(env.arena().bufs)
	evs := p.Events(3)
	require.NoError(t, p.Err)
	assert.Len(t, evs, 3)
	assert.Len(t, env.arena().bufs, bufs+3, "the case owns its events")

	p.Err = errors.New("earlier")
	assert.Nil(t, p.Events(2))
	assert.Len(t, env.arena().bufs, bufs+3, "nothing is made after an error")
}

// Order records the event on one stream and makes the other wait for it.
func TestOrder(t *testing.T) {
	env := caseEnv(t)
	p := NewPrep(env)
	evs := p.Events(1)
	require.NoError(t, p.Err)
	side, err := env.SideStream()
	require.NoError(t, err)
	assert.NoError(t, Order(evs[0], env.Stream, side))
}

// An output in either precision has an address and reads back widened; a failed one has none.
func TestOutputIn(t *testing.T) {
	env := caseEnv(t)
	p := NewPrep(env)
	f32, bf16 := PrepOutputIn(p, "f32", FP32, 2, PoisonNaN), PrepOutputIn(p, "bf16", BF16, 2, PoisonNaN)
	require.NoError(t, p.Err)
	require.NotZero(t, f32.Ptr())
	require.NotZero(t, bf16.Ptr())
	require.NoError(t, f32.f32.CopyFromHost([]float32{1.5, -2}, nil))
	require.NoError(t, bf16.bf16.CopyFromHost([]uint16{0x3FC0, 0xC000}, nil)) // 1.5, -2
	o := newOutputs(env, 0)
	for _, b := range []*OutputIn{f32, bf16} {
		got, err := b.Read(o)
		require.NoError(t, err)
		assert.Equal(t, []float32{1.5, -2}, got)
	}
	p.Err = assert.AnError
	assert.Zero(t, PrepOutputIn(p, "after", BF16, 2, PoisonNaN).Ptr(), "nothing allocated after an error")
}
