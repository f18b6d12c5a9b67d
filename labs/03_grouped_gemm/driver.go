// Package grouped is lab 03, "grouped GEMM for mixture-of-experts": G independent products
// C_g = A_g·B_g of different shapes — the experts of a MoE layer — computed by a host loop of
// launches, by cuBLAS (a loop of calls, and its grouped batched call), and by persistent kernels
// whose tile scheduler keeps every SM busy across all groups.
//
// Like every lab it supplies only what differs (lab.Driver): the groups on the device, one call
// per variant, the check and the work counts; the engine builds, checks, times and records. Its
// cases also implement lab.Recorder: the debug variants (built with -DKL_TIMELINE) leave, per tile,
// the SM that ran it and when, and Record returns that timeline for the chapter's figure.
//
// Conventions of the lab:
//   - Suites whose name starts with "bf16" have bf16 A, B and C with fp32 accumulation (a model's
//     activations and weights); the others are all fp32. C = A·B: no alpha, no beta.
//   - A problem is a list of groups (problem.go: explicit shapes, or a MoE layer's experts with
//     uniform or skewed token counts and empty experts) in three arenas (layout.go): when all
//     groups share N and K, exactly the token matrix X, the stacked weights W and the output Y.
//   - Inputs are fresh for every check (matref.FillHash of seeds drawn from the run's seed). The
//     engine poisons C with NaN before the checked run: every element of every group must be
//     written and right (reference.go), and nothing outside the groups may be written (canaries).
package grouped

import (
	"fmt"
	"math/rand/v2"

	"github.com/kernel-labs/kernellabs/internal/check"
	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/matref"
)

// LabDir is the lab's directory name, under which the driver registers.
const LabDir = "03_grouped_gemm"

// decodeCols is the columns of one work item of the decode kernels (DEC_COLS in kernels/07_decode_moe.cu,
// DM_COLS in kernels/08_decode_mma.cu).
const decodeCols = 256

// Library calls that variants name in lab.yaml (library: ...).
const (
	LibLoop    = "cublas_loop"    // one cuBLAS GEMM per non-empty group (Sgemm, or GemmEx for bf16)
	LibGrouped = "cublas_grouped" // cublasGemmGroupedBatchedEx: all groups in one call
	LibDense   = "cublas_dense"   // one dense GEMM of the same FLOPs: X (T×K) · W_0 (K×N), shared N and K only
)

// Lab is the driver of lab 03.
type Lab struct{}

func init() { lab.RegisterDriver(LabDir, Lab{}) }

var (
	_ lab.Driver   = Lab{}
	_ lab.Case     = (*groupedCase)(nil)
	_ lab.Recorder = (*groupedCase)(nil)
)

// Prepare lays out the groups of problem p, fills them with fresh random inputs and uploads them
// with the metadata every variant needs.
func (Lab) Prepare(env *lab.Env, s *lab.Suite, p lab.Problem) (lab.Case, error) {
	shapes, err := GroupsOf(p)
	if err != nil {
		return nil, err
	}
	maxSplit := 0
	if suiteMax(s, ParamDecode) != 0 {
		maxSplit = int(max(defaultMaxSplit, suiteMax(s, ParamMaxSplit)))
	}
	c, err := prepare(env, lab.PrecisionOf(s), shapes, suiteMax(s, ParamGather) != 0, maxSplit)
	if err != nil {
		return nil, fmt.Errorf("%s, problem %q (%s): %w", s.Name, p.Name, GroupsLine(shapes), err)
	}
	return c, nil
}

// groupedCase is one prepared problem on the device (its buffers belong to the engine).
type groupedCase struct {
	env    *lab.Env
	prec   lab.Precision
	shapes []Shape
	lay    Layout
	seed   uint64 // of the check's random vectors and samples

	hA, hB []float32 // the inputs as the device has them (bf16 values widened exactly)

	a, b, c gpu.Ptr              // the A, B and C arenas, in the suite's precision
	dC32    *gpu.Buffer[float32] // the C arena (fp32 suites)
	dC16    *gpu.Buffer[uint16]  // the C arena (bf16 suites)

	dXTok32 *gpu.Buffer[float32] // gather: the token matrix in token order (fp32, MoE problems)
	dRows   *gpu.Buffer[int32]   // gather: the routing's row list, X_sorted[j] = X_tok[rows[j]]

	dGroups    *gpu.Buffer[uint64]  // kl_group arrays: natural order, then longest first
	dOffs      *gpu.Buffer[int32]   // MoE row offsets (E+1)
	dCounters  *gpu.Buffer[int32]   // the dynamic scheduler's two counters
	dWS        *gpu.Buffer[float32] // decode: max_split·T·N partial sums
	dItems     *gpu.Buffer[int32]   // decode: one counter per item (T·ceil(N/256))
	maxSplit   int                  // decode: the splits dWS has room for
	dPtrs      *gpu.Buffer[uint64]  // cuBLAS grouped: the A, B and C pointer arrays in a row
	blasGroups []gpu.GemmGroup

	tl  *gpu.Buffer[uint64] // the timeline records of the last timeline Run
	tlN int                 // tiles recorded
	tlL int                 // launches in the last Run
}

// suiteMax is the largest value of a launch parameter over the variants of suite s (0 if none sets
// it): every case of the suite provides for the variant that needs most. gather: the token matrix
// in token order and the routing's row list; decode: the decode kernel's workspace.
func suiteMax(s *lab.Suite, param string) int64 {
	most := int64(0)
	for _, v := range s.Variants {
		most = max(most, v.Int(param, 0))
	}
	return most
}

func prepare(env *lab.Env, prec lab.Precision, shapes []Shape, gather bool, maxSplit int) (*groupedCase, error) {
	in := prec.Bytes()
	lay := NewLayout(shapes, in)
	wsLen, items := 0, 0 // the decode kernel's (MoE form only): split-K partials, one counter per item
	if lay.MoE && maxSplit > 0 {
		wsLen, items = max(maxSplit*lay.Rows()*shapes[0].N, 1), max(lay.Rows()*lab.CeilDiv(shapes[0].N, decodeCols), 1)
	}
	need := int64(in)*(lay.ALen+lay.BLen+lay.CLen) + int64(len(shapes))*2*GroupDescBytes + 64*int64(len(shapes)) + 4*int64(wsLen+items)
	if err := lab.NeedMemory(env, need); err != nil {
		return nil, err
	}
	c := &groupedCase{env: env, prec: prec, shapes: shapes, lay: lay, seed: env.RNG.Uint64(),
		hA: make([]float32, lay.ALen), hB: make([]float32, lay.BLen)}
	matref.FillHash(c.hA, env.RNG.Uint64())
	matref.FillHash(c.hB, env.RNG.Uint64())

	// A bf16 suite's inputs are rounded in place: the reference multiplies what the device has.
	a := lab.NewPrep(env)
	c.a, c.b = a.UploadAs("A", prec, c.hA), a.UploadAs("B", prec, c.hB)
	// C, the groups and the canaries around them, is poisoned with NaN (0xFF bytes, in fp32 and bf16).
	if prec == lab.BF16 {
		if c.dC16 = lab.PrepOutput[uint16](a, "C", int(lay.CLen), lab.PoisonNaN); c.dC16 != nil {
			c.c = c.dC16.DevicePtr()
		}
	} else if c.dC32 = lab.PrepOutput[float32](a, "C", int(lay.CLen), lab.PoisonNaN); c.dC32 != nil {
		c.c = c.dC32.DevicePtr()
	}
	order := append(NaturalOrder(len(shapes)), LongestFirst(shapes)...)
	c.dGroups = lab.PrepUpload(a, "the group descriptors", lay.EncodeGroups(order, uint64(c.a), uint64(c.b), uint64(c.c), in))
	if lay.MoE {
		c.dOffs = lab.PrepUpload(a, "the row offsets", lay.Offsets)
	}
	if gather && lay.MoE && prec == lab.FP32 {
		xtok, rows := c.gatherInputs(env.RNG)
		c.dXTok32 = lab.PrepUpload(a, "the token matrix", xtok)
		c.dRows = lab.PrepUpload(a, "the routing's row list", rows)
	}
	c.dCounters = lab.PrepScratch[int32](a, "the tile counters", 2, lab.PoisonBytes(0))
	if wsLen > 0 { // NaN partials: a sum over a slot that no unit wrote shows in the output
		c.dWS = lab.PrepScratch[float32](a, "the split-K workspace", wsLen, lab.PoisonNaN)
		c.dItems = lab.PrepScratch[int32](a, "the split-K counters", items, lab.PoisonBytes(0))
		c.maxSplit = maxSplit
	}
	c.prepareBLAS(a)
	return lab.Done(a, c)
}

// eachGroup calls fn for every non-empty group with the device addresses of its matrices, as a
// host loop does: it knows the sizes, and launches nothing for an empty group.
func (c *groupedCase) eachGroup(fn func(g int, s Shape, a, b, cc gpu.Ptr) error) error {
	e := gpu.Ptr(c.prec.Bytes())
	for g, s := range c.shapes {
		if s.Empty() {
			continue
		}
		if err := fn(g, s, c.a+gpu.Ptr(c.lay.A[g])*e, c.b+gpu.Ptr(c.lay.B[g])*e, c.c+gpu.Ptr(c.lay.C[g])*e); err != nil {
			return fmt.Errorf("group %d (%s): %w", g, s, err)
		}
	}
	return nil
}

// Run launches variant v once on the lab's stream: the whole loop for the loop variants.
func (c *groupedCase) Run(v *lab.Variant) error {
	if v.Library != "" {
		return c.runLibrary(v)
	}
	return c.runKernel(v)
}

func (c *groupedCase) runKernel(v *lab.Variant) error {
	k, err := c.env.Kernel(v)
	if err != nil {
		return err
	}
	ls, err := shapeOf(v)
	if err != nil {
		return err
	}
	if err := lab.OptInShared(k, ls.Smem); err != nil {
		return err
	}
	tl := gpu.Ptr(0)
	if ls.Timeline {
		if tl, err = c.timelineBuffer(ls); err != nil {
			return err
		}
	}
	cfg := func(grid gpu.Dim3) gpu.LaunchConfig {
		return gpu.LaunchConfig{Grid: grid, Block: gpu.D1(ls.Threads), SharedBytes: ls.Smem, Stream: c.env.Stream}
	}
	if ls.Loop {
		base := 0 // the timeline numbers the tiles of all launches one after the other
		c.tlL = 0
		return c.eachGroup(func(g int, s Shape, a, b, cc gpu.Ptr) error {
			tilesM, tilesN := lab.CeilDiv(s.M, ls.BM), lab.CeilDiv(s.N, ls.BN)
			if tilesM > 65535 {
				return fmt.Errorf("variant %s needs %d tile rows, beyond the grid's 65535", v.Name, tilesM)
			}
			err := gpu.Launch(k, cfg(gpu.D2(tilesN, tilesM)), a, b, cc, int32(s.M), int32(s.N), int32(s.K),
				int32(s.K), int32(s.N), int32(s.N), tl, int32(base), int32(g))
			base, c.tlL = base+tilesM*tilesN, c.tlL+1
			return err
		})
	}
	// A persistent grid: ctas_per_sm blocks per SM, or as many as fit (1 on the emulator, which
	// has no occupancy calculator and runs one block per worker at a time).
	c.tlL = 1
	fit, err := lab.BlocksPerSM(k, ls.Threads, ls.Smem)
	if err != nil {
		return err
	}
	grid, G := cfg(gpu.D1(max(c.env.Device.Info().SMs, 1)*min(ls.CTAsPerSM, fit))), int32(len(c.shapes))
	if !ls.MoE {
		groups := c.dGroups.DevicePtr()
		if ls.LPT {
			groups += gpu.Ptr(len(c.shapes) * GroupDescBytes)
		}
		if ls.Dynamic {
			return gpu.Launch(k, grid, groups, G, c.dCounters, tl)
		}
		return gpu.Launch(k, grid, groups, G, tl)
	}
	if !c.lay.MoE {
		return lab.Skip("%s is the MoE form (one token matrix, one N and K for all experts); the groups of this problem differ in N or K", v.Name)
	}
	n, kk := int32(c.shapes[0].N), int32(c.shapes[0].K)
	if a := int32(ls.Align); n%a != 0 || kk%a != 0 {
		return lab.Skip("%s copies rows of X and W in chunks of %d elements: N and K must be multiples of %d (this problem has N=%d, K=%d)", v.Name, a, a, n, kk)
	}
	switch {
	case ls.Decode:
		if ls.MaxSplit > c.maxSplit {
			return fmt.Errorf("variant %s: max_split %d, but the case has a workspace for %d", v.Name, ls.MaxSplit, c.maxSplit)
		}
		return gpu.Launch(k, grid, c.a, c.b, c.c, c.dOffs, G, n, kk, c.dWS, c.dItems, int32(ls.MaxSplit))
	case ls.TMA:
		mx, mw, err := c.tensorMaps(v, ls.BM)
		if err != nil {
			return err
		}
		return gpu.Launch(k, grid, c.dOffs, G, n, kk, c.c, mx, mw, tl)
	case ls.Gather:
		if c.dRows == nil {
			return fmt.Errorf("variant %s: gather: 1 takes fp32 data (suite %s is %s)", v.Name, v.Suite.Name, c.prec)
		}
		return gpu.Launch(k, grid, c.dXTok32, c.dRows, c.b, c.c, c.dOffs, G, n, kk, tl)
	}
	return gpu.Launch(k, grid, c.a, c.b, c.c, c.dOffs, G, n, kk, tl)
}

// gatherInputs undoes the dispatch for the kernels that fuse it: the routed rows X_sorted (the
// A arena, T×K) come from a token matrix X_tok in another order, a random permutation drawn for
// this case, and rows[j] says which row of X_tok routed row j is. The reference stays X_sorted·W.
func (c *groupedCase) gatherInputs(rng *rand.Rand) ([]float32, []int32) {
	t, k := c.lay.Rows(), c.shapes[0].K
	perm := rng.Perm(t)
	rows := make([]int32, max(t, 1)) // one element at least, so that there is a pointer to pass
	xtok := make([]float32, max(t*k, 1))
	for j, tok := range perm {
		rows[j] = int32(tok)
		copy(xtok[tok*k:(tok+1)*k], c.hA[j*k:(j+1)*k])
	}
	return xtok, rows
}

// tensorMaps are the TMA maps kernel 06 takes: the token matrix X (T×K, K innermost, boxes of
// 64 × bm) and the stack of weights W (E×K×N as the 3-D tensor (N, K, E), boxes of 64 columns ×
// 64 rows of k × 1 expert), bf16, 128-byte swizzle.
func (c *groupedCase) tensorMaps(v *lab.Variant, bm int) (mx, mw gpu.RawArg, err error) {
	n, k, e := uint64(c.shapes[0].N), uint64(c.shapes[0].K), uint64(len(c.shapes))
	if n%8 != 0 || k%8 != 0 {
		return mx, mw, lab.Skip("%s loads tiles with TMA, whose row strides must be multiples of 16 bytes: N and K must be multiples of 8 (this problem has N=%d, K=%d)", v.Name, n, k)
	}
	if c.prec != lab.BF16 {
		return mx, mw, fmt.Errorf("variant %s: the TMA kernel takes bf16 data; this suite is %s", v.Name, c.prec)
	}
	if mx, err = lab.TensorMap(c.env, "X", lab.BF16Tiles(c.a, max(c.lay.Rows(), 1), c.shapes[0].K, bm, 64)); err != nil {
		return mx, mw, err
	}
	mw, err = lab.TensorMap(c.env, "W", gpu.TensorMapDesc{DataType: gpu.BF16, Global: c.b, Dims: []uint64{n, k, e},
		Strides: []uint64{n * 2, k * n * 2}, Box: []uint32{64, 64, 1}, Swizzle: 128, L2Promotion: 256})
	return mx, mw, err
}

// Check compares the output of the last Run with the CPU's float64 products, group by group, and
// checks that nothing outside the groups was written.
func (c *groupedCase) Check(v *lab.Variant, o *lab.Outputs) (check.Report, error) {
	// Still the poison: 0xFFFFFFFF in fp32; 0xFFFF in bf16, 0xFFFF0000 once widened.
	out, poison, err := []float32(nil), uint32(0xFFFFFFFF), error(nil)
	if c.prec == lab.BF16 {
		out, err = o.BF16(c.dC16)
		poison = 0xFFFF0000
	} else {
		out, err = o.Float32(c.dC32)
	}
	if err != nil {
		return check.Report{}, err
	}
	gc := newGroupCheck(o.Tolerance())
	product := func(s Shape, a, b int64) *matref.Product {
		return &matref.Product{M: s.M, N: s.N, K: s.K, Alpha: 1, A: c.hA[a : a+int64(s.M*s.K)], B: c.hB[b : b+int64(s.K*s.N)]}
	}
	if v.Library == LibDense {
		if !c.lay.MoE {
			return check.Fail("dense", "the dense GEMM needs groups that share N and K"), nil
		}
		s := c.lay.Dense()
		gc.group(product(s, 0, 0), out[:s.M*s.N], 0, fmt.Sprintf("the dense product X·W_0 (%s)", s), c.seed)
	} else {
		for g, s := range c.shapes {
			if o := c.lay.C[g]; !s.Empty() { // nothing to compare in an empty group; the canaries catch writes
				gc.group(product(s, c.lay.A[g], c.lay.B[g]), out[o:o+int64(s.M*s.N)], int(o), fmt.Sprintf("group %d (%s)", g, s), c.seed+uint64(g))
			}
		}
	}
	gc.canaries(out, c.lay.Canaries, poison)
	return gc.report(), nil
}

// Work is the FLOPs of all groups (2·M·N·K each) and the least traffic: every A_g and B_g read
// once, every C_g written once. The dense variant does the same FLOPs (with shared N and K,
// Σ 2·M_g·N·K = 2·T·N·K).
func (c *groupedCase) Work() lab.Work {
	var w lab.Work
	for _, s := range c.shapes {
		w.FLOPs += s.FLOPs()
		if !s.Empty() {
			w.Bytes += float64(c.prec.Bytes()) * float64(s.M*s.K+s.K*s.N+s.M*s.N)
		}
	}
	return w
}
