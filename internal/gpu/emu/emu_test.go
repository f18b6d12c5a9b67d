//go:build cgo

package emu

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/gpu/gputest"
)

func TestEveryTestKernelBuilds(t *testing.T) {
	for _, f := range []string{"tiled.cu", "dynsmem.cu", "warp.cu", "atomics.cu", "index3d.cu", "templates.cu",
		"halfbf16.cu", "wmma.cu", "printf.cu", "handshake.cu", "peer.cu", "faults.cu", "extras.cu"} {
		t.Run(f, func(t *testing.T) { build(t, f) })
	}
}

func TestDeviceSaysItIsAnEmulator(t *testing.T) {
	d := openDev(t, 0)
	info := d.Info()
	assert.True(t, info.Emulated)
	assert.Equal(t, DeviceName, info.Name)
	assert.Equal(t, "emu", info.Backend)
	assert.Equal(t, 32, info.WarpSize)
	assert.GreaterOrEqual(t, info.SMs, 1)
	attrs, err := d.Attributes()
	require.NoError(t, err)
	assert.Equal(t, "EMULATED", attrs[0].Name)
	b, _ := Open()
	assert.Equal(t, "c++", b.Toolchain())
}

func TestTiledSGEMMWithBarriers(t *testing.T) {
	d := openDev(t, 0)
	k := kernelOf(t, d, "tiled.cu", "sgemm_tiled")
	rng := rand.New(rand.NewPCG(1, 2))
	const m, n, kk = 70, 45, 83 // not multiples of the tile
	a, b := randFloats(rng, m*kk), randFloats(rng, kk*n)
	da, db := upload(t, d, a), upload(t, d, b)
	dc := alloc[float32](t, d, m*n)
	require.NoError(t, dc.Fill32(0x7fc00000, nil))
	cfg := gpu.LaunchConfig{Grid: gpu.D2((n+15)/16, (m+15)/16), Block: gpu.D2(16, 16)}
	require.NoError(t, launchSync(d, k, cfg, da, db, dc, int32(m), int32(n), int32(kk)))
	got := download(t, dc)
	assert.Less(t, gputest.RelErr(got, gputest.MatmulRef(a, b, m, n, kk)), 1e-6)
}

// A missing __syncthreads is a race on a GPU; on the emulator the fast thread overwrites the
// tile before the others read it, every time, so a check of the result catches it.
func TestMissingSyncthreadsGivesWrongAnswer(t *testing.T) {
	d := openDev(t, 0)
	k := kernelOf(t, d, "tiled.cu", "sgemm_tiled_nosync")
	rng := rand.New(rand.NewPCG(5, 6))
	const n = 64
	a, b := randFloats(rng, n*n), randFloats(rng, n*n)
	da, db := upload(t, d, a), upload(t, d, b)
	dc := alloc[float32](t, d, n*n)
	cfg := gpu.LaunchConfig{Grid: gpu.D2(n/16, n/16), Block: gpu.D2(16, 16)}
	require.NoError(t, launchSync(d, k, cfg, da, db, dc, int32(n), int32(n), int32(n)))
	assert.Greater(t, gputest.RelErr(download(t, dc), gputest.MatmulRef(a, b, n, n, n)), 1e-2, "the race must show")
}

func TestDynamicSharedMemory(t *testing.T) {
	d := openDev(t, 0)
	rng := rand.New(rand.NewPCG(7, 8))
	const block, blocks = 128, 6
	in := randFloats(rng, block*blocks)
	din := upload(t, d, in)
	dout := alloc[float32](t, d, len(in))
	k := kernelOf(t, d, "dynsmem.cu", "reverse_dyn")
	require.NoError(t, launchSync(d, k, gpu.LaunchConfig{Grid: gpu.D1(blocks), Block: gpu.D1(block), SharedBytes: block * 4}, din, dout))
	out := download(t, dout)
	for b := 0; b < blocks; b++ {
		for i := 0; i < block; i++ {
			require.Equal(t, in[b*block+block-1-i], out[b*block+i], "block %d element %d", b, i)
		}
	}

	// Above 48 KiB after raising the kernel's limit, as on CUDA.
	fill := kernelOf(t, d, "dynsmem.cu", "fill_dyn")
	info := upload(t, d, []int32{-1, 0})
	const bytes = 200 * 1024
	cfg := gpu.LaunchConfig{Grid: gpu.D1(4), Block: gpu.D1(256), SharedBytes: bytes}
	err := gpu.Launch(fill, cfg, int32(bytes/4), info)
	requireEmuError(t, err, "EMU_SHARED_LIMIT", "SetMaxDynamicShared")
	require.NoError(t, fill.SetMaxDynamicShared(bytes))
	require.NoError(t, launchSync(d, fill, cfg, int32(bytes/4), info))
	got := download(t, info)
	assert.Equal(t, []int32{0, 0}, got, "aligned to 16 bytes, and no word lost")
}

// Blocks that run at the same time on different workers each have their own __shared__.
func TestSharedMemoryIsPerBlock(t *testing.T) {
	d := openDev(t, 0)
	k := kernelOf(t, d, "dynsmem.cu", "shared_isolation")
	errs := upload(t, d, []int32{0})
	require.NoError(t, launchSync(d, k, gpu.LaunchConfig{Grid: gpu.D1(8), Block: gpu.D1(256)}, errs, int32(20)))
	assert.Equal(t, []int32{0}, download(t, errs))
}

func TestWarpShuffleReduction(t *testing.T) {
	d := openDev(t, 0)
	rng := rand.New(rand.NewPCG(9, 10))
	const n = 1000
	in := randFloats(rng, n)
	k := kernelOf(t, d, "warp.cu", "block_sum")
	for _, block := range []int{256, 96, 64} {
		blocks := (n + block - 1) / block
		out := alloc[float32](t, d, blocks)
		require.NoError(t, launchSync(d, k, gpu.LaunchConfig{Grid: gpu.D1(blocks), Block: gpu.D1(block)}, upload(t, d, in), out, int32(n)))
		got := download(t, out)
		for b := 0; b < blocks; b++ {
			var want float64
			for i := b * block; i < (b+1)*block && i < n; i++ {
				want += float64(in[i])
			}
			assert.InDelta(t, want, got[b], 1e-4, "block size %d, block %d", block, b)
		}
	}
}

func TestWarpShuffleVariants(t *testing.T) {
	d := openDev(t, 0)
	const n = 64
	in := make([]int32, n)
	for i := range in {
		in[i] = int32(i*7%13 - 4)
	}
	allsum, bcast, scan, seg := alloc[int32](t, d, n), alloc[int32](t, d, n), alloc[int32](t, d, n), alloc[int32](t, d, n)
	k := kernelOf(t, d, "warp.cu", "warp_ops")
	require.NoError(t, launchSync(d, k, gpu.LaunchConfig{Grid: gpu.D1(1), Block: gpu.D1(n)}, upload(t, d, in), allsum, bcast, scan, seg))
	gs, gb, gc, gg := download(t, allsum), download(t, bcast), download(t, scan), download(t, seg)
	for w := 0; w < n/32; w++ {
		var sum, pre int32
		for l := 0; l < 32; l++ {
			sum += in[w*32+l]
		}
		for l := 0; l < 32; l++ {
			i := w*32 + l
			pre += in[i]
			var segSum int32
			for j := l / 8 * 8; j < l/8*8+8; j++ {
				segSum += in[w*32+j]
			}
			assert.Equal(t, sum, gs[i], "xor all-reduce, lane %d", i)
			assert.Equal(t, in[w*32+5], gb[i], "broadcast, lane %d", i)
			assert.Equal(t, pre, gc[i], "inclusive scan, lane %d", i)
			assert.Equal(t, segSum, gg[i], "width 8, lane %d", i)
		}
	}

	// A partial mask: the even lanes shuffle among themselves.
	out := alloc[int32](t, d, 32)
	ev := kernelOf(t, d, "warp.cu", "even_lanes")
	require.NoError(t, launchSync(d, ev, gpu.LaunchConfig{Grid: gpu.D1(1), Block: gpu.D1(32)}, upload(t, d, in[:32]), out))
	got := download(t, out)
	for l := 0; l < 32; l++ {
		if l%2 == 0 {
			assert.Equal(t, in[(l+2)%32], got[l], "lane %d", l)
		} else {
			assert.Equal(t, int32(-1), got[l], "lane %d", l)
		}
	}
}

func TestBallotAnyAll(t *testing.T) {
	d := openDev(t, 0)
	const n = 128 // four warps: mixed, all positive, none positive, one positive
	in := make([]int32, n)
	for i := 0; i < 32; i++ {
		in[i] = int32(i%3 - 1)
		in[32+i] = 1
		in[64+i] = -1
		in[96+i] = -1
	}
	in[96+17] = 5
	out := alloc[uint32](t, d, 16)
	k := kernelOf(t, d, "warp.cu", "votes")
	require.NoError(t, launchSync(d, k, gpu.LaunchConfig{Grid: gpu.D1(1), Block: gpu.D1(n)}, upload(t, d, in), out))
	got := download(t, out)
	var mixed uint32
	count := uint32(0)
	for i := 0; i < n; i++ {
		if in[i] > 0 {
			count++
			if i < 32 {
				mixed |= 1 << i
			}
		}
	}
	want := []uint32{
		mixed, 1, 0, count,
		0xffffffff, 1, 1, count,
		0, 0, 0, count,
		1 << 17, 1, 0, count,
	}
	assert.Equal(t, want, got)
}

func TestAtomicsAcrossBlocks(t *testing.T) {
	d := openDev(t, 0)
	rng := rand.New(rand.NewPCG(11, 12))
	const n, nbins = 100000, 37
	in := make([]int32, n)
	want := make([]int32, nbins)
	for i := range in {
		in[i] = int32(rng.IntN(nbins))
		want[in[i]]++
	}
	bins := upload(t, d, make([]int32, nbins))
	h := kernelOf(t, d, "atomics.cu", "histogram")
	require.NoError(t, launchSync(d, h, gpu.LaunchConfig{Grid: gpu.D1(16), Block: gpu.D1(256), SharedBytes: nbins * 4},
		upload(t, d, in), int32(n), bins, int32(nbins)))
	assert.Equal(t, want, download(t, bins))

	const m = 5000
	vals := make([]float32, m)
	var fsum float64
	imax, imin := int32(math.MinInt32), int32(math.MaxInt32)
	for i := range vals {
		vals[i] = float32(rng.IntN(2001)-1000) / 1024 // exact in float: the float sum is exact too
		fsum += float64(vals[i])
		q := int32(vals[i] * 1000)
		imax, imin = max(imax, q), min(imin, q)
	}
	f, dd := upload(t, d, []float32{0}), upload(t, d, []float64{0})
	mx, mn := upload(t, d, []int32{math.MinInt32}), upload(t, d, []int32{math.MaxInt32})
	wrap, u64, cas := upload(t, d, []uint32{0}), upload(t, d, []uint64{0}), upload(t, d, []int32{0})
	mk := kernelOf(t, d, "atomics.cu", "mixed")
	require.NoError(t, launchSync(d, mk, gpu.LaunchConfig{Grid: gpu.D1((m + 127) / 128), Block: gpu.D1(128)},
		upload(t, d, vals), int32(m), f, dd, mx, mn, wrap, u64, cas))
	assert.Equal(t, float32(fsum), download(t, f)[0], "float atomicAdd")
	assert.Equal(t, fsum, download(t, dd)[0], "double atomicAdd")
	assert.Equal(t, imax, download(t, mx)[0], "atomicMax")
	assert.Equal(t, imin, download(t, mn)[0], "atomicMin")
	assert.Equal(t, uint32(m%10), download(t, wrap)[0], "atomicInc wraps at 9")
	assert.Equal(t, uint64(m)<<33, download(t, u64)[0], "64-bit atomicAdd")
	assert.Equal(t, int32(m), download(t, cas)[0], "atomicCAS loop")

	lock, counter := upload(t, d, []int32{0}), upload(t, d, []int32{0})
	lk := kernelOf(t, d, "atomics.cu", "locked_count")
	require.NoError(t, launchSync(d, lk, gpu.LaunchConfig{Grid: gpu.D1(40), Block: gpu.D1(128)}, lock, counter))
	assert.Equal(t, int32(40*4), download(t, counter)[0], "spin lock")
}

func TestThreeDimensionalIndexing(t *testing.T) {
	d := openDev(t, 0)
	grid, block := gpu.D3(3, 2, 2), gpu.D3(4, 3, 2)
	total := int(grid.Count() * block.Count())
	out := alloc[int32](t, d, 4*total)
	dims := alloc[int32](t, d, 9)
	k := kernelOf(t, d, "index3d.cu", "who")
	require.NoError(t, launchSync(d, k, gpu.LaunchConfig{Grid: grid, Block: block}, out, dims))
	got := download(t, out)
	for g := 0; g < total; g++ {
		b, th := g/int(block.Count()), g%int(block.Count())
		want := []int32{int32(b), int32(th % 4), int32(th / 4 % 3), int32(th / 12)}
		require.Equal(t, want, got[4*g:4*g+4], "thread %d", g)
	}
	assert.Equal(t, []int32{3, 2, 2, 4, 3, 2, 32, 0, 0}, download(t, dims))
}

func TestTemplatesBehindExternC(t *testing.T) {
	d := openDev(t, 0)
	m, err := d.LoadModule(build(t, "templates.cu"))
	require.NoError(t, err)
	_, err = m.Kernel("not_an_entry")
	requireEmuError(t, err, "EMU_NOT_FOUND", "axpy_f32")
	_, err = m.Kernel("cuda_only")
	require.Error(t, err, "an entry inside #if defined(KL_BACKEND_CUDA) is not compiled here")

	axpy, err := m.Kernel("axpy_f32")
	require.NoError(t, err)
	ps, err := axpy.Params()
	require.NoError(t, err)
	var types []string
	for _, p := range ps {
		types = append(types, p.Type)
	}
	assert.Equal(t, []string{"float", "const float*", "float*", "int"}, types)

	x := upload(t, d, []float32{1, 2, 3})
	y := upload(t, d, []float32{10, 20, 30})
	cfg := gpu.LaunchConfig{Grid: gpu.D1(1), Block: gpu.D1(32)}
	require.NoError(t, launchSync(d, axpy, cfg, float32(2), x, y, int32(3)))
	assert.Equal(t, []float32{12, 24, 36}, download(t, y))

	// gpu.Launch checks arguments against the registry's C types.
	err = gpu.Launch(axpy, cfg, int32(2), x, y, int32(3))
	require.ErrorContains(t, err, "the parameter is a float")
	err = gpu.Launch(axpy, cfg, float32(2), x, y)
	require.ErrorContains(t, err, "got 3 arguments, the kernel takes 4")

	ad, err := m.Kernel("axpy_f64")
	require.NoError(t, err)
	xd, yd := upload(t, d, []float64{1, 2}), upload(t, d, []float64{0.5, 0.25})
	require.NoError(t, launchSync(d, ad, cfg, float64(3), xd, yd, int32(2)))
	assert.Equal(t, []float64{3.5, 6.25}, download(t, yd))

	for name, f := range map[string]float32{"scale2": 2, "scale3": 3} {
		k, err := m.Kernel(name)
		require.NoError(t, err)
		v := upload(t, d, []float32{1, -2})
		require.NoError(t, launchSync(d, k, cfg, v, int32(2)))
		assert.Equal(t, []float32{f, -2 * f}, download(t, v), name)
	}

	ib, err := m.Kernel("in_block")
	require.NoError(t, err)
	ps, _ = ib.Params()
	assert.Equal(t, 1, ps[2].Size, "char")
	out := alloc[int64](t, d, 1)
	require.NoError(t, launchSync(d, ib, cfg, out, uint64(40), gpu.RawArg{2}))
	assert.Equal(t, []int64{42}, download(t, out))
}

func TestHalfAndBFloat16Conversions(t *testing.T) {
	d := openDev(t, 0)
	rng := rand.New(rand.NewPCG(13, 14))
	in := []float32{0, float32(math.Copysign(0, -1)), 1, -2.5, 0.1, 65504, 65519.99, 65520, 1e-8, 6e-8, 3e-8,
		2.980232e-08, 5.9604645e-08, 6.1035156e-05, 6.1e-05, 1.00390625, 1.01171875, 3.3895314e+38, float32(math.Inf(1)),
		float32(math.Inf(-1)), 1e-40, -7.25e-6}
	for i := 0; i < 2000; i++ {
		in = append(in, float32(math.Ldexp(rng.Float64()*2-1, rng.IntN(50)-30)))
	}
	n := len(in)
	hb, hf, bb, bf := alloc[uint16](t, d, n), alloc[float32](t, d, n), alloc[uint16](t, d, n), alloc[float32](t, d, n)
	k := kernelOf(t, d, "halfbf16.cu", "convert")
	require.NoError(t, launchSync(d, k, gpu.LaunchConfig{Grid: gpu.D1((n + 255) / 256), Block: gpu.D1(256)},
		upload(t, d, in), hb, hf, bb, bf, int32(n)))
	ghb, ghf, gbb, gbf := download(t, hb), download(t, hf), download(t, bb), download(t, bf)
	for i, x := range in {
		assert.Equal(t, f32ToF16(x), ghb[i], "half bits of %g", x)
		assert.Equal(t, f16ToF32(f32ToF16(x)), ghf[i], "half value of %g", x)
		assert.Equal(t, f32ToBF16(x), gbb[i], "bf16 bits of %g", x)
		assert.Equal(t, math.Float32frombits(uint32(f32ToBF16(x))<<16), gbf[i], "bf16 value of %g", x)
	}
	// NaN converts to a NaN.
	nan := upload(t, d, []float32{float32(math.NaN())})
	h1, f1, b1, g1 := alloc[uint16](t, d, 1), alloc[float32](t, d, 1), alloc[uint16](t, d, 1), alloc[float32](t, d, 1)
	require.NoError(t, launchSync(d, k, gpu.LaunchConfig{Grid: gpu.D1(1), Block: gpu.D1(1)}, nan, h1, f1, b1, g1, int32(1)))
	assert.True(t, math.IsNaN(float64(download(t, f1)[0])))
	assert.True(t, math.IsNaN(float64(download(t, g1)[0])))

	// Arithmetic rounds once to the format.
	const m = 256
	a, b, x, y := make([]uint16, m), make([]uint16, m), make([]uint16, m), make([]uint16, m)
	for i := 0; i < m; i++ {
		a[i], b[i] = f32ToF16(rng.Float32()*4-2), f32ToF16(rng.Float32()*4-2)
		x[i], y[i] = f32ToBF16(rng.Float32()*4-2), f32ToBF16(rng.Float32()*4-2)
	}
	c, z, h2 := alloc[uint16](t, d, m), alloc[uint16](t, d, m), alloc[uint32](t, d, m)
	ar := kernelOf(t, d, "halfbf16.cu", "arith")
	require.NoError(t, launchSync(d, ar, gpu.LaunchConfig{Grid: gpu.D1(1), Block: gpu.D1(m)},
		upload(t, d, a), upload(t, d, b), c, upload(t, d, x), upload(t, d, y), z, h2, int32(m)))
	gc, gz, gh := download(t, c), download(t, z), download(t, h2)
	for i := 0; i < m; i++ {
		fa, fb := float64(f16ToF32(a[i])), float64(f16ToF32(b[i]))
		assert.Equal(t, f32ToF16(float32(fa*fb+fa)), gc[i], "__hfma %d", i) // exact in float64, one rounding
		fx, fy := float64(math.Float32frombits(uint32(x[i])<<16)), float64(math.Float32frombits(uint32(y[i])<<16))
		p := math.Float32frombits(uint32(f32ToBF16(float32(fx*fy))) << 16) // operators round after each step
		assert.Equal(t, f32ToBF16(float32(float64(p)+fx)), gz[i], "bf16 operators %d", i)
		assert.Equal(t, uint32(f32ToF16(float32(2*fa)))|uint32(f32ToF16(float32(2*fb)))<<16, gh[i], "__hmul2 %d", i)
	}
}

func TestWMMAMatchesCPUReference(t *testing.T) {
	d := openDev(t, 0)
	rng := rand.New(rand.NewPCG(15, 16))
	const m, n, k = 64, 48, 80
	af, bf := randFloats(rng, m*k), randFloats(rng, k*n)
	// Inputs rounded to the 16-bit formats; the reference uses the rounded values.
	ah, bh := make([]uint16, m*k), make([]uint16, k*n)
	ar, br := make([]float32, m*k), make([]float32, k*n)
	for i := range af {
		ah[i] = f32ToF16(af[i])
		ar[i] = f16ToF32(ah[i])
	}
	for i := range bf {
		bh[i] = f32ToF16(bf[i])
		br[i] = f16ToF32(bh[i])
	}
	c := alloc[float32](t, d, m*n)
	kf := kernelOf(t, d, "wmma.cu", "wmma_gemm_f16")
	cfg := gpu.LaunchConfig{Grid: gpu.D2(n/16, m/16), Block: gpu.D1(32)}
	require.NoError(t, launchSync(d, kf, cfg, upload(t, d, ah), upload(t, d, bh), c, int32(m), int32(n), int32(k)))
	assert.Less(t, gputest.RelErr(download(t, c), gputest.MatmulRef(ar, br, m, n, k)), 1e-6, "half inputs")

	// bf16 inputs, B given column-major (as Bᵀ row-major), C = 2·A·B − 1·C.
	abf, btbf := make([]uint16, m*k), make([]uint16, n*k)
	ar2, br2 := make([]float32, m*k), make([]float32, k*n)
	for i := range af {
		abf[i] = f32ToBF16(af[i])
		ar2[i] = math.Float32frombits(uint32(abf[i]) << 16)
	}
	for p := 0; p < k; p++ {
		for j := 0; j < n; j++ {
			v := f32ToBF16(bf[p*n+j])
			btbf[j*k+p] = v
			br2[p*n+j] = math.Float32frombits(uint32(v) << 16)
		}
	}
	c0 := randFloats(rng, m*n)
	dc := upload(t, d, c0)
	kb := kernelOf(t, d, "wmma.cu", "wmma_gemm_bf16")
	require.NoError(t, launchSync(d, kb, cfg, upload(t, d, abf), upload(t, d, btbf), dc, int32(m), int32(n), int32(k),
		float32(2), float32(-1)))
	ref := gputest.MatmulRef(ar2, br2, m, n, k)
	for i := range ref {
		ref[i] = 2*ref[i] - float64(c0[i])
	}
	assert.Less(t, gputest.RelErr(download(t, dc), ref), 1e-6, "bf16 inputs")
}

func TestPrintf(t *testing.T) {
	d := openDev(t, 0)
	var buf bytes.Buffer
	SetPrintfOutput(&buf)
	defer SetPrintfOutput(nil)
	k := kernelOf(t, d, "printf.cu", "hello")
	v := upload(t, d, []float32{0.5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1.25})
	require.NoError(t, launchSync(d, k, gpu.LaunchConfig{Grid: gpu.D1(2), Block: gpu.D1(17)}, v))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	assert.ElementsMatch(t, []string{
		"block 0 thread 0 value 0.50", "block 0 thread 16 value 1.25",
		"block 1 thread 0 value 0.50", "block 1 thread 16 value 1.25",
	}, lines)
}

func TestTwoBlocksHandshakeThroughGlobalFlag(t *testing.T) {
	SetSMs(2)
	defer SetSMs(0)
	d := openDev(t, 0)
	const rounds = 50
	flag, order := upload(t, d, []int32{0}), upload(t, d, make([]int32, 2*rounds))
	k := kernelOf(t, d, "handshake.cu", "pingpong")
	require.NoError(t, launchSync(d, k, gpu.LaunchConfig{Grid: gpu.D1(2), Block: gpu.D1(64)}, flag, order, int32(rounds)))
	got := download(t, order)
	for i := range got {
		require.Equal(t, int32(i%2), got[i], "turn %d", i)
	}
	assert.Equal(t, []int32{2 * rounds}, download(t, flag))

	// With 4 SMs all 4 blocks are resident: the three that wait see the last one's flag.
	SetSMs(4)
	d4 := openDev(t, 1)
	assert.Equal(t, 4, d4.Info().SMs)
	w := kernelOf(t, d4, "handshake.cu", "wait_for_last")
	f2 := upload(t, d4, []int32{0})
	require.NoError(t, launchSync(d4, w, gpu.LaunchConfig{Grid: gpu.D1(4), Block: gpu.D1(32)}, f2))
}

func TestTwoDevicesExchangeThroughPeerPointers(t *testing.T) {
	d0, d1 := openDev(t, 0), openDev(t, 1)
	ok, err := d0.CanAccessPeer(d1)
	require.NoError(t, err)
	require.True(t, ok)
	ok, _ = d0.CanAccessPeer(d0)
	assert.False(t, ok, "a device is not its own peer")
	require.NoError(t, d0.EnablePeerAccess(d1))
	require.NoError(t, d1.EnablePeerAccess(d0))

	const n, block = 512, 256 // two blocks per device: both resident with 2 SMs
	rng := rand.New(rand.NewPCG(17, 18))
	x0, x1 := randFloats(rng, n), randFloats(rng, n)
	mine0, mine1 := upload(t, d0, x0), upload(t, d1, x1)
	recv0, recv1 := alloc[float32](t, d0, n), alloc[float32](t, d1, n)
	flag0, flag1 := upload(t, d0, []int32{0}), upload(t, d1, []int32{0})
	out0, out1 := alloc[float32](t, d0, n), alloc[float32](t, d1, n)
	k0, k1 := kernelOf(t, d0, "peer.cu", "exchange"), kernelOf(t, d1, "peer.cu", "exchange")
	s0, err := d0.NewStream()
	require.NoError(t, err)
	s1, err := d1.NewStream()
	require.NoError(t, err)
	cfg0 := gpu.LaunchConfig{Grid: gpu.D1(n / block), Block: gpu.D1(block), Stream: s0}
	cfg1 := gpu.LaunchConfig{Grid: gpu.D1(n / block), Block: gpu.D1(block), Stream: s1}
	// Both kernels wait for each other: this finishes only if they run at the same time.
	require.NoError(t, gpu.Launch(k0, cfg0, mine0, recv1, recv0, flag1, flag0, out0, int32(n)))
	require.NoError(t, gpu.Launch(k1, cfg1, mine1, recv0, recv1, flag0, flag1, out1, int32(n)))
	require.NoError(t, s0.Synchronize())
	require.NoError(t, s1.Synchronize())
	g0, g1 := download(t, out0), download(t, out1)
	for i := 0; i < n; i++ {
		require.Equal(t, 2*x1[i]+1, g0[i], "device 0 element %d", i)
		require.Equal(t, 2*x0[i]+1, g1[i], "device 1 element %d", i)
	}

	// Two streams of one device run at once too (lab 05 overlaps a GEMM with a kernel that
	// signals it): the same exchange between two launches on device 0.
	s0b, err := d0.NewStream()
	require.NoError(t, err)
	ra, rb := alloc[float32](t, d0, n), alloc[float32](t, d0, n)
	fa, fb := upload(t, d0, []int32{0}), upload(t, d0, []int32{0})
	oa, ob := alloc[float32](t, d0, n), alloc[float32](t, d0, n)
	cfgB := gpu.LaunchConfig{Grid: gpu.D1(n / block), Block: gpu.D1(block), Stream: s0b}
	require.NoError(t, gpu.Launch(k0, cfg0, mine0, rb, ra, fb, fa, oa, int32(n)))
	require.NoError(t, gpu.Launch(k0, cfgB, mine0, ra, rb, fa, fb, ob, int32(n)))
	require.NoError(t, d0.Synchronize())
	ga, gb := download(t, oa), download(t, ob)
	for i := 0; i < n; i++ {
		require.Equal(t, 2*x0[i]+1, ga[i], "stream a element %d", i)
		require.Equal(t, 2*x0[i]+1, gb[i], "stream b element %d", i)
	}

	// A peer copy, and memory accounted per device.
	require.NoError(t, recv1.CopyFrom(mine0, s0))
	require.NoError(t, s0.Synchronize())
	assert.Equal(t, x0, download(t, recv1))
	free0, total0, err := d0.MemInfo()
	require.NoError(t, err)
	assert.Equal(t, int64(4*(7*n+3)), total0-free0, "seven buffers of n floats and three flags")
}

func TestStreamsAndEvents(t *testing.T) {
	d := openDev(t, 0)
	s, err := d.NewStream()
	require.NoError(t, err)
	defer s.Close()
	e0, err := d.NewEvent()
	require.NoError(t, err)
	e1, err := d.NewEvent()
	require.NoError(t, err)
	buf := alloc[float32](t, d, 1<<20)
	require.NoError(t, e0.Record(s))
	require.NoError(t, buf.Fill32(math.Float32bits(1.5), s))
	require.NoError(t, e1.Record(s))
	require.NoError(t, e1.Synchronize())
	ms, err := e1.ElapsedMs(e0)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, ms, 0.0)
	got := make([]float32, 1<<20)
	require.NoError(t, buf.CopyToHost(got, s))
	assert.Equal(t, float32(1.5), got[12345])
}

// ---- errors ----

func requireEmuError(t *testing.T, err error, name string, contains ...string) *gpu.CallError {
	t.Helper()
	require.Error(t, err)
	var ce *gpu.CallError
	require.True(t, errors.As(err, &ce), "a *gpu.CallError, got %T: %v", err, err)
	assert.Equal(t, "emu", ce.Backend)
	assert.Equal(t, name, ce.Name, "%v", err)
	for _, c := range contains {
		assert.Contains(t, err.Error(), c)
	}
	return ce
}

func TestOverLimitLaunches(t *testing.T) {
	d := openDev(t, 0)
	k := kernelOf(t, d, "faults.cu", "divergent_barrier")
	x := alloc[float32](t, d, 4096)
	for _, tc := range []struct {
		name string
		cfg  gpu.LaunchConfig
		want []string
	}{
		{"too many threads", gpu.LaunchConfig{Grid: gpu.D1(1), Block: gpu.D1(2048)}, []string{"2048 threads", "at most 1024"}},
		{"block z", gpu.LaunchConfig{Grid: gpu.D1(1), Block: gpu.D3(1, 1, 128)}, []string{"at most 1024×1024×64"}},
		{"grid y", gpu.LaunchConfig{Grid: gpu.D2(1, 70000), Block: gpu.D1(32)}, []string{"grid (1,70000,1) is too large"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			requireEmuError(t, gpu.Launch(k, tc.cfg, x), "EMU_INVALID_LAUNCH", tc.want...)
		})
	}
	err := gpu.Launch(k, gpu.LaunchConfig{Grid: gpu.D1(1), Block: gpu.D1(32), SharedBytes: 64 << 10}, x)
	requireEmuError(t, err, "EMU_SHARED_LIMIT", "over the kernel's limit of 49152 bytes")
	require.Error(t, k.SetMaxDynamicShared(300<<10))
	tiled := kernelOf(t, d, "tiled.cu", "sgemm_tiled")
	err = gpu.Launch(tiled, gpu.LaunchConfig{Grid: gpu.D1(1), Block: gpu.D2(32, 32)}, x, x, x, int32(1), int32(1), int32(1))
	requireEmuError(t, err, "EMU_INVALID_LAUNCH", "__launch_bounds__ allows at most 256")
	require.NoError(t, d.Synchronize(), "refused launches leave the device usable")
}

func TestBarrierDivergence(t *testing.T) {
	d := openDev(t, 0)
	x := alloc[float32](t, d, 256)
	start := time.Now()
	k := kernelOf(t, d, "faults.cu", "divergent_barrier")
	err := launchSync(d, k, gpu.LaunchConfig{Grid: gpu.D1(2), Block: gpu.D1(64)}, x)
	ce := requireEmuError(t, err, "EMU_BARRIER_DIVERGENCE", "kernel divergent_barrier", "returned while 16 thread(s)",
		"wait at __syncthreads")
	assert.False(t, ce.Sticky())

	e := kernelOf(t, d, "faults.cu", "early_return")
	err = launchSync(d, e, gpu.LaunchConfig{Grid: gpu.D1(1), Block: gpu.D1(64)}, x, int32(40))
	requireEmuError(t, err, "EMU_BARRIER_DIVERGENCE", "thread (40,0,0) returned while 40 thread(s)")
	assert.Less(t, time.Since(start), 5*time.Second)
	require.NoError(t, launchSync(d, e, gpu.LaunchConfig{Grid: gpu.D1(1), Block: gpu.D1(64)}, x, int32(64)),
		"the device is usable after a non-sticky error")
}

func TestDeadlock(t *testing.T) {
	d := openDev(t, 0)
	x := alloc[float32](t, d, 64)
	k := kernelOf(t, d, "faults.cu", "deadlock")
	start := time.Now()
	err := launchSync(d, k, gpu.LaunchConfig{Grid: gpu.D1(1), Block: gpu.D1(32)}, x)
	requireEmuError(t, err, "EMU_DEADLOCK", "thread 0 wait at __syncthreads",
		"threads 1-31 wait at __shfl_sync (mask 0xffffffff)")
	assert.Less(t, time.Since(start), 5*time.Second)
}

func TestWritePastTheEndOfABuffer(t *testing.T) {
	d := openDev(t, 0)
	const n = 1000
	x := alloc[float32](t, d, n)
	k := kernelOf(t, d, "faults.cu", "write_past_end")
	err := launchSync(d, k, gpu.LaunchConfig{Grid: gpu.D1(4), Block: gpu.D1(256)}, x, int32(n))
	ce := requireEmuError(t, err, "EMU_OUT_OF_BOUNDS_WRITE", "kernel write_past_end wrote past the end of a buffer of 4000 bytes",
		"allocated at emu/helpers_test.go:", "offset +4012")
	assert.False(t, ce.Sticky())
	// The guard is repaired: the next launch that stays inside is clean.
	require.NoError(t, launchSync(d, kernelOf(t, d, "tiled.cu", "sgemm_tiled"),
		gpu.LaunchConfig{Grid: gpu.D1(1), Block: gpu.D2(16, 16)}, x, x, x, int32(0), int32(0), int32(0)))
}

func TestIllegalAddress(t *testing.T) {
	d0 := openDev(t, 0)
	const n = 1024
	x := alloc[float32](t, d0, n)
	k := kernelOf(t, d0, "faults.cu", "write_at")
	err := launchSync(d0, k, gpu.LaunchConfig{Grid: gpu.D1(1), Block: gpu.D1(32)}, x, int64(n+4000))
	ce := requireEmuError(t, err, "EMU_ILLEGAL_ADDRESS", "write to address", "past the end of a buffer of 4096 bytes")
	assert.True(t, ce.Sticky(), "a wild write may have hit anything")
	require.Error(t, d0.Synchronize(), "the device keeps its sticky error")

	d1 := openDev(t, 1)
	k1 := kernelOf(t, d1, "faults.cu", "write_at")
	err = launchSync(d1, k1, gpu.LaunchConfig{Grid: gpu.D1(1), Block: gpu.D1(32)}, gpu.Ptr(0), int64(3))
	requireEmuError(t, err, "EMU_ILLEGAL_ADDRESS", "null pointer")
}

// A 16-byte load off a 16-byte boundary faults on a GPU (misaligned address); on the emulator
// it is a general-protection fault, which names no address, and must not read as a null pointer.
func TestMisalignedVectorLoad(t *testing.T) {
	d := openDev(t, 0)
	x := alloc[float32](t, d, 64)
	out := alloc[float32](t, d, 4)
	k := kernelOf(t, d, "faults.cu", "load16_at")
	cfg := gpu.LaunchConfig{Grid: gpu.D1(1), Block: gpu.D1(32)}
	require.NoError(t, launchSync(d, k, cfg, x, int64(16), out))
	err := launchSync(d, k, cfg, x, int64(2), out)
	requireEmuError(t, err, "EMU_MISALIGNED_ADDRESS", "not a multiple of 16")
}

func TestTrapsAndMisuse(t *testing.T) {
	d := openDev(t, 0)
	cfg := gpu.LaunchConfig{Grid: gpu.D1(1), Block: gpu.D1(32)}
	vals := make([]int32, 32)
	for i := range vals {
		vals[i] = int32(i + 1)
	}
	vals[7] = 0
	err := launchSync(d, kernelOf(t, d, "faults.cu", "assert_positive"), cfg, upload(t, d, vals))
	requireEmuError(t, err, "EMU_TRAP", "assertion failed at testdata/faults.cu:", "x[threadIdx.x] > 0", "thread (7,0,0)")

	err = launchSync(d, kernelOf(t, d, "faults.cu", "int_div"), cfg, upload(t, d, vals), upload(t, d, vals), alloc[int32](t, d, 32))
	requireEmuError(t, err, "EMU_ARITHMETIC_TRAP", "SIGFPE")

	err = launchSync(d, kernelOf(t, d, "faults.cu", "bad_mask"), cfg, upload(t, d, vals))
	requireEmuError(t, err, "EMU_MISUSE", "does not include the lane itself")

	sink := alloc[int32](t, d, 2)
	err = launchSync(d, kernelOf(t, d, "faults.cu", "stack_overflow"), gpu.LaunchConfig{Grid: gpu.D1(1), Block: gpu.D1(4)}, sink, int32(100000))
	requireEmuError(t, err, "EMU_STACK_OVERFLOW", "overflowed its stack")
	require.NoError(t, launchSync(d, kernelOf(t, d, "faults.cu", "stack_overflow"), gpu.LaunchConfig{Grid: gpu.D1(1), Block: gpu.D1(4)}, sink, int32(10)))
}

func TestEndlessKernelHitsTheTimeLimit(t *testing.T) {
	SetTimeLimit(time.Second)
	defer SetTimeLimit(0)
	for _, name := range []string{"endless", "endless_atomic"} {
		t.Run(name, func(t *testing.T) {
			d := openDev(t, 0)
			flag := upload(t, d, []int32{0})
			k := kernelOf(t, d, "faults.cu", name)
			start := time.Now()
			err := launchSync(d, k, gpu.LaunchConfig{Grid: gpu.D1(3), Block: gpu.D1(64)}, flag)
			el := time.Since(start)
			ce := requireEmuError(t, err, "EMU_TIMEOUT", "did not finish within 1.0 s", EnvTimeLimit)
			assert.True(t, ce.Sticky())
			assert.Less(t, el, 5*time.Second)
			require.Error(t, d.Synchronize(), "sticky")
		})
	}
	// The workers were stopped: a new device runs kernels at full speed.
	d := openDev(t, 1)
	tiled := kernelOf(t, d, "tiled.cu", "sgemm_tiled")
	x := alloc[float32](t, d, 256)
	require.NoError(t, launchSync(d, tiled, gpu.LaunchConfig{Grid: gpu.D1(1), Block: gpu.D2(16, 16)}, x, x, x, int32(16), int32(16), int32(16)))
}

// A block that waits for a block that is not resident deadlocks, as on a GPU, and the time
// limit says why.
func TestNonResidentBlocksDeadlockLikeAGPU(t *testing.T) {
	SetTimeLimit(time.Second)
	defer SetTimeLimit(0)
	SetSMs(2)
	defer SetSMs(0)
	d := openDev(t, 0)
	flag := upload(t, d, []int32{0})
	k := kernelOf(t, d, "handshake.cu", "wait_for_last")
	err := launchSync(d, k, gpu.LaunchConfig{Grid: gpu.D1(6), Block: gpu.D1(32)}, flag)
	requireEmuError(t, err, "EMU_TIMEOUT", "runs 2 block(s) at a time", "had not started")
}

// ---- float16 and bfloat16 references, written independently of the emulator's ----

// f32ToF16 rounds to the nearest binary16 (ties to even) by scaling to an integer count of ulps.
func f32ToF16(f float32) uint16 {
	x := float64(f)
	sign := uint16(0)
	if math.Signbit(x) {
		sign = 0x8000
		x = -x
	}
	switch {
	case math.IsNaN(x):
		return 0x7fff
	case x >= 65520 || math.IsInf(x, 0):
		return sign | 0x7c00
	case x == 0:
		return sign
	}
	e := math.Floor(math.Log2(x))
	if math.Ldexp(1, int(e)) > x { // guard Log2 rounding
		e--
	} else if math.Ldexp(1, int(e)+1) <= x {
		e++
	}
	if e < -14 {
		e = -14
	}
	ulp := math.Ldexp(1, int(e)-10)
	q := math.RoundToEven(x / ulp)
	v := q * ulp
	if v < math.Ldexp(1, -14) {
		return sign | uint16(v/math.Ldexp(1, -24))
	}
	ve := math.Floor(math.Log2(v))
	if math.Ldexp(1, int(ve)) > v {
		ve--
	}
	mant := v/math.Ldexp(1, int(ve)) - 1
	return sign | uint16(int(ve)+15)<<10 | uint16(math.Round(mant*1024))
}

func f16ToF32(h uint16) float32 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	e, m := int(h>>10&0x1f), float64(h&0x3ff)
	switch e {
	case 0:
		return float32(sign * m * math.Ldexp(1, -24))
	case 31:
		if m == 0 {
			return float32(math.Inf(int(sign)))
		}
		return float32(math.NaN())
	}
	return float32(sign * (1 + m/1024) * math.Ldexp(1, e-15))
}

// f32ToBF16 rounds to the nearest bfloat16 (ties to even) with integer arithmetic on the bits.
func f32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if f != f {
		return 0x7fff
	}
	hi, lo := b>>16, b&0xffff
	if lo > 0x8000 || (lo == 0x8000 && hi&1 == 1) {
		hi++
	}
	return uint16(hi)
}

// The runtime's fault handler passes faults outside kernel code on to Go's: a nil dereference in
// Go is still a recoverable panic after a launch installed it.
func TestGoPanicsStillWorkAfterALaunch(t *testing.T) {
	d := openDev(t, 0)
	x := alloc[float32](t, d, 256)
	require.NoError(t, launchSync(d, kernelOf(t, d, "tiled.cu", "sgemm_tiled"),
		gpu.LaunchConfig{Grid: gpu.D1(1), Block: gpu.D2(16, 16)}, x, x, x, int32(16), int32(16), int32(16)))
	var p *struct{ v int }
	recovered := func() (r any) {
		defer func() { r = recover() }()
		return p.v
	}()
	require.NotNil(t, recovered)
	assert.Contains(t, recovered.(error).Error(), "nil pointer dereference")
}

// When a block fails, the blocks still running on other workers are stopped at once, even one
// that spins on a flag the failed block will never set.
func TestAnErrorStopsTheWholeGrid(t *testing.T) {
	SetSMs(2)
	defer SetSMs(0)
	d := openDev(t, 0)
	flag := upload(t, d, []int32{0, 0})
	start := time.Now()
	err := launchSync(d, kernelOf(t, d, "faults.cu", "fail_while_other_waits"),
		gpu.LaunchConfig{Grid: gpu.D1(2), Block: gpu.D1(32)}, flag)
	requireEmuError(t, err, "EMU_TRAP", "assertion failed", "block (0,0,0)")
	assert.Less(t, time.Since(start), 3*time.Second, "not the 30 s time limit")
}

// A stream waits for an event recorded on another device's stream, without the host waiting.
func TestStreamWaitsForAnotherDevicesEvent(t *testing.T) {
	needEmu(t)
	d0, d1 := openDev(t, 0), openDev(t, 1)
	s0, err := d0.NewStream()
	require.NoError(t, err)
	s1, err := d1.NewStream()
	require.NoError(t, err)
	ev, err := d0.NewEvent()
	require.NoError(t, err)
	after, err := d1.NewEvent()
	require.NoError(t, err)

	big := alloc[uint32](t, d0, 64<<20) // a slow operation on s0 (256 MiB)
	require.NoError(t, big.Fill32(1, s0))
	require.NoError(t, ev.Record(s0))
	require.NoError(t, s1.WaitEvent(ev)) // returns at once: the host does not wait
	require.NoError(t, after.Record(s1))
	require.NoError(t, s1.Synchronize())
	require.NoError(t, s0.Synchronize())
	ms, err := after.ElapsedMs(ev)
	require.NoError(t, err)
	require.GreaterOrEqual(t, ms, 0.0, "s1 went on only after s0 reached the event")

	never, err := d0.NewEvent()
	require.NoError(t, err)
	require.NoError(t, s1.WaitEvent(never), "an event never recorded is complete")
	require.NoError(t, s1.Synchronize())
}
