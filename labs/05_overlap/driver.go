// Package overlap is lab 05: hiding communication under computation, on AllGather + GEMM (the
// first layer of tensor parallelism) between the devices of one process.
//
// Every rank holds a block of the rows of A and the whole B; every rank computes C = A_full·B.
// The variants differ only in the schedule of the same two pieces of work, the all-gather of A
// and the tiles of the GEMM: one after the other (sequential), interleaved by source rank on two
// streams (chunked), or inside one persistent kernel (fused_pull, fused_signal). The driver
// supplies the buffers of every rank, the schedules, the reference (a float64 product) and the
// FLOP count; the engine does the rest.
package overlap

import (
	"fmt"
	"math/rand/v2"

	"github.com/kernel-labs/kernellabs/internal/check"
	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/matref"
)

// LabDir is the lab's directory name, the key of its driver.
const LabDir = "05_overlap"

// The variants whose schedule the driver runs (lab.yaml name:), and the library baseline.
const (
	VarSequential  = "sequential"
	VarChunked     = "chunked"
	VarFusedPull   = "fused_pull"
	VarFusedSignal = "fused_signal"
	LibNCCLCublas  = "nccl_cublas"

	VarEx1Push = "ex1_push_flags" // exercise 1: fused with signals, in the push form
)

// The suites (lab.yaml suites:).
const (
	SuiteAGGemm = "ag_gemm"
	SuiteGemmRS = "gemm_rs"
)

// The kernel entries the driver launches.
const (
	EntryGather      = "gather_rows"
	EntryGemmRows    = "gemm_rows"
	EntryFusedPull   = "ag_gemm_fused_pull"
	EntryFusedSignal = "ag_gemm_fused_signal"
)

// Launch parameters a variant may set (lab.yaml params:).
const (
	ParamThreads     = "threads"       // threads per block of the gather copy (default 256)
	ParamBlocksPerSM = "blocks_per_sm" // blocks per SM of the copy's and of the fused kernels' grid
	ParamProducers   = "producers"     // producer blocks of fused_signal (default 1)
	// push: 1, a fused kernel with signals in the push form: it takes this rank's rows, the tables
	// of every rank's A_full and ready counters, and writes its rows into its peers' A_full
	// (runFusedPush).
	ParamPush = "push"
)

// The GEMM tile of overlap_gemm.cuh.
const (
	TileM      = 64
	TileN      = 64
	GemmThread = 256
)

// fullCheckLimit is the largest M·N·K whose every element is checked against a float64 product
// computed on the CPU; above it, Freivalds' check and sampled elements (as lab 02 does).
const fullCheckLimit = 1 << 30

const nanBits = 0x7FC00000

// stagedNaN poisons the gathered A_full with a NaN of another payload than C's: a C computed from
// rows read before they arrived carries this payload (a NaN operand's payload propagates), so the
// grader tells "read rows that were not there yet" from "left C unwritten".
const stagedNaN = 0x7FC0A11F

// Lab is the driver of lab 05.
type Lab struct{}

func init() { lab.RegisterDriver(LabDir, Lab{}) }

var _ lab.Driver = Lab{}

// Shape is one problem: C (M×N) = A_full (M×K) · B (K×N).
type Shape struct{ M, N, K int }

// ShapeOf reads m, n and k of a problem.
func ShapeOf(p lab.Problem) (Shape, error) {
	s := Shape{M: int(p.Int("m", 0)), N: int(p.Int("n", 0)), K: int(p.Int("k", 0))}
	if s.M < 1 || s.N < 1 || s.K < 1 {
		return s, fmt.Errorf("problem %q: m, n and k must be at least 1 (got %d×%d×%d)", p.Name, s.M, s.N, s.K)
	}
	for _, e := range [][2]int{{s.M, s.K}, {s.K, s.N}, {s.M, s.N}} {
		if int64(e[0])*int64(e[1]) >= 1<<31 {
			return s, fmt.Errorf("problem %q: a %d×%d matrix has 2^31 elements or more, beyond the kernels' 32-bit tile indices", p.Name, e[0], e[1])
		}
	}
	return s, nil
}

// RowsOf is how many rows of A rank s of n holds: M/n, the first M%n ranks one more (the same
// split as ov_rows_of in overlap_gemm.cuh).
func RowsOf(s, m, n int) int {
	r := m / n
	if s < m%n {
		r++
	}
	return r
}

// Row0Of is the first row of rank s's block in A_full and in C (ov_row0_of).
func Row0Of(s, m, n int) int { return s*(m/n) + min(s, m%n) }

// Tiles is the number of 64×64 tiles of C one rank computes, tiled block by block of rows (a
// tile never spans two ranks' blocks): Σ_s ceil(rows_s/64) · ceil(N/64).
func Tiles(sh Shape, n int) int {
	t := 0
	for s := range n {
		t += ceilDiv(RowsOf(s, sh.M, n), TileM) * ceilDiv(sh.N, TileN)
	}
	return t
}

// WorkOf is one run: every one of the n ranks computes the M×N×K product, 2·M·N·K FLOPs each,
// so the engine's TFLOP/s is the rate of the whole layer over all n devices.
func WorkOf(sh Shape, n int) lab.Work {
	return lab.Work{FLOPs: 2 * float64(sh.M) * float64(sh.N) * float64(sh.K) * float64(n)}
}

// Ring is the order in which rank r visits the source blocks: itself first (its rows are local
// and need no communication), then r+1, r+2, … round the ring, so that the ranks spread their
// reads over the peers instead of all reading rank 0 first.
func Ring(r, n int) []int {
	o := make([]int, n)
	for j := range n {
		o[j] = (r + j) % n
	}
	return o
}

// PersistentGrid is the grid of a fused kernel: one wave of resident blocks at most (a block that
// spins on a flag must never wait for one that cannot start), at least the producers plus one
// consumer, and no more blocks than there is work for. resident is SMs × blocks per SM.
func PersistentGrid(resident, producers, tiles int) (int, error) {
	if resident < producers+1 {
		return 0, fmt.Errorf("%d resident blocks cannot hold %d producer block(s) and a GEMM block (lower producers:)", resident, producers)
	}
	return max(producers+1, min(resident, producers+tiles)), nil
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

func param(v *lab.Variant, key string, def int) int {
	if x, ok := v.Params[key]; ok && x > 0 {
		return int(x)
	}
	return def
}

// fillUniform fills x with values in [-1, 1) from seed.
func fillUniform(x []float32, seed uint64) {
	r := rand.New(rand.NewPCG(seed, seed^0x6f7665726c6170)) // "overlap"
	for i := range x {
		x[i] = r.Float32()*2 - 1
	}
}

// Prepare allocates every rank's block of A, B, its gathered A_full, C and flags, and the tables
// of peer pointers, after enabling peer access between every pair of devices.
func (Lab) Prepare(env *lab.Env, s *lab.Suite, p lab.Problem) (lab.Case, error) {
	sh, err := ShapeOf(p)
	if err != nil {
		return nil, err
	}
	n := len(env.Devices)
	if n < 2 {
		return nil, lab.Skip("overlapping an all-gather needs at least 2 devices, this run has %d (lab.yaml devices:; the emulator: --emu-devices 2)", n)
	}
	if len(env.Streams) != n {
		return nil, fmt.Errorf("the engine gave %d devices and %d streams", n, len(env.Streams))
	}
	if sh.M < n {
		return nil, lab.Skip("M = %d rows cannot be split over %d ranks (every rank needs at least one row)", sh.M, n)
	}
	if s.Name == SuiteGemmRS {
		if sh.K < n {
			return nil, lab.Skip("K = %d columns cannot be split over %d ranks (every rank needs at least one column of A)", sh.K, n)
		}
		c, err := prepareRS(env, sh)
		if err != nil {
			return nil, fmt.Errorf("%s, problem %q: %w", s.Name, p.Name, err)
		}
		return c, nil
	}
	c, err := prepare(env, sh)
	if err != nil {
		return nil, fmt.Errorf("%s, problem %q: %w", s.Name, p.Name, err)
	}
	return c, nil
}

// agCase is one prepared problem on every rank.
type agCase struct {
	env *lab.Env
	sh  Shape
	n   int

	aFull []float32 // host A_full (the concatenation of the blocks) and B, for the reference
	b     []float32
	ref   []float64 // float64 A_full·B and its error scale (small problems), computed once
	scale []float64

	dA     []*gpu.Buffer[float32] // per rank: its block of A (RowsOf × K)
	dB     []*gpu.Buffer[float32] // per rank: B (K × N)
	dAFull []*gpu.Buffer[float32] // per rank: the gathered A (M × K), a staging buffer
	dC     []*gpu.Buffer[float32] // per rank: C (M × N)
	dFlags []*gpu.Buffer[uint32]  // per rank: fused_signal's ready counters, one per source rank
	dATab  []*gpu.Buffer[uint64]  // per rank: every rank's dA pointer, on that rank's device
	// Per rank, every rank's A_full and flags pointers, on that rank's device (the push form).
	dAFullTab, dFlagsTab []*gpu.Buffer[uint64]

	copyStreams []gpu.Stream  // chunked: the second stream of every rank
	events      [][]gpu.Event // chunked: per rank, one event per source block
	epoch       uint32        // fused kernels with signals: runs so far
	producers   []int         // per rank, the producers that raise its counters each run (FlagsAfter)

	residentBlocks map[string]int // fused kernels: resident blocks by variant and rank, asked once
}

func prepare(env *lab.Env, sh Shape) (*agCase, error) {
	n := len(env.Devices)
	need := 4 * (int64(ceilDiv(sh.M, n))*int64(sh.K) + int64(sh.K)*int64(sh.N) + int64(sh.M)*int64(sh.K) + int64(sh.M)*int64(sh.N))
	for i, d := range env.Devices {
		if free, total, err := d.MemInfo(); err == nil && total > 0 && need > free {
			return nil, lab.Skip("device %d: needs %s, %s of %s is free (use a smaller shape)",
				i, gpu.HumanBytes(need), gpu.HumanBytes(free), gpu.HumanBytes(total))
		}
	}
	if err := gpu.EnablePeers(env.Devices); err != nil {
		return nil, err
	}
	c := &agCase{env: env, sh: sh, n: n}
	ok := false
	defer func() {
		if !ok {
			c.Release()
		}
	}()
	c.aFull = make([]float32, sh.M*sh.K)
	fillUniform(c.aFull, env.RNG.Uint64())
	c.b = make([]float32, sh.K*sh.N)
	fillUniform(c.b, env.RNG.Uint64())

	ptrs := make([]uint64, n)
	afullPtrs, flagPtrs := make([]uint64, n), make([]uint64, n)
	for r, d := range env.Devices {
		lo, rows := Row0Of(r, sh.M, n), RowsOf(r, sh.M, n)
		a, err := gpu.Upload(d, c.aFull[lo*sh.K:(lo+rows)*sh.K])
		if err != nil {
			return nil, fmt.Errorf("rank %d: uploading its rows of A: %w", r, err)
		}
		c.dA = append(c.dA, a)
		ptrs[r] = uint64(a.DevicePtr())
		b, err := gpu.Upload(d, c.b)
		if err != nil {
			return nil, fmt.Errorf("rank %d: uploading B: %w", r, err)
		}
		c.dB = append(c.dB, b)
		af, err := gpu.Alloc[float32](d, sh.M*sh.K)
		if err != nil {
			return nil, fmt.Errorf("rank %d: allocating A_full: %w", r, err)
		}
		c.dAFull = append(c.dAFull, af)
		// NaN until gathered: a GEMM tile that reads its rows before they arrive (a missing wait,
		// a flag raised too early) turns its part of C into NaN in the checked run.
		if err := af.Fill32(stagedNaN, env.Streams[r]); err != nil {
			return nil, fmt.Errorf("rank %d: poisoning A_full: %w", r, err)
		}
		cc, err := gpu.Alloc[float32](d, sh.M*sh.N)
		if err != nil {
			return nil, fmt.Errorf("rank %d: allocating C: %w", r, err)
		}
		c.dC = append(c.dC, cc)
		f, err := gpu.Upload(d, make([]uint32, n))
		if err != nil {
			return nil, fmt.Errorf("rank %d: allocating the flags: %w", r, err)
		}
		c.dFlags = append(c.dFlags, f)
		afullPtrs[r], flagPtrs[r] = uint64(af.DevicePtr()), uint64(f.DevicePtr())
	}
	for r, d := range env.Devices {
		t, err := gpu.Upload(d, ptrs)
		if err != nil {
			return nil, fmt.Errorf("rank %d: uploading the table of A's blocks: %w", r, err)
		}
		c.dATab = append(c.dATab, t)
		if t, err = gpu.Upload(d, afullPtrs); err != nil {
			return nil, fmt.Errorf("rank %d: uploading the table of A_full buffers: %w", r, err)
		}
		c.dAFullTab = append(c.dAFullTab, t)
		if t, err = gpu.Upload(d, flagPtrs); err != nil {
			return nil, fmt.Errorf("rank %d: uploading the table of ready counters: %w", r, err)
		}
		c.dFlagsTab = append(c.dFlagsTab, t)
	}
	if err := c.syncAll(); err != nil {
		return nil, err
	}
	ok = true
	return c, nil
}

func (c *agCase) syncAll() error { return gpu.SynchronizeAll(c.env.Streams, c.copyStreams) }

// Poison fills every rank's C and A_full with NaN (a tile that reads rows before they arrive
// turns its part of C into NaN) and writes the ready counters as the runs so far must have left
// them (FlagsAfter), so that the epochs go on growing from run to run. It waits for all of it.
// Kernels in the push form write their peers' A_full and counters through tables: the host's
// writes here declare both outputs of the run.
func (c *agCase) Poison() error {
	if err := gpu.Fill32Each(c.dC, nanBits, c.env.Streams); err != nil {
		return err
	}
	if err := gpu.Fill32Each(c.dAFull, stagedNaN, c.env.Streams); err != nil {
		return err
	}
	for d, f := range c.dFlags {
		prod := 0
		if c.producers != nil {
			prod = c.producers[d]
		}
		if err := f.CopyFromHost(FlagsAfter(c.epoch, prod, c.n, d), c.env.Streams[d]); err != nil {
			return fmt.Errorf("rank %d: writing the ready counters: %w", d, err)
		}
	}
	return c.syncAll()
}

// FlagsAfter is rank d's row of n ready counters after `epoch` runs of a fused kernel with
// signals whose counters on rank d are raised by `producers` blocks each run (the pull form: rank
// d's own producers; the push form: every rank's, the same number on all): epoch·producers for
// every peer, 0 for d itself, whose rows are local.
func FlagsAfter(epoch uint32, producers, n, d int) []uint32 {
	row := make([]uint32, n)
	for s := range row {
		if s != d {
			row[s] = epoch * uint32(producers)
		}
	}
	return row
}

// Run runs the variant's schedule on every rank, then waits on the host for every stream of every
// rank, so that the engine's end event comes after all of it (a host round trip inside the time).
func (c *agCase) Run(v *lab.Variant) error {
	var err error
	switch {
	case v.Library != "":
		err = c.runLibrary(v)
	case v.Name == VarSequential || v.Name == VarChunked:
		if v.Entry != EntryGemmRows {
			return fmt.Errorf("variant %s: the %s schedule launches entry %s, not %s", v.Name, v.Name, EntryGemmRows, v.Entry)
		}
		if v.Name == VarSequential {
			err = c.runSequential(v)
		} else {
			err = c.runChunked(v)
		}
	case v.Entry == EntryFusedPull:
		err = c.runFusedPull(v)
	case v.Params[ParamPush] != 0:
		err = c.runFusedPush(v)
	case v.Entry == EntryFusedSignal:
		err = c.runFusedSignal(v)
	default:
		return fmt.Errorf("variant %s: the driver does not know how to run entry %s", v.Name, v.Entry)
	}
	if err != nil {
		return err
	}
	return c.syncAll()
}

// helper returns the gather kernel loaded on rank r's device.
func (c *agCase) helper(r int) (gpu.Kernel, error) {
	return c.env.KernelOnByEntry(r, EntryGather)
}

// launchGather copies `count` source blocks, from rank `first` on round the ring, into rank r's
// A_full, on stream s.
func (c *agCase) launchGather(v *lab.Variant, r, first, count int, s gpu.Stream) error {
	k, err := c.helper(r)
	if err != nil {
		return err
	}
	work := 0
	for j := range count {
		work = max(work, RowsOf((first+j)%c.n, c.sh.M, c.n)*c.sh.K)
	}
	threads := param(v, ParamThreads, 256)
	grid := gpu.GridFor(work, threads, c.env.Devices[r].Info().SMs, param(v, ParamBlocksPerSM, 2))
	cfg := gpu.LaunchConfig{Grid: gpu.D1(grid), Block: gpu.D1(threads), Stream: s}
	return gpu.Launch(k, cfg, c.dATab[r], c.dAFull[r], int32(c.sh.M), int32(c.sh.K), int32(c.n), int32(first), int32(count))
}

// launchGemm computes rows [row0, row0+rows) of rank r's C from a (rows × K, at address a).
func (c *agCase) launchGemm(v *lab.Variant, r int, a gpu.Ptr, row0, rows int, s gpu.Stream) error {
	k, err := c.env.KernelOn(r, v)
	if err != nil {
		return err
	}
	cfg := gpu.LaunchConfig{Grid: gpu.D2(ceilDiv(c.sh.N, TileN), ceilDiv(rows, TileM)), Block: gpu.D1(GemmThread), Stream: s}
	cp := c.dC[r].DevicePtr() + gpu.Ptr(4*row0*c.sh.N)
	return gpu.Launch(k, cfg, a, c.dB[r], cp, int32(rows), int32(c.sh.N), int32(c.sh.K))
}

// runSequential: the all-gather of every block into A_full, then one GEMM over A_full, on one
// stream per rank.
func (c *agCase) runSequential(v *lab.Variant) error {
	for r := range c.n {
		s := c.env.Streams[r]
		if err := c.launchGather(v, r, 0, c.n, s); err != nil {
			return fmt.Errorf("rank %d, all-gather: %w", r, err)
		}
		if err := c.launchGemm(v, r, c.dAFull[r].DevicePtr(), 0, c.sh.M, s); err != nil {
			return fmt.Errorf("rank %d, GEMM: %w", r, err)
		}
	}
	return nil
}

// runChunked: per rank, the GEMM of its own rows starts at once on the compute stream (they are
// local), while the blocks of the other ranks are copied one launch each on the copy stream, an
// event recorded after each. The compute stream waits for a block's event (a stream wait, not the
// host) before that block's GEMM: the copy of block s+1 runs while the GEMM of block s computes,
// and the whole schedule is queued up front.
func (c *agCase) runChunked(v *lab.Variant) error {
	if err := c.openCopyStreams(); err != nil {
		return err
	}
	for r := range c.n {
		ring := Ring(r, c.n)
		compute := c.env.Streams[r]
		if err := c.launchGemm(v, r, c.dA[r].DevicePtr(), Row0Of(r, c.sh.M, c.n), RowsOf(r, c.sh.M, c.n), compute); err != nil {
			return fmt.Errorf("rank %d, GEMM of its own rows: %w", r, err)
		}
		for j := 1; j < c.n; j++ {
			s := ring[j]
			if err := c.launchGather(v, r, s, 1, c.copyStreams[r]); err != nil {
				return fmt.Errorf("rank %d, copy of rank %d's rows: %w", r, s, err)
			}
			if err := c.events[r][j].Record(c.copyStreams[r]); err != nil {
				return fmt.Errorf("rank %d: %w", r, err)
			}
			if err := compute.WaitEvent(c.events[r][j]); err != nil {
				return fmt.Errorf("rank %d, waiting for rank %d's rows: %w", r, s, err)
			}
			row0 := Row0Of(s, c.sh.M, c.n)
			a := c.dAFull[r].DevicePtr() + gpu.Ptr(4*row0*c.sh.K)
			if err := c.launchGemm(v, r, a, row0, RowsOf(s, c.sh.M, c.n), compute); err != nil {
				return fmt.Errorf("rank %d, GEMM of rank %d's rows: %w", r, s, err)
			}
		}
	}
	return nil
}

func (c *agCase) openCopyStreams() error {
	if c.copyStreams != nil {
		return nil
	}
	for r, d := range c.env.Devices {
		s, err := d.NewStream()
		if err != nil {
			return fmt.Errorf("rank %d: a copy stream: %w", r, err)
		}
		c.copyStreams = append(c.copyStreams, s)
		evs := make([]gpu.Event, c.n)
		for j := 1; j < c.n; j++ {
			if evs[j], err = d.NewEvent(); err != nil {
				return fmt.Errorf("rank %d: an event: %w", r, err)
			}
		}
		c.events = append(c.events, evs)
	}
	return nil
}

// resident is how many blocks of fused kernel k are sure to run at once on rank r's device: SMs ×
// blocks_per_sm on a GPU, lowered to what the backend's occupancy calculator says fits (a block
// that spins on a flag must never wait for one that cannot start), and SMs on the emulator (one
// block per worker thread).
func (c *agCase) resident(v *lab.Variant, r int, k gpu.Kernel) (int, error) {
	key := fmt.Sprintf("%s@%d", v.Key(), r)
	if n, ok := c.residentBlocks[key]; ok {
		return n, nil // asked once per case: not between the ranks' launches of every timed run
	}
	n, err := c.askResident(v, r, k)
	if err == nil {
		if c.residentBlocks == nil {
			c.residentBlocks = map[string]int{}
		}
		c.residentBlocks[key] = n
	}
	return n, err
}

func (c *agCase) askResident(v *lab.Variant, r int, k gpu.Kernel) (int, error) {
	sms := max(c.env.Devices[r].Info().SMs, 1)
	if c.env.Devices[r].Info().Emulated {
		return sms, nil
	}
	perSM := param(v, ParamBlocksPerSM, 1)
	fits, ok, err := gpu.MaxActiveBlocksPerSM(k, GemmThread, 0)
	if err != nil {
		return 0, fmt.Errorf("rank %d: %w", r, err)
	}
	if ok {
		if fits < 1 {
			return 0, fmt.Errorf("rank %d: kernel %s does not fit on an SM with %d threads per block", r, k.Name(), GemmThread)
		}
		perSM = min(perSM, fits)
	}
	return sms * perSM, nil
}

func (c *agCase) runFusedPull(v *lab.Variant) error {
	tiles := Tiles(c.sh, c.n)
	for r := range c.n {
		k, err := c.env.KernelOn(r, v)
		if err != nil {
			return err
		}
		res, err := c.resident(v, r, k)
		if err != nil {
			return err
		}
		grid := max(1, min(res, tiles))
		cfg := gpu.LaunchConfig{Grid: gpu.D1(grid), Block: gpu.D1(GemmThread), Stream: c.env.Streams[r]}
		if err := gpu.Launch(k, cfg, c.dATab[r], c.dB[r], c.dC[r], int32(r), int32(c.n),
			int32(c.sh.M), int32(c.sh.N), int32(c.sh.K)); err != nil {
			return fmt.Errorf("rank %d: %w", r, err)
		}
	}
	return nil
}

func (c *agCase) runFusedSignal(v *lab.Variant) error {
	tiles := Tiles(c.sh, c.n)
	c.epoch++
	for r := range c.n {
		k, err := c.env.KernelOn(r, v)
		if err != nil {
			return err
		}
		res, err := c.resident(v, r, k)
		if err != nil {
			return err
		}
		// At least one GEMM block for every producer... and never more producers than half a wave.
		prod := max(1, min(param(v, ParamProducers, 1), res/2))
		grid, err := PersistentGrid(res, prod, tiles)
		if err != nil {
			return fmt.Errorf("rank %d: %w", r, err)
		}
		cfg := gpu.LaunchConfig{Grid: gpu.D1(grid), Block: gpu.D1(GemmThread), Stream: c.env.Streams[r]}
		if err := gpu.Launch(k, cfg, c.dATab[r], c.dAFull[r], c.dFlags[r], c.dB[r], c.dC[r], int32(r), int32(c.n),
			int32(c.sh.M), int32(c.sh.N), int32(c.sh.K), int32(prod), c.epoch); err != nil {
			return fmt.Errorf("rank %d: %w", r, err)
		}
		c.setProducers(r, prod) // rank r's counters are raised by its own producers
	}
	return nil
}

// setProducers records the producers of rank r's launch for FlagsAfter.
func (c *agCase) setProducers(r, prod int) {
	if c.producers == nil {
		c.producers = make([]int, c.n)
	}
	c.producers[r] = prod
}

// runFusedPush runs a fused kernel in the push form (params push: 1): the producers of rank s
// write its rows into every peer's A_full and raise the peer's counter for s, so a consumer waits
// on counters that other ranks raise. Every rank must then count the same producers: the number
// is the smallest that every rank's wave allows, not each rank's own.
func (c *agCase) runFusedPush(v *lab.Variant) error {
	tiles := Tiles(c.sh, c.n)
	ks := make([]gpu.Kernel, c.n)
	res := make([]int, c.n)
	prod := param(v, ParamProducers, 1)
	for r := range c.n {
		k, err := c.env.KernelOn(r, v)
		if err != nil {
			return err
		}
		if res[r], err = c.resident(v, r, k); err != nil {
			return err
		}
		ks[r] = k
		prod = max(1, min(prod, res[r]/2))
	}
	c.epoch++
	for r := range c.n {
		c.setProducers(r, prod)
		grid, err := PersistentGrid(res[r], prod, tiles)
		if err != nil {
			return fmt.Errorf("rank %d: %w", r, err)
		}
		cfg := gpu.LaunchConfig{Grid: gpu.D1(grid), Block: gpu.D1(GemmThread), Stream: c.env.Streams[r]}
		if err := gpu.Launch(ks[r], cfg, c.dA[r], c.dAFullTab[r], c.dFlagsTab[r], c.dB[r], c.dC[r], int32(r), int32(c.n),
			int32(c.sh.M), int32(c.sh.N), int32(c.sh.K), int32(prod), c.epoch); err != nil {
			return fmt.Errorf("rank %d: %w", r, err)
		}
	}
	return nil
}

// runLibrary: ncclAllGather of the blocks into every rank's A_full, then cuBLAS SGEMM over it, on
// each rank's stream. NCCL's all-gather needs equal blocks: M must be a multiple of n.
func (c *agCase) runLibrary(v *lab.Variant) error {
	if v.Library != LibNCCLCublas {
		return fmt.Errorf("variant %s: library %q is not one lab 05 knows (%s)", v.Name, v.Library, LibNCCLCublas)
	}
	if c.sh.M%c.n != 0 {
		return lab.Skip("NCCL's all-gather needs equal blocks: M = %d is not a multiple of %d ranks", c.sh.M, c.n)
	}
	comm, err := c.env.Communicator()
	if err != nil {
		return err
	}
	send := make([]gpu.Ptr, c.n)
	recv := make([]gpu.Ptr, c.n)
	for r := range c.n {
		send[r], recv[r] = c.dA[r].DevicePtr(), c.dAFull[r].DevicePtr()
	}
	if err := comm.AllGather(send, recv, c.sh.M/c.n*c.sh.K, gpu.F32, c.env.Streams); err != nil {
		return err
	}
	// Row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ: swap the operands and m ↔ n (see lab 02).
	for r := range c.n {
		g := gpu.GemmDesc{M: c.sh.N, N: c.sh.M, K: c.sh.K, Alpha: 1, Beta: 0,
			A: c.dB[r].DevicePtr(), LDA: c.sh.N, B: c.dAFull[r].DevicePtr(), LDB: c.sh.K,
			C: c.dC[r].DevicePtr(), LDC: c.sh.N, InType: gpu.F32, OutType: gpu.F32}
		blas, err := c.env.BLASOn(r)
		if err != nil {
			return fmt.Errorf("rank %d: %w", r, err)
		}
		if err := blas.Sgemm(c.env.Streams[r], g); err != nil {
			return fmt.Errorf("rank %d: %w", r, err)
		}
	}
	return nil
}

// Check compares every rank's C with the float64 product A_full·B; the report is the worst rank's.
func (c *agCase) Check(v *lab.Variant) (check.Report, error) {
	p := &matref.Product{M: c.sh.M, N: c.sh.N, K: c.sh.K, Alpha: 1, A: c.aFull, B: c.b}
	full := float64(c.sh.M)*float64(c.sh.N)*float64(c.sh.K) <= fullCheckLimit
	if full && c.ref == nil {
		c.ref, c.scale = p.Reference()
	}
	var worst check.Report
	for r, o := range c.dC {
		out, err := o.Download()
		if err != nil {
			return check.Report{}, fmt.Errorf("rank %d: reading C back: %w", r, err)
		}
		var rep check.Report
		if full {
			rep = matref.CompareFull(out, c.ref, c.scale, v.Suite.Tolerance)
		} else {
			seed := c.env.RNG.Uint64()
			rep = matref.Freivalds(p, out, 2, matref.SampleEntries(c.sh.M, c.sh.N, 64, seed), seed, v.Suite.Tolerance)
		}
		rep.Method = fmt.Sprintf("every rank's C: %s", rep.Method)
		note := fmt.Sprintf("rank %d", r)
		if rep.Note != "" {
			note += ": " + rep.Note
		}
		rep.Note = note
		if r == 0 || (!rep.OK && worst.OK) || (rep.OK == worst.OK && rep.RelErr > worst.RelErr) {
			worst = rep
		}
	}
	if worst.OK {
		worst.Note = fmt.Sprintf("all %d ranks correct; largest error on %s", c.n, worst.Note)
	}
	return worst, nil
}

// Work is the FLOPs of the whole layer (see WorkOf).
func (c *agCase) Work() lab.Work { return WorkOf(c.sh, c.n) }

// Release frees every rank's buffers, streams and events (the libraries belong to the Env).
func (c *agCase) Release() error {
	var first error
	keep := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	for _, evs := range c.events {
		for _, e := range evs {
			if e != nil {
				keep(e.Close())
			}
		}
	}
	for _, s := range c.copyStreams {
		keep(s.Close())
	}
	c.events, c.copyStreams = nil, nil
	for _, bs := range [][]*gpu.Buffer[float32]{c.dA, c.dB, c.dAFull, c.dC} {
		for _, b := range bs {
			keep(b.Free())
		}
	}
	for _, b := range c.dFlags {
		keep(b.Free())
	}
	for _, b := range append(append(append([]*gpu.Buffer[uint64]{}, c.dATab...), c.dAFullTab...), c.dFlagsTab...) {
		keep(b.Free())
	}
	return first
}
