package grouped

// The GPU-only paths of the driver on a fake device: cuBLAS (loop, grouped, dense) and the
// mma.sync and wgmma kernels are Go functions here that compute from exactly the arguments and
// descriptors the driver hands them, with the semantics of the real ones (column-major cuBLAS,
// the kl_group layout, TMA tensor maps). A wrong argument order, a wrong pointer, stride or map
// dimension gives a wrong product, which the driver's own check then rejects.

import (
	"encoding/binary"
	"fmt"
	"github.com/kernel-labs/kernellabs/internal/matref"
	"math"
	"slices"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	_ "github.com/kernel-labs/kernellabs/internal/gpu/fake"
	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/labtest"
	"github.com/kernel-labs/kernellabs/internal/results"
)

// fakeGPU is the fake device with a BLAS and a tensor-map encoder.
type fakeGPU struct{ gpu.Device }

func newFakeGPU(t *testing.T) *fakeGPU {
	be, _, err := gpu.Open("fake")
	require.NoError(t, err)
	d, err := be.Open(0)
	require.NoError(t, err)
	return &fakeGPU{d}
}

// ---- device memory from Go ----

func readBytes(d gpu.Device, p gpu.Ptr, n int64) []byte {
	b := make([]byte, n)
	if n > 0 {
		if err := d.CopyDtoH(unsafe.Pointer(&b[0]), p, n, nil); err != nil {
			panic(err)
		}
	}
	return b
}

func writeBytes(d gpu.Device, p gpu.Ptr, b []byte) {
	if len(b) > 0 {
		if err := d.CopyHtoD(p, unsafe.Pointer(&b[0]), int64(len(b)), nil); err != nil {
			panic(err)
		}
	}
}

// load reads element i of a matrix of type t at p.
func load(d gpu.Device, t gpu.DataType, p gpu.Ptr, i int64) float64 {
	if t == gpu.BF16 {
		return float64(matref.Float32FromBF16(binary.LittleEndian.Uint16(readBytes(d, p+gpu.Ptr(2*i), 2))))
	}
	return float64(math.Float32frombits(binary.LittleEndian.Uint32(readBytes(d, p+gpu.Ptr(4*i), 4))))
}

func store(d gpu.Device, t gpu.DataType, p gpu.Ptr, i int64, v float64) {
	if t == gpu.BF16 {
		writeBytes(d, p+gpu.Ptr(2*i), binary.LittleEndian.AppendUint16(nil, matref.BF16FromFloat32(float32(v))))
		return
	}
	writeBytes(d, p+gpu.Ptr(4*i), binary.LittleEndian.AppendUint32(nil, math.Float32bits(float32(v))))
}

// matrix is a strided view of device memory: element (r, c) at base + r·rs + c·cs elements.
type matrix struct {
	d      gpu.Device
	t      gpu.DataType
	base   gpu.Ptr
	rs, cs int64
}

// product sets C = A·B for an m×n output over k, all as strided views (bulk copies for speed).
func product(a, b, c matrix, m, n, k int) {
	get := func(x matrix, rows, cols int) []float64 {
		out := make([]float64, rows*cols)
		for r := 0; r < rows; r++ {
			for cc := 0; cc < cols; cc++ {
				out[r*cols+cc] = load(x.d, x.t, x.base, int64(r)*x.rs+int64(cc)*x.cs)
			}
		}
		return out
	}
	av, bv := get(a, m, k), get(b, k, n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			s := 0.0
			for l := 0; l < k; l++ {
				s += av[i*k+l] * bv[l*n+j]
			}
			store(c.d, c.t, c.base, int64(i)*c.rs+int64(j)*c.cs, s)
		}
	}
}

// ---- a column-major BLAS, as cuBLAS ----

type fakeBLAS struct{ d gpu.Device }

func (g *fakeGPU) BLAS() (gpu.BLAS, error) { return &fakeBLAS{g.Device}, nil }

func (b *fakeBLAS) gemm(g gpu.GemmDesc, in, out gpu.DataType) error {
	if g.TransA || g.TransB || g.Alpha != 1 || g.Beta != 0 {
		return fmt.Errorf("fake blas: only C = A·B")
	}
	if g.LDA < max(1, g.M) || g.LDB < max(1, g.K) || g.LDC < max(1, g.M) {
		return fmt.Errorf("fake blas: leading dimensions %d %d %d too small for %d×%d×%d", g.LDA, g.LDB, g.LDC, g.M, g.N, g.K)
	}
	// Column-major: A(i, l) at i + l·lda.
	product(matrix{b.d, in, g.A, 1, int64(g.LDA)}, matrix{b.d, in, g.B, 1, int64(g.LDB)},
		matrix{b.d, out, g.C, 1, int64(g.LDC)}, g.M, g.N, g.K)
	return nil
}

func (b *fakeBLAS) Sgemm(_ gpu.Stream, g gpu.GemmDesc) error { return b.gemm(g, gpu.F32, gpu.F32) }
func (b *fakeBLAS) GemmEx(_ gpu.Stream, g gpu.GemmDesc) error {
	return b.gemm(g, g.InType, g.OutType)
}
func (b *fakeBLAS) Close() error { return nil }

func (b *fakeBLAS) GemmGroupedBatched(_ gpu.Stream, groups []gpu.GemmGroup, A, B, C gpu.Ptr, in, out gpu.DataType) error {
	i := int64(0)
	for _, g := range groups {
		for j := 0; j < g.Count; j++ {
			ptr := func(arr gpu.Ptr) gpu.Ptr {
				return gpu.Ptr(binary.LittleEndian.Uint64(readBytes(b.d, arr+gpu.Ptr(8*i), 8)))
			}
			d := gpu.GemmDesc{M: g.M, N: g.N, K: g.K, Alpha: g.Alpha, Beta: g.Beta, A: ptr(A), LDA: g.LDA, B: ptr(B),
				LDB: g.LDB, C: ptr(C), LDC: g.LDC}
			if err := b.gemm(d, in, out); err != nil {
				return err
			}
			i++
		}
	}
	return nil
}

// ---- tensor maps: the description itself, to be read back by the fake wgmma kernel ----

func (g *fakeGPU) EncodeTensorMap(d gpu.TensorMapDesc) (gpu.RawArg, error) {
	if len(d.Dims) < 2 || len(d.Dims) > 3 || len(d.Strides) != len(d.Dims)-1 || len(d.Box) != len(d.Dims) {
		return nil, fmt.Errorf("fake tma: rank %d with %d strides and %d box sizes", len(d.Dims), len(d.Strides), len(d.Box))
	}
	for _, s := range d.Strides {
		if s%16 != 0 {
			return nil, fmt.Errorf("fake tma: stride %d is not a multiple of 16", s)
		}
	}
	b := make([]byte, 0, 128)
	le := binary.LittleEndian
	b = le.AppendUint64(b, uint64(d.Global))
	b = le.AppendUint32(b, uint32(len(d.Dims)))
	for i := 0; i < 3; i++ {
		var dim, stride uint64
		var box uint32
		if i < len(d.Dims) {
			dim, box = d.Dims[i], d.Box[i]
		}
		if i > 0 && i-1 < len(d.Strides) {
			stride = d.Strides[i-1]
		}
		b = le.AppendUint64(b, dim)
		b = le.AppendUint64(b, stride)
		b = le.AppendUint32(b, box)
	}
	return gpu.RawArg(append(b, make([]byte, 128-len(b))...)), nil
}

type tensorMap struct {
	global gpu.Ptr
	rank   int
	dims   [3]uint64
	stride [3]uint64 // bytes, of dimensions 1 and 2
	box    [3]uint32
}

func decodeMap(b []byte) tensorMap {
	le := binary.LittleEndian
	m := tensorMap{global: gpu.Ptr(le.Uint64(b)), rank: int(le.Uint32(b[8:]))}
	for i := 0; i < 3; i++ {
		o := 12 + 20*i
		m.dims[i], m.stride[i], m.box[i] = le.Uint64(b[o:]), le.Uint64(b[o+8:]), le.Uint32(b[o+16:])
	}
	return m
}

// ---- fake kernels with the real ones' parameters ----

// fakeKernel is a kernel whose parameters are given by size (a tensor map is 128 bytes).
type fakeKernel struct {
	name     string
	params   []gpu.Param
	fn       func(cfg gpu.LaunchConfig, args [][]byte) error
	launches int
}

func newFakeKernel(name string, ctypes []string, fn func(gpu.LaunchConfig, [][]byte) error) *fakeKernel {
	k := &fakeKernel{name: name, fn: fn}
	off := 0
	for i, t := range ctypes {
		size := 8
		switch t {
		case "int":
			size = 4
		case "CUtensorMap":
			size = 128
		}
		k.params = append(k.params, gpu.Param{Index: i, Offset: off, Size: size, Type: t})
		off += size
	}
	return k
}

func (k *fakeKernel) Name() string                    { return k.name }
func (k *fakeKernel) Params() ([]gpu.Param, error)    { return k.params, nil }
func (k *fakeKernel) Attrs() (gpu.KernelAttrs, error) { return gpu.KernelAttrs{NumRegs: 128}, nil }
func (k *fakeKernel) SetMaxDynamicShared(int) error   { return nil }
func (k *fakeKernel) LaunchPacked(cfg gpu.LaunchConfig, args [][]byte) error {
	k.launches++
	return k.fn(cfg, args)
}

func argPtr(b []byte) gpu.Ptr { return gpu.Ptr(binary.LittleEndian.Uint64(b)) }
func argInt(b []byte) int     { return int(int32(binary.LittleEndian.Uint32(b))) }

// writeTimeline leaves a record for tile t as the debug build does.
func writeTimeline(d gpu.Device, tl gpu.Ptr, t, group int) {
	if tl == 0 {
		return
	}
	rec := []uint64{uint64(t % 4), uint64(group), uint64(1000 + 10*t), uint64(1005 + 10*t)}
	b := make([]byte, 0, 32)
	for _, v := range rec {
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	writeBytes(d, tl+gpu.Ptr(32*t), b)
}

func fakeKernels(d gpu.Device, in gpu.DataType) map[string]*fakeKernel {
	rowMajor := func(p gpu.Ptr, ld int) matrix { return matrix{d, in, p, int64(ld), 1} }
	loopSig := []string{"T*", "T*", "T*", "int", "int", "int", "int", "int", "int", "unsigned long long*", "int", "int"}
	groupsSig := []string{"const kl_group*", "int", "unsigned long long*"}
	ks := map[string]*fakeKernel{}
	ks["loop"] = newFakeKernel("gemm_mma_tiled", loopSig, func(cfg gpu.LaunchConfig, a [][]byte) error {
		m, n, k := argInt(a[3]), argInt(a[4]), argInt(a[5])
		if int(cfg.Grid.X)*128 < n || int(cfg.Grid.Y)*128 < m || int(cfg.Grid.X-1)*128 >= n || int(cfg.Grid.Y-1)*128 >= m {
			return fmt.Errorf("grid %v does not cover %d×%d with 128×128 tiles exactly", cfg.Grid, m, n)
		}
		product(rowMajor(argPtr(a[0]), argInt(a[6])), rowMajor(argPtr(a[1]), argInt(a[7])), matrix{d, in, argPtr(a[2]), int64(argInt(a[8])), 1}, m, n, k)
		tiles := int(cfg.Grid.X * cfg.Grid.Y)
		for t := 0; t < tiles; t++ {
			writeTimeline(d, argPtr(a[9]), argInt(a[10])+t, argInt(a[11]))
		}
		return nil
	})
	grouped := func(cfg gpu.LaunchConfig, a [][]byte) error {
		G := argInt(a[1])
		raw := readBytes(d, argPtr(a[0]), int64(G*GroupDescBytes))
		t := 0
		for g := 0; g < G; g++ {
			r := raw[g*GroupDescBytes:]
			ints := func(i int) int { return int(int32(binary.LittleEndian.Uint32(r[24+4*i:]))) }
			m, n, k := ints(0), ints(1), ints(2)
			product(rowMajor(argPtr(r[0:]), ints(3)), rowMajor(argPtr(r[8:]), ints(4)), matrix{d, in, argPtr(r[16:]), int64(ints(5)), 1}, m, n, k)
			for i := 0; i < (Shape{m, n, k}).Tiles(128, 128); i++ {
				writeTimeline(d, argPtr(a[len(a)-1]), t, g)
				t++
			}
		}
		return nil
	}
	ks["persistent"] = newFakeKernel("grouped_mma_persistent", groupsSig, grouped)
	ks["dynamic"] = newFakeKernel("grouped_mma_dynamic", []string{"const kl_group*", "int", "int*", "unsigned long long*"},
		func(cfg gpu.LaunchConfig, a [][]byte) error {
			if c := readBytes(d, argPtr(a[2]), 8); binary.LittleEndian.Uint64(c) != 0 {
				return fmt.Errorf("the tile counters are not 0 before the launch")
			}
			return grouped(cfg, a)
		})
	// Kernels 06 and 09 (tma_store: a map of Y before the timeline).
	tmaKernel := func(entry string, smem int, withY bool) *fakeKernel {
		sig := []string{"const int*", "int", "int", "int", "T*", "CUtensorMap", "CUtensorMap", "unsigned long long*"}
		if withY {
			sig = slices.Insert(sig, 7, "CUtensorMap")
		}
		return newFakeKernel(entry, sig, func(cfg gpu.LaunchConfig, a [][]byte) error {
			E, N, K := argInt(a[1]), argInt(a[2]), argInt(a[3])
			offs := make([]int, E+1)
			raw := readBytes(d, argPtr(a[0]), int64(4*(E+1)))
			for i := range offs {
				offs[i] = int(int32(binary.LittleEndian.Uint32(raw[4*i:])))
			}
			mx, mw := decodeMap(a[5]), decodeMap(a[6])
			switch {
			case mx.rank != 2 || mx.dims[0] != uint64(K) || mx.dims[1] < uint64(offs[E]) || mx.box != [3]uint32{64, 128, 0}:
				return fmt.Errorf("tensor map of X: %+v", mx)
			case mw.rank != 3 || mw.dims != [3]uint64{uint64(N), uint64(K), uint64(E)} || mw.box != [3]uint32{64, 64, 1}:
				return fmt.Errorf("tensor map of W: %+v", mw)
			case int(cfg.Grid.X) != 4*1 || cfg.Block.X != 384 || cfg.SharedBytes != smem:
				return fmt.Errorf("launch %v %v %d: want one block per SM, 384 threads, %d bytes", cfg.Grid, cfg.Block, cfg.SharedBytes, smem)
			}
			tl := a[7]
			if withY {
				my := decodeMap(a[7])
				if my.rank != 2 || my.dims[0] != uint64(N) || my.dims[1] < uint64(offs[E]) || my.box != [3]uint32{64, 64, 0} || my.global != argPtr(a[4]) {
					return fmt.Errorf("tensor map of Y: %+v", my)
				}
				tl = a[8]
			}
			t := 0
			for e := 0; e < E; e++ {
				m := offs[e+1] - offs[e]
				x := matrix{d, in, mx.global + gpu.Ptr(int64(offs[e])*int64(mx.stride[1])), int64(mx.stride[1] / 2), 1}
				w := matrix{d, in, mw.global + gpu.Ptr(int64(e)*int64(mw.stride[2])), int64(mw.stride[1] / 2), 1}
				y := matrix{d, in, argPtr(a[4]) + gpu.Ptr(2*int64(offs[e])*int64(N)), int64(N), 1}
				product(x, w, y, m, N, K)
				for i := 0; i < (Shape{m, N, K}).Tiles(128, 256); i++ {
					writeTimeline(d, argPtr(tl), t, e)
					t++
				}
			}
			return nil
		})
	}
	ks["tma"] = tmaKernel("moe_wgmma_persistent", 197760, false)
	ks["tma_store"] = tmaKernel("moe_wgmma_tma_store", 214080, true)
	// Kernel 08's contract (kernels/08_decode_mma.cu): the MoE form, a workspace and item
	// counters that are 0 before the launch, its block and shared memory.
	ks["decode"] = newFakeKernel("moe_decode_mma", []string{"T*", "T*", "T*", "const int*", "int", "int", "int", "float*", "int*", "int"},
		func(cfg gpu.LaunchConfig, a [][]byte) error {
			E, N, K := argInt(a[4]), argInt(a[5]), argInt(a[6])
			offs := make([]int, E+1)
			raw := readBytes(d, argPtr(a[3]), int64(4*(E+1)))
			for i := range offs {
				offs[i] = int(int32(binary.LittleEndian.Uint32(raw[4*i:])))
			}
			switch {
			case N%8 != 0 || K%8 != 0:
				return fmt.Errorf("kernel 08 launched with N=%d, K=%d: the driver must skip what is not a multiple of 8", N, K)
			case argPtr(a[7]) == 0 || argPtr(a[8]) == 0 || argInt(a[9]) < 1:
				return fmt.Errorf("workspace %v, counters %v, max_split %d", argPtr(a[7]), argPtr(a[8]), argInt(a[9]))
			case cfg.Block.X != 256 || cfg.SharedBytes != 81920:
				return fmt.Errorf("launch %v %d: want 256 threads, 81920 bytes", cfg.Block, cfg.SharedBytes)
			}
			items := offs[E] * ((N + 255) / 256)
			for i, c := range readBytes(d, argPtr(a[8]), int64(4*items)) {
				if c != 0 {
					return fmt.Errorf("item counter byte %d is not 0 before the launch", i)
				}
			}
			for e := 0; e < E; e++ {
				m := offs[e+1] - offs[e]
				if m == 0 {
					continue
				}
				x := matrix{d, in, argPtr(a[0]) + gpu.Ptr(2*int64(offs[e])*int64(K)), int64(K), 1}
				w := matrix{d, in, argPtr(a[1]) + gpu.Ptr(2*int64(e)*int64(K)*int64(N)), int64(N), 1}
				y := matrix{d, in, argPtr(a[2]) + gpu.Ptr(2*int64(offs[e])*int64(N)), int64(N), 1}
				product(x, w, y, m, N, K)
			}
			return nil
		})
	return ks
}

// Every tensor-core variant of the bf16 suites, on the fake device, passes the driver's check.
func TestGPUPathsOnFakeDevice(t *testing.T) {
	m := labtest.Manifest(t)
	dev := newFakeGPU(t)
	ks := fakeKernels(dev, gpu.BF16)
	for _, suite := range []string{"bf16_vs_loop", "bf16_moe", "bf16_timeline", "bf16_decode"} {
		s := m.Suite(suite)
		kernels := map[string]gpu.Kernel{}
		for _, v := range s.Variants {
			if !v.IsKernel() {
				continue
			}
			ls, err := shapeOf(v)
			require.NoError(t, err)
			switch {
			case ls.Decode:
				if ls.Align > 1 { // kernel 08, whose fake checks the driver's skips (07 takes any N and K)
					kernels[v.Key()] = ks["decode"]
				}
			case ls.TMAStore:
				kernels[v.Key()] = ks["tma_store"]
			case ls.TMA:
				kernels[v.Key()] = ks["tma"]
			case ls.Loop:
				kernels[v.Key()] = ks["loop"]
			case ls.Dynamic:
				kernels[v.Key()] = ks["dynamic"]
			case !ls.MoE:
				kernels[v.Key()] = ks["persistent"]
			}
		}
		st, err := dev.NewStream()
		require.NoError(t, err)
		env := lab.NewEnv(dev, st, 5, kernels, nil)
		problems := append(append([]lab.Problem{}, s.Problems.Emu...), s.Problems.Grade...)
		if suite == "bf16_timeline" {
			problems = []lab.Problem{{Name: "small MoE", Params: map[string]int64{"experts": 5, "tokens": 300, "dist": 1, "empty": 1, "n": 264, "k": 40}}}
		}
		for _, p := range problems {
			for _, v := range s.Variants {
				if _, ok := kernels[v.Key()]; !ok && v.IsKernel() {
					continue // the portable kernels run on the emulator instead
				}
				if v.IsPeer() {
					continue // a Python script, run by the worker, never through a Case
				}
				name := suite + "/" + v.Name + " " + p.Name
				c, err := lab.NewTrial(env, Lab{}, s, v, p)
				require.NoError(t, err, name)
				require.NoError(t, c.Poison(), name)
				if err := c.Run(); err != nil {
					// A MoE-form kernel refuses groups of different N or K, and TMA strides or
					// kernel 08's 16-byte copies where N or K is not a multiple of 8, by name, as a skip.
					var skip *lab.SkipError
					require.ErrorAs(t, err, &skip, name)
					assert.Regexp(t, "MoE form|TMA|multiples of 8", skip.Reason, name)
					require.NoError(t, c.Release(), name)
					continue
				}
				rep, err := c.Check()
				require.NoError(t, err, name)
				assert.True(t, rep.OK, "%s: %s", name, rep.Detail())
				data, err := c.Case.(lab.Recorder).Record(v)
				require.NoError(t, err, name)
				if v.Int(ParamTimeline, 0) != 0 {
					require.Contains(t, data, results.TimelineKey, name)
					tl := data[results.TimelineKey].(results.Timeline)
					assert.Zero(t, tl.Missing, "%s: every tile recorded", name)
					assert.NotEmpty(t, tl.Tiles, name)
				} else {
					assert.Nil(t, data, name)
				}
				require.NoError(t, c.Release(), name)
			}
		}
	}
	for _, k := range []string{"loop", "persistent", "dynamic", "tma", "tma_store", "decode"} {
		assert.Positive(t, ks[k].launches, "the fake %s kernel ran", k)
	}
}

// The fp32 suite's cuBLAS variants use Sgemm on fp32 data.
func TestFP32LibrariesOnFakeDevice(t *testing.T) {
	m := labtest.Manifest(t)
	dev := newFakeGPU(t)
	s := m.Suite("fp32")
	st, err := dev.NewStream()
	require.NoError(t, err)
	env := lab.NewEnv(dev, st, 5, nil, nil)
	for _, p := range s.Problems.Grade[:3] {
		for _, name := range []string{"cublas_loop", "cublas_grouped"} {
			v := s.Variant(name)
			c, err := lab.NewTrial(env, Lab{}, s, v, p)
			require.NoError(t, err)
			require.NoError(t, c.Poison())
			require.NoError(t, c.Run())
			rep, err := c.Check()
			require.NoError(t, err)
			assert.True(t, rep.OK, "%s %s: %s", name, p.Name, rep.Detail())
			require.NoError(t, c.Release())
		}
	}
}

// The grouped call batches equal shapes and leaves empty groups out.
func TestBLASBuckets(t *testing.T) {
	dev := newFakeGPU(t)
	st, _ := dev.NewStream()
	env := lab.NewEnv(dev, st, 5, nil, nil)
	s := &lab.Suite{Name: "bf16_x", Tolerance: 1e-2}
	c, err := lab.NewTrial(env, Lab{}, s, nil, lab.Problem{Name: "p", Params: map[string]int64{"g": 5, "m0": 3, "m1": 0, "m2": 3, "m3": 5, "m4": 3, "n": 8, "k": 16}})
	require.NoError(t, err)
	defer c.Release()
	gc := c.Case.(*groupedCase)
	require.Len(t, gc.blasGrouped.Groups, 2)
	assert.Equal(t, gpu.GemmGroup{M: 8, N: 3, K: 16, Alpha: 1, LDA: 8, LDB: 16, LDC: 8, Count: 3}, gc.blasGrouped.Groups[0])
	assert.Equal(t, 1, gc.blasGrouped.Groups[1].Count)
	assert.Equal(t, 3*4, gc.blasGrouped.Ptrs.Len(), "one A, B and C pointer per non-empty group")
}

var _ gpu.GroupedBLAS = (*fakeBLAS)(nil)
var _ gpu.TensorMapEncoder = (*fakeGPU)(nil)
