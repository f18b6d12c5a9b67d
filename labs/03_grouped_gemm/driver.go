// Package grouped is lab 03, "grouped GEMM for mixture-of-experts": G independent products
// C_g = A_g·B_g of different shapes — the experts of a MoE layer — computed by a host loop of
// launches, by cuBLAS (a loop of calls, and its grouped batched call), and by persistent kernels
// whose tile scheduler keeps every SM busy across all groups. The driver supplies the groups on
// the device, one call per variant, the check and the work counts; the engine builds, checks,
// times and records. Suites named bf16... have bf16 A, B and C with fp32 accumulation, the others
// are all fp32; C = A·B, no alpha, no beta. The engine poisons C with NaN before the checked run:
// every element of every group must be written and right (Check), and nothing outside the
// groups may be written (the canaries of Layout).
package grouped

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/kernel-labs/kernellabs/internal/check"
	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/matref"
)

// LabDir is the lab's directory name, under which the driver registers.
const LabDir = "03_grouped_gemm"

const (
	decodeCols      = 256 // of one work item of the decode kernels (DEC_COLS in 07_decode_moe.cu, DM_COLS in 08_decode_mma.cu)
	defaultMaxSplit = 16
)

// Library calls that variants name in lab.yaml (library: ...).
const (
	LibLoop    = "cublas_loop"    // one cuBLAS GEMM per non-empty group (Sgemm, or GemmEx for bf16)
	LibGrouped = "cublas_grouped" // cublasGemmGroupedBatchedEx: all groups in one call
	LibDense   = "cublas_dense"   // one dense GEMM of the same FLOPs: X (T×K) · W_0 (K×N), shared N and K only
)

// Launch parameters a kernel variant sets in lab.yaml (params:; a switch is on at 1). The kernels'
// arguments follow from them (manifest_test.go checks each kernel's signature).
const (
	ParamLoop       = "loop"        // one launch per non-empty group of a one-GEMM kernel, grid (ceil(N/bn), ceil(M/bm))
	ParamPersistent = "persistent"  // one launch of SMs × ctas_per_sm blocks over all groups (the kl_group array)
	ParamMoE        = "moe"         // persistent, the MoE form: X, W, Y and the row offsets
	ParamGather     = "gather"      // moe, fp32: the dispatch fused, X in token order and the routing's row list
	ParamTMA        = "tma"         // moe: the wgmma kernel, tensor maps of X and W (N and K multiples of 8)
	ParamTMAStore   = "tma_store"   // tma: the kernel also takes a tensor map of Y, for TMA stores
	ParamDecode     = "decode"      // moe: the decode kernel, max_split·T·N fp32 partials, a counter per item
	ParamMaxSplit   = "max_split"   // decode: the most units an item's K is split into (default 16)
	ParamAlign      = "align"       // N and K must be multiples of align; other problems are skipped (default 1)
	ParamDynamic    = "dynamic"     // a grouped-form persistent kernel that takes tiles from a counter
	ParamLPT        = "lpt"         // the groups in the metadata ordered longest tile first (LongestFirst)
	ParamBM         = "bm"          // the kernel's tile, bm × bn (128 × 128): for the loop's grid and the timeline
	ParamBN         = "bn"          // (with bm)
	ParamThreads    = "threads"     // block size (1-D)
	ParamSmem       = "smem"        // dynamic shared memory in bytes (the driver opts in above 48 KiB)
	ParamCTAsPerSM  = "ctas_per_sm" // the most blocks per SM of a persistent grid (default 2), lowered to what fits
	ParamTimeline   = "timeline"    // built with -DKL_TIMELINE: the driver keeps the tile records
)

// launchShape is how a kernel variant is launched.
type launchShape struct {
	Loop, Persistent, MoE, Gather, TMA, TMAStore, Decode, Dynamic, LPT, Timeline bool
	BM, BN, Threads, Smem, CTAsPerSM, MaxSplit, Align                            int
}

// shapeOf reads a kernel variant's launch parameters.
func shapeOf(v *lab.Variant) (launchShape, error) {
	ls := launchShape{BM: int(v.Int(ParamBM, 128)), BN: int(v.Int(ParamBN, 128)), Threads: int(v.Int(ParamThreads, 128)),
		Smem: int(v.Int(ParamSmem, 0)), CTAsPerSM: int(v.Int(ParamCTAsPerSM, 2)), MaxSplit: int(v.Int(ParamMaxSplit, defaultMaxSplit)),
		Align: int(v.Int(ParamAlign, 1))}
	for p, flag := range map[string]*bool{ParamLoop: &ls.Loop, ParamPersistent: &ls.Persistent, ParamMoE: &ls.MoE,
		ParamGather: &ls.Gather, ParamTMA: &ls.TMA, ParamTMAStore: &ls.TMAStore, ParamDecode: &ls.Decode, ParamDynamic: &ls.Dynamic, ParamLPT: &ls.LPT,
		ParamTimeline: &ls.Timeline} {
		*flag = v.Int(p, 0) != 0 // the switches: 1 on, 0 or absent off
	}
	switch {
	case ls.Loop == ls.Persistent:
		return ls, fmt.Errorf("variant %s: set exactly one of loop: 1 and persistent: 1 (params in lab.yaml)", v.Name)
	case ls.MoE && !ls.Persistent:
		return ls, fmt.Errorf("variant %s: moe: 1 is a persistent kernel (add persistent: 1)", v.Name)
	case ls.Gather && (!ls.MoE || ls.TMA):
		return ls, fmt.Errorf("variant %s: gather: 1 is the MoE form with pointers (add moe: 1; not with tma: 1)", v.Name)
	case ls.TMA && !ls.MoE:
		return ls, fmt.Errorf("variant %s: tma: 1 is the MoE-form wgmma kernel (add moe: 1)", v.Name)
	case ls.TMAStore && !ls.TMA:
		return ls, fmt.Errorf("variant %s: tma_store: 1 is for the wgmma kernel's output (add tma: 1)", v.Name)
	case ls.Decode && (!ls.MoE || ls.TMA || ls.Gather):
		return ls, fmt.Errorf("variant %s: decode: 1 is the MoE-form decode kernel (add moe: 1; not with tma or gather)", v.Name)
	case ls.Dynamic && (ls.MoE || ls.Loop):
		return ls, fmt.Errorf("variant %s: dynamic: 1 is a grouped-form persistent kernel", v.Name)
	case ls.BM < 1 || ls.BN < 1 || ls.Threads < 32 || ls.Threads > 1024 || ls.Smem < 0 || ls.CTAsPerSM < 1 || ls.MaxSplit < 1 || ls.Align < 1:
		return ls, fmt.Errorf("variant %s: bad launch parameters %v", v.Name, v.Params)
	}
	return ls, nil
}

// Lab is the driver of lab 03.
type Lab struct{}

func init() { lab.RegisterDriver(LabDir, Lab{}) }

// PeerProblem describes a problem for the peer scripts (peers/*.py, lab.PeerDriver): the groups as
// GroupsOf decodes them (a MoE problem's token counts come from its seed), and the precision.
func (Lab) PeerProblem(s *lab.Suite, p lab.Problem) (map[string]any, lab.Work, error) {
	shapes, err := GroupsOf(p)
	if err != nil {
		return nil, lab.Work{}, err
	}
	groups := make([][3]int, len(shapes))
	for i, g := range shapes {
		groups[i] = [3]int{g.M, g.N, g.K}
	}
	c := groupedCase{shapes: shapes, prec: lab.PrecisionOf(s)}
	return map[string]any{"groups": groups, "shared_nk": SharedNK(shapes), "data": c.prec.String()}, c.Work(), nil
}

// groupedCase is one prepared problem on the device (its buffers belong to the engine).
type groupedCase struct {
	env         *lab.Env
	prec        lab.Precision
	shapes      []Shape
	lay         Layout
	seed        uint64               // of the check's random vectors and samples
	hA, hB      []float32            // the inputs as the device has them (bf16 values widened exactly)
	a, b, c     gpu.Ptr              // the A, B and C arenas, in the suite's precision
	dC          *lab.OutputIn        // the C arena
	dXTok32     *gpu.Buffer[float32] // gather: the token matrix in token order (fp32, MoE problems)
	dRows       *gpu.Buffer[int32]   // gather: the routing's row list, X_sorted[j] = X_tok[rows[j]]
	dGroups     *gpu.Buffer[uint64]  // kl_group arrays: natural order, then longest first
	dOffs       *gpu.Buffer[int32]   // MoE row offsets (E+1)
	dCounters   *gpu.Buffer[int32]   // the dynamic scheduler's two counters
	split       *lab.SplitSums       // decode: max_split·T·N partial sums, one counter per item (T·ceil(N/256))
	blasGrouped *lab.GroupedGemm     // the groups as one cuBLAS grouped batched call
	tl          lab.TileTimeline     // the records of the last timeline Run
}

// Prepare lays out the groups of problem p, fills them with fresh random inputs and uploads them with
// what the variants of suite s need: the gather variants' token matrix, the decode kernel's workspace.
func (Lab) Prepare(env *lab.Env, s *lab.Suite, p lab.Problem) (lab.Case, error) {
	shapes, err := GroupsOf(p)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (lab.Case, error) {
		return nil, fmt.Errorf("%s, problem %q (%s): %w", s.Name, p.Name, GroupsLine(shapes), err)
	}
	prec := lab.PrecisionOf(s)
	in, lay := prec.Bytes(), NewLayout(shapes, prec.Bytes())
	maxSplit, items := 0, lay.Rows*lab.CeilDiv(shapes[0].N, decodeCols) // decode (MoE form): partial sums, item counters
	if lay.MoE && s.MaxParam(ParamDecode) != 0 {
		maxSplit = int(max(defaultMaxSplit, s.MaxParam(ParamMaxSplit)))
	}
	need := int64(in)*(lay.ALen+lay.BLen+lay.CLen) + int64(len(shapes))*2*GroupDescBytes + 64*int64(len(shapes)) +
		lab.SplitSumsBytes(maxSplit, lay.Rows*shapes[0].N, items)
	if err := lab.NeedMemory(env, need); err != nil {
		return fail(err)
	}
	c := &groupedCase{env: env, prec: prec, shapes: shapes, lay: lay, seed: env.RNG.Uint64(),
		hA: make([]float32, lay.ALen), hB: make([]float32, lay.BLen)}
	matref.FillHash(c.hA, env.RNG.Uint64())
	// Of B only the groups with rows are filled and uploaded (and W_0, which the dense variant
	// reads): a decode layer's experts are mostly empty, and their GBs of weights would cost
	// seconds per job on the host. The rest stays NaN on the device, zero and unread on the host.
	weights, seedB := lay.ReadB(), env.RNG.Uint64()
	for _, pt := range weights {
		matref.FillHashFrom(c.hB[pt[0]:pt[1]], seedB, uint64(pt[0]))
	}
	// A bf16 suite's inputs are rounded in place: the reference multiplies what the device has.
	a := lab.NewPrep(env)
	c.a, c.b = a.UploadAs("A", prec, c.hA), a.UploadPartsAs("B", prec, c.hB, weights)
	// C, the groups and the canaries around them, is poisoned with NaN (0xFF bytes, in fp32 and bf16).
	c.dC = lab.PrepOutputIn(a, "C", prec, int(lay.CLen), lab.PoisonNaN)
	c.c = c.dC.Ptr()
	lpt := LongestFirst(shapes)
	order := append(slices.Sorted(slices.Values(lpt)), lpt...) // the natural order, then longest first
	c.dGroups = lab.PrepUpload(a, "the group descriptors", lay.EncodeGroups(order, uint64(c.a), uint64(c.b), uint64(c.c), in))
	if lay.MoE {
		c.dOffs = lab.PrepUpload(a, "the row offsets", lay.Offsets)
	}
	if s.MaxParam(ParamGather) != 0 && lay.MoE && prec == lab.FP32 {
		// The kernels that fuse the dispatch read the routed rows X_sorted (the A arena) from a token
		// matrix X_tok in an order drawn for this case: X_sorted[j] = X_tok[rows[j]].
		t, k := lay.Rows, shapes[0].K
		rows, xtok := make([]int32, max(t, 1)), make([]float32, max(t*k, 1)) // one element at least: a pointer to pass
		for j, tok := range env.RNG.Perm(t) {
			rows[j] = int32(tok)
			copy(xtok[tok*k:(tok+1)*k], c.hA[j*k:(j+1)*k])
		}
		c.dXTok32 = lab.PrepUpload(a, "the token matrix", xtok)
		c.dRows = lab.PrepUpload(a, "the routing's row list", rows)
	}
	c.dCounters = lab.PrepScratch[int32](a, "the tile counters", 2, lab.PoisonBytes(0))
	if maxSplit > 0 {
		c.split = lab.PrepSplitSums(a, maxSplit, lay.Rows*shapes[0].N, items)
	}
	var ds []gpu.GemmDesc // the non-empty groups, bucketed by shape for cublasGemmGroupedBatchedEx
	t := prec.DataType()
	_ = c.eachGroup(func(g int, s Shape, a, b, cc gpu.Ptr) error {
		ds = append(ds, gpu.RowMajorGemm(s.M, s.N, s.K, a, b, cc, t, t))
		return nil
	})
	if c.blasGrouped = lab.PrepGroupedGemm(a, ds, t, t); a.Err != nil {
		return fail(a.Err)
	}
	return c, nil
}

// eachGroup calls fn for every non-empty group with the device addresses of its matrices, as a
// host loop does (it launches nothing for an empty group).
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
		n := 0
		for _, s := range c.shapes {
			n += s.Tiles(ls.BM, ls.BN)
		}
		if tl, err = c.tl.Start(c.env, n); err != nil {
			return err
		}
	}
	cfg := func(grid gpu.Dim3) gpu.LaunchConfig {
		return gpu.LaunchConfig{Grid: grid, Block: gpu.D1(ls.Threads), SharedBytes: ls.Smem, Stream: c.env.Stream}
	}
	if ls.Loop {
		base := 0 // the timeline numbers the tiles of all launches one after the other
		c.tl.Launches = 0
		return c.eachGroup(func(g int, s Shape, a, b, cc gpu.Ptr) error {
			tilesM, tilesN := lab.CeilDiv(s.M, ls.BM), lab.CeilDiv(s.N, ls.BN)
			if tilesM > 65535 {
				return fmt.Errorf("variant %s needs %d tile rows, beyond the grid's 65535", v.Name, tilesM)
			}
			err := gpu.Launch(k, cfg(gpu.D2(tilesN, tilesM)), a, b, cc, int32(s.M), int32(s.N), int32(s.K),
				int32(s.K), int32(s.N), int32(s.N), tl, int32(base), int32(g))
			base, c.tl.Launches = base+tilesM*tilesN, c.tl.Launches+1
			return err
		})
	}
	// A persistent grid: ctas_per_sm blocks per SM, or as many as fit (1 on the emulator, which
	// has no occupancy calculator and runs one block per worker at a time).
	c.tl.Launches = 1
	fit, err := lab.BlocksPerSM(k, ls.Threads, ls.Smem)
	if err != nil {
		return err
	}
	grid, G := cfg(gpu.D1(c.env.SMs()*min(ls.CTAsPerSM, fit))), int32(len(c.shapes))
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
		split, err := c.split.Args(v.Name, ls.MaxSplit)
		if err != nil {
			return err
		}
		return gpu.Launch(k, grid, append([]any{c.a, c.b, c.c, c.dOffs, G, n, kk}, split...)...)
	case ls.TMA:
		// The maps of X (T×K, boxes of 64 × bm) and W (E×K×N as the 3-D tensor (N, K, E), boxes 64 × 64 × 1).
		if n%8 != 0 || kk%8 != 0 {
			return lab.Skip("%s loads tiles with TMA, whose row strides must be multiples of 16 bytes: N and K must be multiples of 8 (this problem has N=%d, K=%d)", v.Name, n, kk)
		}
		if c.prec != lab.BF16 {
			return fmt.Errorf("variant %s: the TMA kernel takes bf16 data; this suite is %s", v.Name, c.prec)
		}
		mx, err := lab.TensorMap(c.env, "X", lab.BF16Tiles(c.a, max(c.lay.Rows, 1), c.shapes[0].K, ls.BM, 64))
		if err != nil {
			return err
		}
		un, uk := uint64(n), uint64(kk)
		mw, err := lab.TensorMap(c.env, "W", gpu.TensorMapDesc{DataType: gpu.BF16, Global: c.b, Dims: []uint64{un, uk, uint64(len(c.shapes))},
			Strides: []uint64{un * 2, uk * un * 2}, Box: []uint32{64, 64, 1}, Swizzle: 128, L2Promotion: 256})
		if err != nil {
			return err
		}
		if !ls.TMAStore {
			return gpu.Launch(k, grid, c.dOffs, G, n, kk, c.c, mx, mw, tl)
		}
		my, err := lab.TensorMap(c.env, "Y", lab.BF16Tiles(c.c, max(c.lay.Rows, 1), int(n), 64, 64))
		if err != nil {
			return err
		}
		return gpu.Launch(k, grid, c.dOffs, G, n, kk, c.c, mx, mw, my, tl)
	case ls.Gather:
		if c.dRows == nil {
			return fmt.Errorf("variant %s: gather: 1 takes fp32 data (suite %s is %s)", v.Name, v.Suite.Name, c.prec)
		}
		return gpu.Launch(k, grid, c.dXTok32, c.dRows, c.b, c.c, c.dOffs, G, n, kk, tl)
	}
	return gpu.Launch(k, grid, c.a, c.b, c.c, c.dOffs, G, n, kk, tl)
}

// Check compares each group's output with its float64 product, and the canaries with the poison.
func (c *groupedCase) Check(v *lab.Variant, o *lab.Outputs) (check.Report, error) {
	out, err := c.dC.Read(o)
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
	// Still the poison: 0xFFFFFFFF in fp32; 0xFFFF in bf16, 0xFFFF0000 once widened.
	gc.canaries(out, c.lay.Canaries, uint32(0xFFFFFFFF)<<(32-8*c.prec.Bytes()))
	return gc.report(), nil
}

// Work is the FLOPs of all groups, which the dense variant does too (Σ 2·M_g·N·K = 2·T·N·K), and
// the least traffic: every A_g and B_g read once, every C_g written once.
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

// Record returns the SM, group, start and end of each tile of the last Run of a timeline variant.
func (c *groupedCase) Record(v *lab.Variant) (map[string]any, error) {
	if v.Int(ParamTimeline, 0) == 0 {
		return nil, nil
	}
	return c.tl.Record(c.env, v)
}

// gemm is one cuBLAS product C (M×N) = A (M×K) · B (K×N), row-major, on the lab's stream: cuBLAS
// is column-major, so the call is C_gᵀ = B_gᵀ·A_gᵀ (gpu.RowMajorGemm swaps operands and sizes).
func (c *groupedCase) gemm(blas gpu.BLAS, s Shape, a, b, cc gpu.Ptr) error {
	t := c.prec.DataType() // bf16 in and out for bf16 suites
	return lab.Gemm(blas, c.env.Stream, c.prec, gpu.RowMajorGemm(s.M, s.N, s.K, a, b, cc, t, t))
}

// runLibrary makes the cuBLAS calls of a library variant.
func (c *groupedCase) runLibrary(v *lab.Variant) error {
	blas, err := c.env.BLAS()
	if err != nil {
		return err
	}
	switch v.Library {
	case LibLoop:
		return c.eachGroup(func(g int, s Shape, a, b, cc gpu.Ptr) error { return c.gemm(blas, s, a, b, cc) })
	case LibGrouped:
		gb, ok := blas.(gpu.GroupedBLAS)
		if !ok {
			return fmt.Errorf("variant %s: this BLAS has no grouped batched GEMM (cuBLAS 12.5 or newer has cublasGemmGroupedBatchedEx)", v.Name)
		}
		return c.blasGrouped.Run(gb, c.env.Stream)
	case LibDense:
		if !c.lay.MoE {
			return lab.Skip("%s is one GEMM of the token matrix X (T×K) by one K×N matrix: the groups must share N and K", v.Name)
		}
		return c.gemm(blas, c.lay.Dense(), c.a, c.b, c.c)
	}
	return fmt.Errorf("variant %s: unknown library %q (lab 03 knows %s, %s and %s)", v.Name, v.Library, LibLoop, LibGrouped, LibDense)
}

// Derive records the weight-read floors of the run's bf16 suites (lab.DeriveReadFloors): at decode
// a MoE layer must read, once, the weights of every expert that got a row, Σ 2·K·N bytes over the
// non-empty groups.
func (Lab) Derive(info gpu.DeviceInfo, entries []lab.EntryView) (map[string]any, error) {
	return lab.DeriveReadFloors(info, entries, expertWeights)
}

// expertWeights is the bf16 weight bytes of the groups with rows of an entry's problem.
func expertWeights(e lab.EntryView) (bytes float64, experts int, ok bool) {
	if !strings.HasPrefix(e.Suite, "bf16") {
		return 0, 0, false
	}
	shapes, err := GroupsOf(lab.Problem{Name: e.Problem, Params: e.Params})
	if err != nil {
		return 0, 0, false // not a problem of this lab's kind: nothing to read
	}
	for _, s := range shapes {
		if !s.Empty() {
			bytes += float64(lab.BF16.Bytes()) * float64(s.K) * float64(s.N)
			experts++
		}
	}
	return bytes, experts, true
}

// Check limits: a group of up to FullCheckLimit multiply-adds is compared element by element with
// its float64 product; a larger one with Freivalds' check (FreivaldsVectors random ±1 vectors)
// plus SamplesPerGroup exactly computed elements.
const (
	FullCheckLimit   = 1 << 26
	FreivaldsVectors = 2
	SamplesPerGroup  = 24
)

// groupCheck accumulates the comparison of several groups into one report.
type groupCheck struct {
	*matref.Tally
	freivalds int     // groups checked with Freivalds' method
	full      int     // groups checked element by element
	worst     string  // the group of the largest relative error
	worstRel  float64 // and that error
	firstNaN  string  // the first group with NaN or Inf outputs
}

func newGroupCheck(tol float64) *groupCheck { return &groupCheck{Tally: matref.NewTally(tol)} }

// group checks one group's output out (M×N, row-major, contiguous) against p; base is the index
// of its first element in the C arena (for the mismatch list), label names it in messages.
func (gc *groupCheck) group(p *matref.Product, out []float32, base int, label string, seed uint64) {
	gc.R.Checked += len(out)
	// NaN or Inf anywhere: never written (the poison), or computed from garbage.
	before := gc.R.Unwritten
	for i, v := range out {
		if f := float64(v); math.IsNaN(f) || math.IsInf(f, 0) {
			if gc.R.Unwritten == 0 {
				gc.firstNaN = label
			}
			gc.R.Unwritten++
			gc.Mismatch(base+i, f, math.NaN())
		}
	}
	if gc.R.Unwritten > before {
		return
	}
	// The group's own sums first, then added to the others' (its share of the relative error).
	num0, den0 := gc.Num, gc.Den
	gc.Num, gc.Den = 0, 0
	if int64(p.M)*int64(p.N)*int64(p.K) <= FullCheckLimit {
		gc.full++
		ref, scale := p.Reference()
		for i, o := range out {
			gc.Element(base+i, float64(o), ref[i], scale[i])
		}
	} else {
		gc.freivalds++
		gc.Num, gc.Den = matref.FreivaldsSums(p, out, FreivaldsVectors, seed)
		for _, s := range matref.SampleEntries(p.M, p.N, SamplesPerGroup, seed) {
			i, j := s[0], s[1]
			want, scale := p.Entry(i, j)
			gc.Sample(base+i*p.N+j, float64(out[i*p.N+j]), want, scale)
		}
	}
	if rel := check.RelErr(gc.Num, gc.Den); rel > gc.worstRel || gc.worst == "" {
		gc.worstRel, gc.worst = rel, label
	}
	gc.Num, gc.Den = num0+gc.Num, den0+gc.Den
}

// canaries checks that the C arena outside every group (the spans) still holds the poison bits.
func (gc *groupCheck) canaries(out []float32, spans [][2]int64, poison uint32) {
	written, first := 0, int64(0)
	for _, r := range spans {
		for i := r[0]; i < r[1]; i++ {
			if math.Float32bits(out[i]) != poison {
				if written == 0 {
					first = i
					gc.Mismatch(int(i), float64(out[i]), math.NaN())
				}
				written++
			}
		}
	}
	if written > 0 {
		gc.Bad += written
		gc.R.Note = joinNote(gc.R.Note, fmt.Sprintf("%d element(s) outside every group were written (first at C arena element %d): "+
			"a tile of an empty group, or rows or columns past the end of a group", written, first))
	}
}

// report finishes the check.
func (gc *groupCheck) report() check.Report {
	r := gc.R
	switch {
	case gc.full > 0 && gc.freivalds > 0:
		r.Method = fmt.Sprintf("every group against float64: %d element by element, %d by Freivalds' check (%d ±1 vectors) and %d sampled elements each",
			gc.full, gc.freivalds, FreivaldsVectors, SamplesPerGroup)
	case gc.freivalds > 0:
		r.Method = fmt.Sprintf("every group by Freivalds' check in float64 (%d ±1 vectors) and %d exactly computed elements each",
			FreivaldsVectors, SamplesPerGroup)
	default:
		r.Method = "every element of every group against a float64 CPU reference"
	}
	r.Method += "; the output outside the groups must keep its NaN poison"
	if r.Unwritten > 0 {
		r.RelErr = math.Inf(1)
		r.Note = joinNote(fmt.Sprintf("%d outputs are NaN or Inf (never written?), first in %s", r.Unwritten, gc.firstNaN), r.Note)
	} else {
		r.RelErr = check.RelErr(gc.Num, gc.Den)
		if gc.Bad > 0 && r.Note == "" {
			r.Note = fmt.Sprintf("%d element(s) off by more than tolerance × their error scale; worst group: %s", gc.Bad, gc.worst)
		} else if r.RelErr > r.Tolerance {
			r.Note = joinNote(r.Note, fmt.Sprintf("worst group: %s (relative error %.2e)", gc.worst, gc.worstRel))
		}
	}
	r.OK = r.Unwritten == 0 && gc.Bad == 0 && r.RelErr <= r.Tolerance
	return r
}

func joinNote(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + "; " + b
}
