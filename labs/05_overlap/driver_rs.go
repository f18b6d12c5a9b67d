package overlap

// The second suite, gemm_rs: GEMM + ReduceScatter, the second layer of tensor parallelism.
//
// Rank r holds A_r, a block of the columns of A (M × K_r), and B_r, the same block of the rows of
// B (K_r × N), K split like M in the first suite (ColsOf, Col0Of). Its partial product
// P_r = A_r·B_r is M × N; C = Σ_r P_r, and rank r ends with its block of C's rows (RowsOf,
// Row0Of of M). The variants: the whole GEMM then a pull reduction (sequential), the GEMM by
// destination row blocks with an event each and one reduction per destination queued behind the
// events of its blocks (chunked), the tiles' epilogues adding into the owners' outputs (fused).

import (
	"fmt"

	"github.com/kernel-labs/kernellabs/internal/check"
	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/matref"
)

// The variants and entries of gemm_rs that the first suite does not have.
const (
	VarFused = "fused"

	EntryReduceRows  = "reduce_rows"   // helper: the pull reduction of one destination's rows
	EntryGemmRSFused = "gemm_rs_fused" // the fused GEMM whose epilogue adds into peers
)

// ColsOf is how many columns of A (rows of B) rank s of n holds in gemm_rs: the split of RowsOf.
func ColsOf(s, k, n int) int { return RowsOf(s, k, n) }

// Col0Of is the first column of rank s's block of A (row of B) in gemm_rs.
func Col0Of(s, k, n int) int { return Row0Of(s, k, n) }

// RSWorkOf is one run of gemm_rs: the ranks' partial products together are one M×N×K product,
// 2·M·N·K FLOPs (each rank does 2·M·N·K_r), so the TFLOP/s is that of the layer on all n devices.
func RSWorkOf(sh Shape) lab.Work {
	return lab.Work{FLOPs: 2 * float64(sh.M) * float64(sh.N) * float64(sh.K)}
}

// rsCase is one prepared gemm_rs problem on every rank.
type rsCase struct {
	env *lab.Env
	sh  Shape
	n   int

	a, b       []float32 // host A (M×K) and B (K×N), for the reference
	ref, scale []float64

	dA     []*gpu.Buffer[float32] // per rank: A_r (M × K_r)
	dB     []*gpu.Buffer[float32] // per rank: B_r (K_r × N)
	dP     []*gpu.Buffer[float32] // per rank: the partial product P_r (M × N)
	dOut   []*gpu.Buffer[float32] // per rank: its rows of C (RowsOf × N)
	dPTab  []*gpu.Buffer[uint64]  // per rank: every rank's dP pointer
	dOTab  []*gpu.Buffer[uint64]  // per rank: every rank's dOut pointer
	events [][]gpu.Event          // per rank: one event per destination block (and one for zeroing)
	reduce []gpu.Stream           // chunked: per rank, the stream of its reductions

}

func prepareRS(env *lab.Env, sh Shape) (*rsCase, error) {
	n := len(env.Devices)
	kr := int64(ceilDiv(sh.K, n))
	need := 4 * (int64(sh.M)*kr + kr*int64(sh.N) + int64(sh.M)*int64(sh.N) + int64(ceilDiv(sh.M, n))*int64(sh.N))
	for i, d := range env.Devices {
		if free, total, err := d.MemInfo(); err == nil && total > 0 && need > free {
			return nil, lab.Skip("device %d: needs %s, %s of %s is free (use a smaller shape)",
				i, gpu.HumanBytes(need), gpu.HumanBytes(free), gpu.HumanBytes(total))
		}
	}
	if err := gpu.EnablePeers(env.Devices); err != nil {
		return nil, err
	}
	c := &rsCase{env: env, sh: sh, n: n}
	ok := false
	defer func() {
		if !ok {
			c.Release()
		}
	}()
	c.a = make([]float32, sh.M*sh.K)
	fillUniform(c.a, env.RNG.Uint64())
	c.b = make([]float32, sh.K*sh.N)
	fillUniform(c.b, env.RNG.Uint64())

	pTab, oTab := make([]uint64, n), make([]uint64, n)
	for r, d := range env.Devices {
		k0, kr := Col0Of(r, sh.K, n), ColsOf(r, sh.K, n)
		ar := make([]float32, sh.M*kr)
		for i := range sh.M {
			copy(ar[i*kr:(i+1)*kr], c.a[i*sh.K+k0:i*sh.K+k0+kr])
		}
		a, err := gpu.Upload(d, ar)
		if err != nil {
			return nil, fmt.Errorf("rank %d: uploading its columns of A: %w", r, err)
		}
		c.dA = append(c.dA, a)
		b, err := gpu.Upload(d, c.b[k0*sh.N:(k0+kr)*sh.N])
		if err != nil {
			return nil, fmt.Errorf("rank %d: uploading its rows of B: %w", r, err)
		}
		c.dB = append(c.dB, b)
		p, err := gpu.Alloc[float32](d, sh.M*sh.N)
		if err != nil {
			return nil, fmt.Errorf("rank %d: allocating P: %w", r, err)
		}
		c.dP = append(c.dP, p)
		pTab[r] = uint64(p.DevicePtr())
		// NaN until computed: a reduction that reads a block of P before its GEMM is done (a missing
		// wait, an event recorded too early) turns its rows of C into NaN in the checked run.
		if err := p.Fill32(nanBits, env.Streams[r]); err != nil {
			return nil, fmt.Errorf("rank %d: poisoning P: %w", r, err)
		}
		o, err := gpu.Alloc[float32](d, RowsOf(r, sh.M, n)*sh.N)
		if err != nil {
			return nil, fmt.Errorf("rank %d: allocating its rows of C: %w", r, err)
		}
		c.dOut = append(c.dOut, o)
		oTab[r] = uint64(o.DevicePtr())
		evs := make([]gpu.Event, n+1)
		for j := range evs {
			if evs[j], err = d.NewEvent(); err != nil {
				return nil, fmt.Errorf("rank %d: an event: %w", r, err)
			}
		}
		c.events = append(c.events, evs)
	}
	for r, d := range env.Devices {
		t, err := gpu.Upload(d, pTab)
		if err != nil {
			return nil, fmt.Errorf("rank %d: uploading the table of partial products: %w", r, err)
		}
		c.dPTab = append(c.dPTab, t)
		if t, err = gpu.Upload(d, oTab); err != nil {
			return nil, fmt.Errorf("rank %d: uploading the table of outputs: %w", r, err)
		}
		c.dOTab = append(c.dOTab, t)
	}
	if err := c.syncAll(); err != nil {
		return nil, err
	}
	ok = true
	return c, nil
}

func (c *rsCase) syncAll() error { return gpu.SynchronizeAll(c.env.Streams, c.reduce) }

// Poison fills every rank's rows of C with NaN and waits for it.
func (c *rsCase) Poison() error {
	if err := gpu.Fill32Each(c.dOut, nanBits, c.env.Streams); err != nil {
		return err
	}
	return c.syncAll()
}

// Run runs the variant's schedule on every rank, then waits on the host for every stream.
func (c *rsCase) Run(v *lab.Variant) error {
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
	case v.Entry == EntryGemmRSFused:
		err = c.runFused(v)
	default:
		return fmt.Errorf("variant %s: the driver does not know how to run entry %s in suite %s", v.Name, v.Entry, SuiteGemmRS)
	}
	if err != nil {
		return err
	}
	return c.syncAll()
}

// launchGemm computes rows [row0, row0+rows) of rank r's P_r = A_r·B_r on stream s.
func (c *rsCase) launchGemm(v *lab.Variant, r, row0, rows int, s gpu.Stream) error {
	k, err := c.env.KernelOn(r, v)
	if err != nil {
		return err
	}
	kr := ColsOf(r, c.sh.K, c.n)
	cfg := gpu.LaunchConfig{Grid: gpu.D2(ceilDiv(c.sh.N, TileN), ceilDiv(rows, TileM)), Block: gpu.D1(GemmThread), Stream: s}
	a := c.dA[r].DevicePtr() + gpu.Ptr(4*row0*kr)
	p := c.dP[r].DevicePtr() + gpu.Ptr(4*row0*c.sh.N)
	return gpu.Launch(k, cfg, a, c.dB[r], p, int32(rows), int32(c.sh.N), int32(kr))
}

// launchReduce sums rank d's rows of every P into d's output, on stream s of rank d.
func (c *rsCase) launchReduce(v *lab.Variant, d int, s gpu.Stream) error {
	k, err := c.env.KernelOnByEntry(d, EntryReduceRows)
	if err != nil {
		return err
	}
	rows := RowsOf(d, c.sh.M, c.n)
	threads := param(v, ParamThreads, 256)
	grid := gpu.GridFor(rows*c.sh.N, threads, c.env.Devices[d].Info().SMs, param(v, ParamBlocksPerSM, 2))
	cfg := gpu.LaunchConfig{Grid: gpu.D1(grid), Block: gpu.D1(threads), Stream: s}
	return gpu.Launch(k, cfg, c.dPTab[d], c.dOut[d], int32(c.sh.N), int32(c.n), int32(Row0Of(d, c.sh.M, c.n)), int32(rows))
}

// runSequential: every rank's whole GEMM, an event after it; each rank's stream then waits for
// every other rank's event (a stream wait across devices, no host) and reduces its rows.
func (c *rsCase) runSequential(v *lab.Variant) error {
	for r := range c.n {
		if err := c.launchGemm(v, r, 0, c.sh.M, c.env.Streams[r]); err != nil {
			return fmt.Errorf("rank %d, GEMM: %w", r, err)
		}
		if err := c.events[r][0].Record(c.env.Streams[r]); err != nil {
			return fmt.Errorf("rank %d: %w", r, err)
		}
	}
	for d := range c.n {
		if err := c.waitPeers(d, c.env.Streams[d], 0, true); err != nil {
			return err
		}
		if err := c.launchReduce(v, d, c.env.Streams[d]); err != nil {
			return fmt.Errorf("rank %d, reduce-scatter: %w", d, err)
		}
	}
	return nil
}

// waitPeers makes stream s of rank d wait for event j of every rank (of every other rank when s
// is the stream that recorded d's own event: the stream is already in order).
func (c *rsCase) waitPeers(d int, s gpu.Stream, j int, sameStream bool) error {
	for r := range c.n {
		if r == d && sameStream {
			continue
		}
		if err := s.WaitEvent(c.events[r][j]); err != nil {
			return fmt.Errorf("rank %d, waiting for rank %d: %w", d, r, err)
		}
	}
	return nil
}

// runChunked: every rank computes its P by row blocks in the order of the destinations 0, 1, …,
// n−1 on its compute stream, recording event d after block d. Every GEMM and event is queued
// first (a stream waits for an event as last recorded when the wait is queued); then rank d's
// reduction stream waits for event d of every rank and reduces. Destination d's reduction runs
// while the ranks compute blocks d+1, …: only the last destination's reduction is left exposed.
func (c *rsCase) runChunked(v *lab.Variant) error {
	if c.reduce == nil {
		for r, d := range c.env.Devices {
			s, err := d.NewStream()
			if err != nil {
				return fmt.Errorf("rank %d: a reduction stream: %w", r, err)
			}
			c.reduce = append(c.reduce, s)
		}
	}
	for d := range c.n {
		for r := range c.n {
			if err := c.launchGemm(v, r, Row0Of(d, c.sh.M, c.n), RowsOf(d, c.sh.M, c.n), c.env.Streams[r]); err != nil {
				return fmt.Errorf("rank %d, GEMM of rank %d's rows: %w", r, d, err)
			}
			if err := c.events[r][d].Record(c.env.Streams[r]); err != nil {
				return fmt.Errorf("rank %d: %w", r, err)
			}
		}
	}
	for d := range c.n {
		if err := c.waitPeers(d, c.reduce[d], d, false); err != nil {
			return err
		}
		if err := c.launchReduce(v, d, c.reduce[d]); err != nil {
			return fmt.Errorf("rank %d, reduction of its rows: %w", d, err)
		}
	}
	return nil
}

// runFused: every rank zeroes its output and records event n; every rank's stream waits for
// every other rank's zeroing, then launches the fused kernel, whose tiles add into the owners.
func (c *rsCase) runFused(v *lab.Variant) error {
	for r := range c.n {
		if err := c.dOut[r].Fill32(0, c.env.Streams[r]); err != nil {
			return fmt.Errorf("rank %d, zeroing its rows of C: %w", r, err)
		}
		if err := c.events[r][c.n].Record(c.env.Streams[r]); err != nil {
			return fmt.Errorf("rank %d: %w", r, err)
		}
	}
	tiles := Tiles(c.sh, c.n)
	for r := range c.n {
		if err := c.waitPeers(r, c.env.Streams[r], c.n, true); err != nil {
			return err
		}
		k, err := c.env.KernelOn(r, v)
		if err != nil {
			return err
		}
		cfg := gpu.LaunchConfig{Grid: gpu.D1(tiles), Block: gpu.D1(GemmThread), Stream: c.env.Streams[r]}
		if err := gpu.Launch(k, cfg, c.dA[r], c.dB[r], c.dOTab[r], int32(r), int32(c.n),
			int32(c.sh.M), int32(c.sh.N), int32(ColsOf(r, c.sh.K, c.n))); err != nil {
			return fmt.Errorf("rank %d: %w", r, err)
		}
	}
	return nil
}

// runLibrary: cuBLAS SGEMM of every rank's P_r, then ncclReduceScatter of the P into the outputs.
// NCCL's reduce-scatter needs equal blocks: M must be a multiple of n (uneven K is fine: each
// rank's SGEMM has its own K_r).
func (c *rsCase) runLibrary(v *lab.Variant) error {
	if v.Library != LibNCCLCublas {
		return fmt.Errorf("variant %s: library %q is not one lab 05 knows (%s)", v.Name, v.Library, LibNCCLCublas)
	}
	if c.sh.M%c.n != 0 {
		return lab.Skip("NCCL's reduce-scatter needs equal blocks: M = %d is not a multiple of %d ranks", c.sh.M, c.n)
	}
	comm, err := c.env.Communicator()
	if err != nil {
		return err
	}
	// Row-major P = A_r·B_r is column-major Pᵀ = B_rᵀ·A_rᵀ: swap the operands and m ↔ n (lab 02).
	for r := range c.n {
		kr := ColsOf(r, c.sh.K, c.n)
		g := gpu.GemmDesc{M: c.sh.N, N: c.sh.M, K: kr, Alpha: 1, Beta: 0,
			A: c.dB[r].DevicePtr(), LDA: c.sh.N, B: c.dA[r].DevicePtr(), LDB: kr,
			C: c.dP[r].DevicePtr(), LDC: c.sh.N, InType: gpu.F32, OutType: gpu.F32}
		blas, err := c.env.BLASOn(r)
		if err != nil {
			return fmt.Errorf("rank %d: %w", r, err)
		}
		if err := blas.Sgemm(c.env.Streams[r], g); err != nil {
			return fmt.Errorf("rank %d: %w", r, err)
		}
	}
	send := make([]gpu.Ptr, c.n)
	recv := make([]gpu.Ptr, c.n)
	for r := range c.n {
		send[r], recv[r] = c.dP[r].DevicePtr(), c.dOut[r].DevicePtr()
	}
	return comm.ReduceScatter(send, recv, c.sh.M/c.n*c.sh.N, gpu.F32, c.env.Streams)
}

// Check compares every rank's rows of C with those of the float64 product A·B (the sum of the
// partial products); the report is the worst rank's. Small problems: every element of every rank;
// large ones: Freivalds' check and sampled elements over the C assembled from the ranks' blocks.
func (c *rsCase) Check(v *lab.Variant) (check.Report, error) {
	p := &matref.Product{M: c.sh.M, N: c.sh.N, K: c.sh.K, Alpha: 1, A: c.a, B: c.b}
	full := float64(c.sh.M)*float64(c.sh.N)*float64(c.sh.K) <= fullCheckLimit
	if full && c.ref == nil {
		c.ref, c.scale = p.Reference()
	}
	outs := make([][]float32, c.n)
	for r, o := range c.dOut {
		out, err := o.Download()
		if err != nil {
			return check.Report{}, fmt.Errorf("rank %d: reading its rows of C back: %w", r, err)
		}
		outs[r] = out
	}
	if !full {
		all := make([]float32, 0, c.sh.M*c.sh.N)
		for _, o := range outs {
			all = append(all, o...)
		}
		seed := c.env.RNG.Uint64()
		rep := matref.Freivalds(p, all, 2, matref.SampleEntries(c.sh.M, c.sh.N, 64*c.n, seed), seed, v.Suite.Tolerance)
		rep.Method = fmt.Sprintf("every rank's rows of C, assembled: %s", rep.Method)
		return rep, nil
	}
	var worst check.Report
	for r, out := range outs {
		lo, hi := Row0Of(r, c.sh.M, c.n)*c.sh.N, (Row0Of(r, c.sh.M, c.n)+RowsOf(r, c.sh.M, c.n))*c.sh.N
		rep := matref.CompareFull(out, c.ref[lo:hi], c.scale[lo:hi], v.Suite.Tolerance)
		rep.Method = fmt.Sprintf("every rank's rows of C: %s", rep.Method)
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

// Work is the FLOPs of the layer (see RSWorkOf).
func (c *rsCase) Work() lab.Work { return RSWorkOf(c.sh) }

// Release frees every rank's buffers, streams and events (the libraries belong to the Env).
func (c *rsCase) Release() error {
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
	for _, s := range c.reduce {
		keep(s.Close())
	}
	c.events, c.reduce = nil, nil
	for _, bs := range [][]*gpu.Buffer[float32]{c.dA, c.dB, c.dP, c.dOut} {
		for _, b := range bs {
			keep(b.Free())
		}
	}
	for _, bs := range [][]*gpu.Buffer[uint64]{c.dPTab, c.dOTab} {
		for _, b := range bs {
			keep(b.Free())
		}
	}
	return first
}
