package gpu_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/gpu/fake"
)

func TestPackArgsChecksCountSizeAndKind(t *testing.T) {
	typed := []gpu.Param{{Index: 0, Size: 8, Type: "const float*"}, {Index: 1, Size: 4, Type: "int"}, {Index: 2, Size: 4, Type: "float"}}
	untyped := []gpu.Param{{Index: 0, Size: 8}, {Index: 1, Size: 4}, {Index: 2, Size: 4}}
	tests := []struct {
		name   string
		params []gpu.Param
		args   []any
		want   string // "" = ok
	}{
		{"ok typed", typed, []any{gpu.Ptr(16), int32(3), float32(1.5)}, ""},
		{"ok untyped", untyped, []any{gpu.Ptr(16), uint32(3), float32(1.5)}, ""},
		{"too few", typed, []any{gpu.Ptr(16)}, "got 1 arguments, the kernel takes 3 (const float*, int, float)"},
		{"too many untyped", untyped, []any{gpu.Ptr(16), int32(1), float32(1), int32(2)}, "takes 3 (8 bytes, 4 bytes, 4 bytes)"},
		{"go int", typed, []any{gpu.Ptr(16), 3, float32(1)}, "argument 1 (int): a Go int has no fixed C size: pass int32"},
		{"size mismatch", untyped, []any{gpu.Ptr(16), int64(3), float32(1)}, "argument 1 is 8 bytes (int64), the parameter is 4 bytes"},
		{"kind mismatch", typed, []any{gpu.Ptr(16), float32(3), float32(1)}, "argument 1 (int) is a float (float32), the parameter is an integer"},
		{"pointer for int", typed, []any{gpu.Ptr(16), int32(1), int32(1)}, "argument 2 (float) is an integer"},
		{"vector by value", []gpu.Param{{Size: 8, Type: "float2"}}, []any{gpu.RawArg{1, 2, 3, 4, 5, 6, 7, 8}}, ""},
		{"nil", typed, []any{nil, int32(1), float32(1)}, "nil argument"},
		{"unsupported", typed, []any{"x", int32(1), float32(1)}, "unsupported argument type string"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			packed, err := gpu.PackArgs("saxpy", tc.params, tc.args)
			if tc.want == "" {
				require.NoError(t, err)
				require.Len(t, packed, len(tc.params))
				for i, p := range tc.params {
					assert.Len(t, packed[i], p.Size)
				}
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), "launch saxpy")
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestPackArgsEncodesLittleEndian(t *testing.T) {
	ps := []gpu.Param{{Size: 4}, {Size: 8}, {Size: 3}}
	packed, err := gpu.PackArgs("k", ps, []any{float32(1), int64(-2), gpu.RawArg{1, 2, 3}})
	require.NoError(t, err)
	assert.Equal(t, []byte{0, 0, 0x80, 0x3f}, packed[0])
	assert.Equal(t, []byte{0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, packed[1])
	assert.Equal(t, []byte{1, 2, 3}, packed[2])
}

func openFake(t *testing.T) gpu.Device {
	be, _, err := gpu.Open("fake")
	require.NoError(t, err)
	dev, err := be.Open(0)
	require.NoError(t, err)
	return dev
}

func TestBufferRoundTripAndPoison(t *testing.T) {
	dev := openFake(t)
	host := []float32{1.5, -2, 3.25, 4}
	b, err := gpu.Upload(dev, host)
	require.NoError(t, err)
	defer b.Free()
	assert.Equal(t, 4, b.Len())
	assert.Equal(t, int64(16), b.Bytes())
	got, err := b.Download()
	require.NoError(t, err)
	assert.Equal(t, host, got)

	require.NoError(t, b.Fill32(math.Float32bits(float32(math.NaN())), nil))
	got, _ = b.Download()
	for _, v := range got {
		assert.True(t, math.IsNaN(float64(v)))
	}
	c, err := gpu.Alloc[float32](dev, 4)
	require.NoError(t, err)
	require.NoError(t, b.CopyFromHost(host, nil))
	require.NoError(t, c.CopyFrom(b, nil))
	got, _ = c.Download()
	assert.Equal(t, host, got)

	assert.ErrorContains(t, b.CopyFromHost([]float32{1}, nil), "host slice has 1 elements, buffer has 4")
	d, _ := gpu.Alloc[float64](dev, 2)
	assert.ErrorContains(t, d.Fill32(0, nil), "Fill32 on a buffer of float64")
	require.NoError(t, b.Free())
	require.NoError(t, b.Free(), "Free twice is harmless")
}

func TestEmptyBufferIsValid(t *testing.T) {
	dev := openFake(t)
	b, err := gpu.Alloc[float32](dev, 0)
	require.NoError(t, err)
	assert.NotZero(t, b.DevicePtr())
	got, err := b.Download()
	require.NoError(t, err)
	assert.Empty(t, got)
}

func TestLaunchValidatesShapeAndArgs(t *testing.T) {
	fake.RegisterKernel("gpu_test_noop", []string{"float*", "int"}, func(gpu.LaunchConfig, [][]byte) error { return nil })
	dev := openFake(t)
	mod, err := dev.LoadModule("noop.cu")
	require.NoError(t, err)
	k, err := mod.Kernel("gpu_test_noop")
	require.NoError(t, err)
	buf, _ := gpu.Alloc[float32](dev, 1)
	cfg := gpu.LaunchConfig{Grid: gpu.D1(1), Block: gpu.D1(32)}
	require.NoError(t, gpu.Launch(k, cfg, buf, int32(1)))
	assert.ErrorContains(t, gpu.Launch(k, cfg, buf), "got 1 arguments, the kernel takes 2")
	assert.ErrorContains(t, gpu.Launch(k, gpu.LaunchConfig{Grid: gpu.D2(1, 0), Block: gpu.D1(32)}, buf, int32(1)), "grid (1,0,1) has a zero dimension")
}

func TestOpenUnknownBackend(t *testing.T) {
	_, _, err := gpu.Open("tpu")
	assert.ErrorContains(t, err, `unknown backend "tpu"`)
}

func TestCallError(t *testing.T) {
	e := gpu.NewCallError("cuda", "cuMemAlloc_v2", 2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory", false)
	assert.Equal(t, "cuda: cuMemAlloc_v2 failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory)", e.Error())
	assert.False(t, gpu.IsSticky(e))
	assert.True(t, gpu.IsSticky(gpu.NewCallError("cuda", "cuCtxSynchronize", 700, "CUDA_ERROR_ILLEGAL_ADDRESS", "", true)))
}

func TestHumanBytes(t *testing.T) {
	assert.Equal(t, "512 B", gpu.HumanBytes(512))
	assert.Equal(t, "1 KiB", gpu.HumanBytes(1024))
	assert.Equal(t, "1.5 MiB", gpu.HumanBytes(3<<19))
	assert.Equal(t, "4 GiB", gpu.HumanBytes(4<<30))
}

func TestGridFor(t *testing.T) {
	assert.Equal(t, 264, gpu.GridFor(1<<20, 256, 132, 2), "capped at blocks per SM × SMs")
	assert.Equal(t, 4, gpu.GridFor(1000, 256, 132, 2), "just enough blocks for the work")
	assert.Equal(t, 1, gpu.GridFor(0, 256, 132, 2), "at least one block")
	assert.Equal(t, 1, gpu.GridFor(5, 0, 0, 0), "nonsense arguments still give a valid shape")
}

func TestEnablePeers(t *testing.T) {
	a, b := openFake(t), openFake(t)
	require.NoError(t, gpu.EnablePeers([]gpu.Device{a, b}))
	require.NoError(t, gpu.EnablePeers([]gpu.Device{a, b}), "idempotent")
}

type wrapped struct{ gpu.Device }

func (w wrapped) Unwrap() gpu.Device { return w.Device }

func TestUnwrap(t *testing.T) {
	d := openFake(t)
	assert.Equal(t, d, gpu.Unwrap(d))
	assert.Equal(t, d, gpu.Unwrap(wrapped{wrapped{d}}), "through every wrapper")
}

func TestFill32EachAndSynchronizeAll(t *testing.T) {
	a, b := openFake(t), openFake(t)
	x, _ := gpu.Alloc[float32](a, 3)
	y, _ := gpu.Alloc[float32](b, 2)
	sa, _ := a.NewStream()
	sb, _ := b.NewStream()
	require.NoError(t, gpu.Fill32Each([]*gpu.Buffer[float32]{x, y}, math.Float32bits(1.5), []gpu.Stream{sa, sb}))
	require.NoError(t, gpu.SynchronizeAll([]gpu.Stream{sa, sb}, nil))
	gx, _ := x.Download()
	gy, _ := y.Download()
	assert.Equal(t, []float32{1.5, 1.5, 1.5}, gx)
	assert.Equal(t, []float32{1.5, 1.5}, gy)
}

// The row-major → column-major mapping on a non-square product (lab 01's fake BLAS checks it
// against cuBLAS's column-major definition).
func TestRowMajorGemm(t *testing.T) {
	g := gpu.RowMajorGemm(3, 5, 7, 0xA, 0xB, 0xC, gpu.BF16, gpu.F32)
	assert.Equal(t, 5, g.M)
	assert.Equal(t, 3, g.N)
	assert.Equal(t, 7, g.K)
	assert.Equal(t, gpu.Ptr(0xB), g.A)
	assert.Equal(t, gpu.Ptr(0xA), g.B)
	assert.Equal(t, 5, g.LDA)
	assert.Equal(t, 7, g.LDB)
	assert.Equal(t, 5, g.LDC)
}
