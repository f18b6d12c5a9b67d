package devprops

// A fake device for the driver's tests: memory is Go memory, and each kernel of the lab has a Go
// twin that simulates it thread by thread. The kernels' parameter lists are parsed from the real
// .cu files, so gpu.PackArgs checks the driver's arguments against the real signatures (count,
// size and kind) even though nothing is compiled here.

import (
	"encoding/binary"
	"fmt"
	"github.com/kernel-labs/kernellabs/internal/matref"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"unsafe"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

type fakeDevice struct {
	info   gpu.DeviceInfo
	mu     sync.Mutex
	allocs map[gpu.Ptr][]byte
	pinned int // live page-locked host allocations
	next   gpu.Ptr
	noBLAS bool
	// gemmHook, when set, may damage the GEMM output (for negative tests).
	gemmHook func(c []float32)
}

func newFakeDevice() *fakeDevice {
	return &fakeDevice{
		info: gpu.DeviceInfo{
			Backend: "fake", Name: "Fake GPU", Emulated: true, ComputeMajor: 9, SMs: 3,
			MemoryBytes: 1 << 30, L2Bytes: 1 << 20, WarpSize: 32, MaxThreadsPerBlock: 1024,
			MaxSharedPerBlock: 48 << 10, MaxSharedOptin: 227 << 10,
		},
		allocs: map[gpu.Ptr][]byte{},
		next:   0x10000000,
	}
}

func (d *fakeDevice) Info() gpu.DeviceInfo { return d.info }
func (d *fakeDevice) Attributes() ([]gpu.Attribute, error) {
	return []gpu.Attribute{{Name: "MULTIPROCESSOR_COUNT", Value: int64(d.info.SMs)}, {Name: "WARP_SIZE", Value: 32}}, nil
}
func (d *fakeDevice) MemInfo() (int64, int64, error) { return 1 << 30, 1 << 30, nil }

func (d *fakeDevice) Malloc(bytes int64) (gpu.Ptr, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	mem := make([]byte, bytes)
	for i := range mem {
		mem[i] = 0xCD // garbage, not zeros
	}
	p := d.next
	d.allocs[p] = mem
	d.next += gpu.Ptr((bytes+4095)&^4095) + 4096
	return p, nil
}

func (d *fakeDevice) Free(p gpu.Ptr) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.allocs[p]; !ok {
		return fmt.Errorf("fake: free of unknown pointer %#x", p)
	}
	delete(d.allocs, p)
	return nil
}

// mem resolves [p, p+n) to the Go memory behind it.
func (d *fakeDevice) mem(p gpu.Ptr, n int64) ([]byte, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for base, m := range d.allocs {
		if p >= base && p+gpu.Ptr(n) <= base+gpu.Ptr(len(m)) {
			off := int64(p - base)
			return m[off : off+n], nil
		}
	}
	return nil, fmt.Errorf("fake: [%#x, +%d) is not inside any allocation", p, n)
}

type fakeHostMem struct {
	d *fakeDevice
	b []byte
}

func (h *fakeHostMem) Pointer() unsafe.Pointer { return unsafe.Pointer(&h.b[0]) }
func (h *fakeHostMem) Bytes() int64            { return int64(len(h.b)) }
func (h *fakeHostMem) Free() error {
	h.d.mu.Lock()
	defer h.d.mu.Unlock()
	if h.b == nil {
		return fmt.Errorf("fake: host memory freed twice")
	}
	h.b = nil
	h.d.pinned--
	return nil
}

func (d *fakeDevice) MallocHost(bytes int64) (gpu.HostMem, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.pinned++
	return &fakeHostMem{d: d, b: make([]byte, max(bytes, 1))[:bytes:max(bytes, 1)]}, nil
}

func hostSlice(p unsafe.Pointer, n int64) []byte { return unsafe.Slice((*byte)(p), n) }

func (d *fakeDevice) CopyHtoD(dst gpu.Ptr, src unsafe.Pointer, bytes int64, s gpu.Stream) error {
	m, err := d.mem(dst, bytes)
	if err != nil {
		return err
	}
	copy(m, hostSlice(src, bytes))
	return nil
}

func (d *fakeDevice) CopyDtoH(dst unsafe.Pointer, src gpu.Ptr, bytes int64, s gpu.Stream) error {
	m, err := d.mem(src, bytes)
	if err != nil {
		return err
	}
	copy(hostSlice(dst, bytes), m)
	return nil
}

func (d *fakeDevice) CopyDtoD(dst, src gpu.Ptr, bytes int64, s gpu.Stream) error {
	a, err := d.mem(dst, bytes)
	if err != nil {
		return err
	}
	b, err := d.mem(src, bytes)
	if err != nil {
		return err
	}
	copy(a, b)
	return nil
}

func (d *fakeDevice) CopyPeer(gpu.Ptr, gpu.Device, gpu.Ptr, int64, gpu.Stream) error {
	return fmt.Errorf("fake: no peers")
}

func (d *fakeDevice) MemsetD8(dst gpu.Ptr, v uint8, count int64, s gpu.Stream) error {
	m, err := d.mem(dst, count)
	if err != nil {
		return err
	}
	for i := range m {
		m[i] = v
	}
	return nil
}

func (d *fakeDevice) MemsetD32(dst gpu.Ptr, v uint32, count int64, s gpu.Stream) error {
	m, err := d.mem(dst, 4*count)
	if err != nil {
		return err
	}
	for i := int64(0); i < count; i++ {
		binary.LittleEndian.PutUint32(m[4*i:], v)
	}
	return nil
}

func (d *fakeDevice) LoadModule(string) (gpu.Module, error) {
	return nil, fmt.Errorf("fake: no modules")
}
func (d *fakeDevice) NewStream() (gpu.Stream, error) { return fakeStream{}, nil }
func (d *fakeDevice) NewEvent() (gpu.Event, error)   { return nil, fmt.Errorf("fake: no events") }
func (d *fakeDevice) Synchronize() error             { return nil }
func (d *fakeDevice) CanAccessPeer(gpu.Device) (bool, error) {
	return false, nil
}
func (d *fakeDevice) EnablePeerAccess(gpu.Device) error { return fmt.Errorf("fake: no peers") }
func (d *fakeDevice) Close() error                      { return nil }

func (d *fakeDevice) BLAS() (gpu.BLAS, error) {
	if d.noBLAS {
		return nil, fmt.Errorf("fake: no BLAS")
	}
	return &fakeBLAS{d: d}, nil
}

type fakeStream struct{}

func (fakeStream) Synchronize() error        { return nil }
func (fakeStream) WaitEvent(gpu.Event) error { return nil }
func (fakeStream) Close() error              { return nil }

// fakeBLAS computes GemmEx by cuBLAS's column-major definition, independently of GemmRowMajor:
// C(i,j) = Σₗ A(i,l)·B(l,j), X(i,j) stored at X[i + j·ldx].
type fakeBLAS struct{ d *fakeDevice }

func (b *fakeBLAS) Sgemm(s gpu.Stream, g gpu.GemmDesc) error { return fmt.Errorf("fake: no sgemm") }
func (b *fakeBLAS) Close() error                             { return nil }

func (b *fakeBLAS) GemmEx(s gpu.Stream, g gpu.GemmDesc) error {
	if g.TransA || g.TransB || g.InType != gpu.BF16 || g.OutType != gpu.F32 {
		return fmt.Errorf("fake: only non-transposed bf16 → f32")
	}
	if g.LDA < g.M || g.LDB < g.K || g.LDC < g.M {
		return fmt.Errorf("fake: leading dimensions too small: lda %d (m %d) ldb %d (k %d) ldc %d", g.LDA, g.M, g.LDB, g.K, g.LDC)
	}
	am, err := b.d.mem(g.A, int64(g.LDA*(g.K-1)+g.M)*2)
	if err != nil {
		return fmt.Errorf("A: %w", err)
	}
	bm, err := b.d.mem(g.B, int64(g.LDB*(g.N-1)+g.K)*2)
	if err != nil {
		return fmt.Errorf("B: %w", err)
	}
	cm, err := b.d.mem(g.C, int64(g.LDC*(g.N-1)+g.M)*4)
	if err != nil {
		return fmt.Errorf("C: %w", err)
	}
	av := unsafe.Slice((*uint16)(unsafe.Pointer(&am[0])), len(am)/2)
	bv := unsafe.Slice((*uint16)(unsafe.Pointer(&bm[0])), len(bm)/2)
	cv := unsafe.Slice((*float32)(unsafe.Pointer(&cm[0])), len(cm)/4)
	for j := 0; j < g.N; j++ {
		for i := 0; i < g.M; i++ {
			var s float64
			for l := 0; l < g.K; l++ {
				s += float64(matref.Float32FromBF16(av[i+l*g.LDA])) * float64(matref.Float32FromBF16(bv[l+j*g.LDB]))
			}
			v := float64(g.Alpha) * s
			if g.Beta != 0 { // as in BLAS, C is not read when beta is 0 (so a NaN poison is harmless)
				v += float64(g.Beta) * float64(cv[i+j*g.LDC])
			}
			cv[i+j*g.LDC] = float32(v)
		}
	}
	if b.d.gemmHook != nil {
		b.d.gemmHook(cv)
	}
	return nil
}

// ---- kernels ----

// fakeBody simulates a kernel launch.
type fakeBody func(k *fakeKernel, cfg gpu.LaunchConfig, args [][]byte) error

// fakeKernel is a Go twin of one kernel entry: params parsed from the .cu file, and a body run
// for every (block, thread) of the grid.
type fakeKernel struct {
	d      *fakeDevice
	name   string
	params []gpu.Param
	body   fakeBody
	count  int // launches
}

func (k *fakeKernel) Name() string                    { return k.name }
func (k *fakeKernel) Params() ([]gpu.Param, error)    { return k.params, nil }
func (k *fakeKernel) Attrs() (gpu.KernelAttrs, error) { return gpu.KernelAttrs{}, nil }
func (k *fakeKernel) SetMaxDynamicShared(int) error   { return nil }
func (k *fakeKernel) LaunchPacked(cfg gpu.LaunchConfig, args [][]byte) error {
	if len(args) != len(k.params) {
		return fmt.Errorf("fake %s: %d args for %d params", k.name, len(args), len(k.params))
	}
	for i, a := range args {
		if len(a) != k.params[i].Size {
			return fmt.Errorf("fake %s: arg %d has %d bytes, want %d", k.name, i, len(a), k.params[i].Size)
		}
	}
	k.count++
	return k.body(k, cfg, args)
}

func argU64(a []byte) uint64 { return binary.LittleEndian.Uint64(a) }
func argU32(a []byte) uint32 { return binary.LittleEndian.Uint32(a) }

// floats resolves a pointer argument to n float32 values.
func (k *fakeKernel) floats(a []byte, n int64) ([]float32, error) {
	m, err := k.d.mem(gpu.Ptr(argU64(a)), 4*n)
	if err != nil || n == 0 {
		return nil, err
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&m[0])), n), nil
}

// forThreads runs fn for every thread of a 1-D grid, in order.
func forThreads(cfg gpu.LaunchConfig, fn func(block, thread, blockDim, gridDim int64)) {
	for b := int64(0); b < int64(cfg.Grid.X); b++ {
		for t := int64(0); t < int64(cfg.Block.X); t++ {
			fn(b, t, int64(cfg.Block.X), int64(cfg.Grid.X))
		}
	}
}

// fakeBodies are the Go twins of the .cu entries, keyed by entry name.
var fakeBodies = map[string]func(k *fakeKernel, cfg gpu.LaunchConfig, args [][]byte) error{
	"fill_f32": func(k *fakeKernel, cfg gpu.LaunchConfig, args [][]byte) error {
		n, seed := int64(argU64(args[1])), argU64(args[2])
		out, err := k.floats(args[0], n)
		if err != nil {
			return err
		}
		forThreads(cfg, func(b, t, bd, gd int64) {
			for i := b*bd + t; i < n; i += gd * bd {
				out[i] = HashFloat(seed, uint64(i))
			}
		})
		return nil
	},
	"copy_f32":   fakeCopy(1, 1),
	"copy_f4":    fakeCopy(4, 1),
	"copy_f4_x4": fakeCopy(4, 4),
	"copy_f4_flat": func(k *fakeKernel, cfg gpu.LaunchConfig, args [][]byte) error {
		src, dst, n, err := k.copyArgs(args)
		if err != nil {
			return err
		}
		forThreads(cfg, func(b, t, bd, gd int64) {
			if i := b*bd + t; i < n/4 {
				copy(dst[4*i:4*i+4], src[4*i:4*i+4])
			}
			if b == 0 {
				for i := n/4*4 + t; i < n; i += bd {
					dst[i] = src[i]
				}
			}
		})
		return nil
	},
	// l2_read_u4 as the kernel reads it: per pass a rotation, words summed as uint32 per thread.
	"l2_read_u4": func(k *fakeKernel, cfg gpu.LaunchConfig, args [][]byte) error {
		n4 := int64(argU64(args[1]))
		first, passes := int64(int32(argU32(args[2]))), int64(int32(argU32(args[3])))
		src, err := k.floats(args[0], 4*n4)
		if err != nil {
			return err
		}
		threads := int64(cfg.Grid.X) * int64(cfg.Block.X)
		outF, err := k.floats(args[4], threads)
		if err != nil {
			return err
		}
		out := unsafe.Slice((*uint32)(unsafe.Pointer(&outF[0])), threads)
		forThreads(cfg, func(b, t, bd, gd int64) {
			tid := b*bd + t
			var acc uint32
			for p := first; p < first+passes; p++ {
				off := (p * 37 * bd) % n4
				for i := tid; i < n4; i += gd * bd {
					j := (i + off) % n4
					for e := range int64(4) {
						acc += math.Float32bits(src[4*j+e])
					}
				}
			}
			out[tid] = acc
		})
		return nil
	},
	"fma_chains1": fakeFMA(1),
	"fma_chains4": fakeFMA(4),
	"fma_chains8": fakeFMA(8),
	"empty_flag": func(k *fakeKernel, cfg gpu.LaunchConfig, args [][]byte) error {
		index := int64(int32(argU32(args[1])))
		m, err := k.d.mem(gpu.Ptr(argU64(args[0]))+gpu.Ptr(4*index), 4)
		if err != nil {
			return err
		}
		binary.LittleEndian.PutUint32(m, argU32(args[2]))
		return nil
	},
}

// copyArgs reads a copy kernel's arguments (src, dst, n floats).
func (k *fakeKernel) copyArgs(args [][]byte) (src, dst []float32, n int64, err error) {
	n = int64(argU64(args[2]))
	if src, err = k.floats(args[0], n); err != nil {
		return nil, nil, 0, err
	}
	dst, err = k.floats(args[1], n)
	return src, dst, n, err
}

// fakeCopy mirrors copy_body<V, U> with V = w floats, plus copy_tail for w = 4.
func fakeCopy(w, u int64) func(k *fakeKernel, cfg gpu.LaunchConfig, args [][]byte) error {
	return func(k *fakeKernel, cfg gpu.LaunchConfig, args [][]byte) error {
		src, dst, n, err := k.copyArgs(args)
		if err != nil {
			return err
		}
		nv := n / w
		forThreads(cfg, func(b, t, bd, gd int64) {
			stride := gd * bd * u
			for base := b*bd*u + t; base < nv; base += stride {
				for j := int64(0); j < u; j++ {
					if i := base + j*bd; i < nv {
						copy(dst[i*w:(i+1)*w], src[i*w:(i+1)*w])
					}
				}
			}
			if w > 1 && b == 0 {
				for i := nv*w + t; i < n; i += bd {
					dst[i] = src[i]
				}
			}
		})
		return nil
	}
}

// fakeFMA mirrors fma_chains<chains>.
func fakeFMA(chains int) func(k *fakeKernel, cfg gpu.LaunchConfig, args [][]byte) error {
	return func(k *fakeKernel, cfg gpu.LaunchConfig, args [][]byte) error {
		iters, seed := int(int32(argU32(args[1]))), argU64(args[2])
		threads := int64(cfg.Grid.X) * int64(cfg.Block.X)
		out, err := k.floats(args[0], threads)
		if err != nil {
			return err
		}
		forThreads(cfg, func(b, t, bd, gd int64) {
			tid := b*bd + t
			out[tid] = FMAChainRef(seed, uint64(tid), chains, iters)
		})
		return nil
	}
}

// ---- parsing kernel signatures from the .cu files ----

var entryRE = regexp.MustCompile(`extern\s+"C"\s+__global__\s+void\s+(\w+)\s*\(([^)]*)\)`)

// parseEntries returns the parameter lists of every extern "C" __global__ entry in a file,
// as a backend's parameter info would describe them.
func parseEntries(path string) (map[string][]gpu.Param, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string][]gpu.Param{}
	for _, m := range entryRE.FindAllStringSubmatch(string(src), -1) {
		var params []gpu.Param
		off := 0
		for i, p := range strings.Split(m[2], ",") {
			ctype, size, err := cParamType(p)
			if err != nil {
				return nil, fmt.Errorf("%s: %s parameter %d: %w", filepath.Base(path), m[1], i, err)
			}
			off = (off + size - 1) / size * size
			params = append(params, gpu.Param{Index: i, Offset: off, Size: size, Type: ctype})
			off += size
		}
		out[m[1]] = params
	}
	return out, nil
}

// cParamType reduces a C parameter declaration to its type and size.
func cParamType(decl string) (string, int, error) {
	fields := strings.Fields(strings.NewReplacer("*", " * ").Replace(decl))
	if len(fields) < 2 {
		return "", 0, fmt.Errorf("cannot read %q", decl)
	}
	var words []string
	pointer := false
	for _, f := range fields[:len(fields)-1] { // the last field is the name
		switch f {
		case "const", "__restrict__", "volatile":
		case "*":
			pointer = true
		default:
			words = append(words, f)
		}
	}
	base := strings.Join(words, " ")
	if pointer {
		return base + "*", 8, nil
	}
	switch base {
	case "int", "unsigned int", "unsigned", "float":
		return base, 4, nil
	case "long long", "unsigned long long", "double", "size_t":
		return base, 8, nil
	}
	return "", 0, fmt.Errorf("unknown parameter type %q", base)
}

// loadFakeKernels builds the Env's kernel map for a manifest, parsing every variant's file; the
// fill helper is added under its entry name when withFill is set.
func loadFakeKernels(d *fakeDevice, dir string, variants map[string][2]string, withFill bool) (map[string]gpu.Kernel, error) {
	ks := map[string]gpu.Kernel{}
	add := func(key, file, entry string) error {
		entries, err := parseEntries(filepath.Join(dir, file))
		if err != nil {
			return err
		}
		params, ok := entries[entry]
		if !ok {
			return fmt.Errorf("%s has no entry %s", file, entry)
		}
		body, ok := fakeBodies[entry]
		if !ok {
			return fmt.Errorf("no Go twin for %s", entry)
		}
		ks[key] = &fakeKernel{d: d, name: entry, params: params, body: body}
		return nil
	}
	for name, fe := range variants {
		if err := add(name, fe[0], fe[1]); err != nil {
			return nil, err
		}
	}
	if withFill {
		if err := add(FillEntry, "kernels/00_fill.cu", FillEntry); err != nil {
			return nil, err
		}
	}
	return ks, nil
}
