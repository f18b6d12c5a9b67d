//go:build cgo

package emu

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/gpu/gputest"
)

func TestMatchReduceAndBarrierPredicates(t *testing.T) {
	d := openDev(t, 0)
	in := make([]int32, 64)
	for l := 0; l < 32; l++ {
		in[l] = int32(l % 4)
		in[32+l] = 3
	}
	in[5] = -7
	out := alloc[uint32](t, d, 8*64)
	require.NoError(t, launchSync(d, kernelOf(t, d, "extras.cu", "warp_extras"),
		gpu.LaunchConfig{Grid: gpu.D1(1), Block: gpu.D1(64)}, upload(t, d, in), out))
	got := download(t, out)
	for w := 0; w < 2; w++ {
		var sum uint32
		mx, mn := int32(math.MinInt32), int32(math.MaxInt32)
		for l := 0; l < 32; l++ {
			v := in[w*32+l]
			sum += uint32(v)
			mx, mn = max(mx, v), min(mn, v)
		}
		for l := 0; l < 32; l++ {
			i := w*32 + l
			var match uint32
			for j := 0; j < 32; j++ {
				if in[w*32+j] == in[i] {
					match |= 1 << j
				}
			}
			all, pred := uint32(0), uint32(0)
			if w == 1 {
				all, pred = 0xffffffff, 1
			}
			want := []uint32{match, all, pred, sum, uint32(mx), uint32(mn), 3, 0xffffffff}
			require.Equal(t, want, got[8*i:8*i+8], "thread %d", i)
		}
	}
}

func TestRoundingModes(t *testing.T) {
	d := openDev(t, 0)
	rng := rand.New(rand.NewPCG(19, 20))
	in := []float32{1, -1, 0.1, -0.1, 65504, 65519, -65519, 65520, 1e6, -1e6, 3e-8, -3e-8, 1e-9, -1e-9,
		1.00390625, 1.01171875, -1.00390625, math.MaxFloat32, -math.MaxFloat32, float32(math.Inf(1)), 1e-40}
	for i := 0; i < 500; i++ {
		in = append(in, float32(math.Ldexp(rng.Float64()*2-1, rng.IntN(44)-26)))
	}
	n := len(in)
	out := alloc[uint16](t, d, 8*n)
	require.NoError(t, launchSync(d, kernelOf(t, d, "extras.cu", "rounding"),
		gpu.LaunchConfig{Grid: gpu.D1((n + 127) / 128), Block: gpu.D1(128)}, upload(t, d, in), out, int32(n)))
	got := download(t, out)
	for i, x := range in {
		for mode := 0; mode < 4; mode++ {
			assert.Equal(t, f32ToF16Mode(x, mode), got[8*i+mode], "half of %g, mode %d", x, mode)
			assert.Equal(t, f32ToBF16Mode(x, mode), got[8*i+4+mode], "bf16 of %g, mode %d", x, mode)
		}
	}
}

func TestIntegerAndFloatIntrinsics(t *testing.T) {
	d := openDev(t, 0)
	rng := rand.New(rand.NewPCG(21, 22))
	xs := []uint32{0, 1, 0x80000000, 0xffffffff, 0x12345678}
	for len(xs) < 64 {
		xs = append(xs, rng.Uint32()>>rng.IntN(32))
	}
	out := alloc[uint32](t, d, 6*64)
	require.NoError(t, launchSync(d, kernelOf(t, d, "extras.cu", "int_intrinsics"),
		gpu.LaunchConfig{Grid: gpu.D1(1), Block: gpu.D1(64)}, upload(t, d, xs), out))
	got := download(t, out)
	for i, x := range xs {
		b := func(v uint32, k int) uint32 { return v >> (8 * k) & 0xff }
		perm := b(x, 0) | b(0x76543210, 0)<<8 | b(x, 1)<<16 | b(0x76543210, 1)<<24
		fun := uint32((uint64(^x)<<32 | uint64(x)) << (uint(i) & 31) >> 32)
		ffs := uint32(0)
		if x != 0 {
			ffs = uint32(bits.TrailingZeros32(x) + 1)
		}
		want := []uint32{uint32(bits.OnesCount32(x)), uint32(bits.LeadingZeros32(x)), bits.Reverse32(x), perm, fun, ffs}
		require.Equal(t, want, got[6*i:6*i+6], "x = %#x", x)
	}

	fs := randFloats(rng, 64)
	fs[0], fs[1] = 2.5, -3
	fout := alloc[float32](t, d, 6*64)
	require.NoError(t, launchSync(d, kernelOf(t, d, "extras.cu", "float_intrinsics"),
		gpu.LaunchConfig{Grid: gpu.D1(1), Block: gpu.D1(64)}, upload(t, d, fs), fout))
	g := download(t, fout)
	for i, f := range fs {
		x := float64(f)
		want := []float64{1 / math.Sqrt(math.Abs(x)+1), math.Max(0, math.Min(1, x)), x / 3, math.Exp(x), x*x + 1,
			math.Min(x, 0.25) + math.Max(x, -0.25)}
		for j, w := range want {
			assert.InEpsilon(t, w+1e-30, float64(g[6*i+j])+1e-30, 1e-6, "x = %g, result %d", x, j)
		}
	}
}

func TestWMMAOtherShapesAndTypes(t *testing.T) {
	d := openDev(t, 0)
	rng := rand.New(rand.NewPCG(23, 24))
	one := gpu.LaunchConfig{Grid: gpu.D1(1), Block: gpu.D1(32)}

	// m32n8k16, half in and half out.
	af, bf := randFloats(rng, 32*16), randFloats(rng, 16*8)
	ah, bh := make([]uint16, len(af)), make([]uint16, len(bf))
	ar, br := make([]float32, len(af)), make([]float32, len(bf))
	for i := range af {
		ah[i], ar[i] = f32ToF16(af[i]), f16ToF32(f32ToF16(af[i]))
	}
	for i := range bf {
		bh[i], br[i] = f32ToF16(bf[i]), f16ToF32(f32ToF16(bf[i]))
	}
	ch := alloc[uint16](t, d, 32*8)
	require.NoError(t, launchSync(d, kernelOf(t, d, "extras.cu", "wmma_m32n8k16"), one, upload(t, d, ah), upload(t, d, bh), ch))
	ref := gputest.MatmulRef(ar, br, 32, 8, 16)
	for i, h := range download(t, ch) {
		assert.InDelta(t, ref[i], float64(f16ToF32(h)), math.Abs(ref[i])/1024+1e-7, "element %d", i)
	}

	// int8 in, int32 out, B column-major.
	a8, b8 := make([]int8, 256), make([]int8, 256)
	for i := range a8 {
		a8[i], b8[i] = int8(rng.IntN(256)-128), int8(rng.IntN(256)-128)
	}
	ci := alloc[int32](t, d, 256)
	require.NoError(t, launchSync(d, kernelOf(t, d, "extras.cu", "wmma_int8"), one, upload(t, d, a8), upload(t, d, b8), ci))
	gi := download(t, ci)
	for i := 0; i < 16; i++ {
		for j := 0; j < 16; j++ {
			var s int32
			for k := 0; k < 16; k++ {
				s += int32(a8[i*16+k]) * int32(b8[j*16+k])
			}
			require.Equal(t, s, gi[i*16+j], "C[%d][%d]", i, j)
		}
	}

	// tf32 m16n16k8, stored column-major.
	at, bt := randFloats(rng, 16*8), randFloats(rng, 8*16)
	ct := alloc[float32](t, d, 256)
	require.NoError(t, launchSync(d, kernelOf(t, d, "extras.cu", "wmma_tf32"), one, upload(t, d, at), upload(t, d, bt), ct))
	atr, btr := make([]float32, len(at)), make([]float32, len(bt))
	for i := range at {
		atr[i], btr[i] = tf32RNA(at[i]), tf32RNA(bt[i])
	}
	rt := gputest.MatmulRef(atr, btr, 16, 16, 8)
	gt := download(t, ct)
	colMajorRef := make([]float64, 256)
	for i := 0; i < 16; i++ {
		for j := 0; j < 16; j++ {
			colMajorRef[j*16+i] = rt[i*16+j]
		}
	}
	assert.Less(t, gputest.RelErr(gt, colMajorRef), 1e-6)

	err := launchSync(d, kernelOf(t, d, "extras.cu", "wmma_bad_ldm"), one, upload(t, d, ah))
	requireEmuError(t, err, "EMU_MISUSE", "ldm 12 is not a multiple of 16 bytes")
}

func tf32RNA(f float32) float32 {
	b := math.Float32bits(f)
	return math.Float32frombits((b + 0x1000) &^ 0x1fff)
}

// f32ToF16Mode rounds to binary16: mode 0 nearest even, 1 toward zero, 2 down, 3 up.
func f32ToF16Mode(f float32, mode int) uint16 {
	x := float64(f)
	if math.IsNaN(x) {
		return 0x7fff
	}
	if math.IsInf(x, 0) {
		return f32ToF16(f)
	}
	if x == 0 {
		return f32ToF16(f)
	}
	e := math.Floor(math.Log2(math.Abs(x)))
	if math.Ldexp(1, int(e)) > math.Abs(x) {
		e--
	}
	if e < -14 {
		e = -14
	}
	ulp := math.Ldexp(1, int(e)-10)
	q := x / ulp
	switch mode {
	case 0:
		q = math.RoundToEven(q)
	case 1:
		q = math.Trunc(q)
	case 2:
		q = math.Floor(q)
	case 3:
		q = math.Ceil(q)
	}
	v := q * ulp
	const maxHalf = 65504
	if math.Abs(v) > maxHalf {
		toInf := mode == 0 || (mode == 3 && v > 0) || (mode == 2 && v < 0)
		if toInf {
			return f32ToF16(float32(math.Copysign(math.Inf(1), v)))
		}
		v = math.Copysign(maxHalf, v)
	}
	if v == 0 {
		return f32ToF16(float32(math.Copysign(0, x)))
	}
	return f32ToF16(float32(v)) // v is a half value: exact
}

func f32ToBF16Mode(f float32, mode int) uint16 {
	b := math.Float32bits(f)
	if f != f {
		return 0x7fff
	}
	if mode == 0 {
		return f32ToBF16(f)
	}
	hi, lo := b>>16, b&0xffff
	neg := b>>31 == 1
	if lo != 0 && ((mode == 2 && neg) || (mode == 3 && !neg)) {
		hi++
	}
	return uint16(hi)
}

// __activemask in divergent code names the lanes that took the branch, so the classic
// warp-aggregated atomic works.
func TestActivemaskInDivergentCode(t *testing.T) {
	d := openDev(t, 0)
	rng := rand.New(rand.NewPCG(25, 26))
	const n = 256
	in := make([]int32, n)
	for i := range in {
		in[i] = int32(rng.IntN(3) - 1)
	}
	counter := upload(t, d, []int32{0})
	slots, masks := alloc[int32](t, d, n), alloc[uint32](t, d, n)
	require.NoError(t, launchSync(d, kernelOf(t, d, "extras.cu", "aggregated_append"),
		gpu.LaunchConfig{Grid: gpu.D1(2), Block: gpu.D1(128)}, upload(t, d, in), counter, slots, masks))
	gs, gm := download(t, slots), download(t, masks)
	count := 0
	seen := map[int32]bool{}
	for w := 0; w < n/32; w++ {
		var want uint32
		for l := 0; l < 32; l++ {
			if in[w*32+l] > 0 {
				want |= 1 << l
			}
		}
		for l := 0; l < 32; l++ {
			i := w*32 + l
			if in[i] > 0 {
				count++
				assert.Equal(t, want, gm[i], "mask of thread %d", i)
				assert.False(t, seen[gs[i]], "slot %d given twice", gs[i])
				seen[gs[i]] = true
			} else {
				assert.Equal(t, uint32(0), gm[i])
			}
		}
	}
	assert.Equal(t, []int32{int32(count)}, download(t, counter))
	for s := 0; s < count; s++ {
		assert.True(t, seen[int32(s)], "slot %d", s)
	}
}

// The emulator's mma.sync, ldmatrix and cp.async (emu/kl_emu_ptx.h) keep PTX's register layouts:
// one m16n8k16 from fragments that ldmatrix read from a cp.async-staged tile is A·B.
func TestPTXMmaFromLdmatrix(t *testing.T) {
	d := openDev(t, 0)
	rng := rand.New(rand.NewPCG(31, 32))
	af, bf := randFloats(rng, 16*16), randFloats(rng, 16*8)
	ah, bh := make([]uint16, len(af)), make([]uint16, len(bf))
	ar, br := make([]float32, len(af)), make([]float32, len(bf))
	for i := range af {
		ah[i] = f32ToBF16(af[i])
		ar[i] = math.Float32frombits(uint32(ah[i]) << 16)
	}
	for i := range bf {
		bh[i] = f32ToBF16(bf[i])
		br[i] = math.Float32frombits(uint32(bh[i]) << 16)
	}
	c := alloc[float32](t, d, 16*8)
	one := gpu.LaunchConfig{Grid: gpu.D1(1), Block: gpu.D1(32)}
	require.NoError(t, launchSync(d, kernelOf(t, d, "ptx.cu", "mma_16x8x16"), one, upload(t, d, ah), upload(t, d, bh), c))
	assert.Less(t, gputest.RelErr(download(t, c), gputest.MatmulRef(ar, br, 16, 8, 16)), 1e-6)
}

// A cp.async lands at the wait that covers its group, not before; a source size of 0 fills zeros.
func TestPTXCpAsyncLandsAtItsWait(t *testing.T) {
	d := openDev(t, 0)
	const n = 64
	in := make([]int32, 4*n)
	for i := range in {
		in[i] = int32(100 + i)
	}
	out := alloc[int32](t, d, 4*n)
	require.NoError(t, launchSync(d, kernelOf(t, d, "ptx.cu", "cp_async_order"), gpu.LaunchConfig{Grid: gpu.D1(1), Block: gpu.D1(n)},
		upload(t, d, in), out))
	got := download(t, out)
	for i := 0; i < n; i++ {
		assert.Equal(t, []int32{-1, in[4*i], -1, 0}, got[4*i:4*i+4], "thread %d", i)
	}
}

// What the PTX forms refuse, by name: a misaligned ldmatrix, an mma.sync of half a warp, and more
// cp.async copies in flight than the emulator keeps.
func TestPTXMisuse(t *testing.T) {
	d := openDev(t, 0)
	k := kernelOf(t, d, "ptx.cu", "ptx_misuse")
	warp := gpu.LaunchConfig{Grid: gpu.D1(1), Block: gpu.D1(32)}
	requireEmuError(t, launchSync(d, k, warp, int32(0)), "EMU_MISUSE", "ldmatrix: a row address must be 16-byte aligned")
	d = openDev(t, 0) // a misuse is sticky: a fresh device for each case
	k = kernelOf(t, d, "ptx.cu", "ptx_misuse")
	requireEmuError(t, launchSync(d, k, warp, int32(1)), "EMU_BARRIER_DIVERGENCE", "lane(s) 0-15 wait for it at a warp-wide operation")
	d = openDev(t, 0)
	k = kernelOf(t, d, "ptx.cu", "ptx_misuse")
	requireEmuError(t, launchSync(d, k, warp, int32(2)), "EMU_MISUSE", "more than 64 copies of one thread in flight")
}
