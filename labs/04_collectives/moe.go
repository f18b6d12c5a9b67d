package collectives

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/kernel-labs/kernellabs/internal/check"
	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/matref"
)

// MoE dispatch and combine (suites moe_dispatch and moe_combine, kernels 15–18), the distributed
// inference challenge's all2all: every rank has 1 … max_tokens tokens, each routed to topk distinct
// experts, of bf16 hidden states of `hidden` elements and fp32 routing weights; expert e lives on
// rank e / ⌈experts / n⌉. Dispatch: every rank receives the rows routed to its experts, packed by
// local expert, then source rank, then token, with each row's (source rank, token, slot). Combine:
// every rank sends its experts' outputs (here the row times a per-expert scale) back to the tokens'
// home ranks, which sum the k of them with the routing weights (fp32, rounded to bf16 once).
const (
	moeMaxExperts = 1024 // kernels 15 and 16's shared tables (MOE_MAX_EXPERTS)
	moeMetaWords  = 3    // per received row: source rank, source token, slot
)

// moeRow is one received row: token `token` of rank src, its slot `slot` of k.
type moeRow struct{ src, token, slot int }

// moeRouting is a problem's data, drawn the same on every rank (the same seeds), per rank.
type moeRouting struct {
	n, experts, k, hidden int
	tokens                []int
	topk                  [][]int32   // tokens·k experts
	weights               [][]float32 // tokens·k
	x                     [][]float32 // tokens·hidden bf16 values
	scale                 []float32   // per expert: the expert's output is bf16(scale·row)
}

func drawRouting(p lab.Problem, n int, rng *rand.Rand) (*moeRouting, error) {
	m := &moeRouting{n: n, experts: int(p.Int("experts", 0)), k: int(p.Int("topk", 0)), hidden: int(p.Int("hidden", 0))}
	maxTok := int(p.Int("max_tokens", 0))
	switch {
	case m.experts < 1 || m.experts > moeMaxExperts:
		return nil, fmt.Errorf("problem %q: experts = %d must be 1 to %d", p.Name, m.experts, moeMaxExperts)
	case m.k < 1 || m.k > m.experts:
		return nil, fmt.Errorf("problem %q: topk = %d must be 1 to experts (%d): a token's experts are distinct", p.Name, m.k, m.experts)
	case m.hidden < 1 || maxTok < 1:
		return nil, fmt.Errorf("problem %q: hidden and max_tokens must be at least 1 (got %d and %d)", p.Name, m.hidden, maxTok)
	case int64(n)*int64(maxTok)*int64(m.k)*int64(m.hidden) > math.MaxInt32:
		return nil, fmt.Errorf("problem %q: %d ranks of %d tokens × %d slots × %d elements is beyond the kernels' 32-bit row counts", p.Name, n, maxTok, m.k, m.hidden)
	}
	for range m.experts {
		m.scale = append(m.scale, float32(0.5+rng.Float64()))
	}
	for range n {
		t := 1 + rng.IntN(maxTok)
		m.tokens = append(m.tokens, t)
		idx, w := make([]int32, t*m.k), make([]float32, t*m.k)
		for i := range t {
			var sum float64
			for j, e := range rng.Perm(m.experts)[:m.k] { // k distinct experts
				idx[i*m.k+j], w[i*m.k+j] = int32(e), float32(0.05+rng.Float64())
				sum += float64(w[i*m.k+j])
			}
			for j := range m.k { // weights that sum to 1, as a softmax over the top k gives
				w[i*m.k+j] = float32(float64(w[i*m.k+j]) / sum)
			}
		}
		x := make([]float32, t*m.hidden)
		fillInputs[uint16](x, rng.Uint64()) // bf16 values
		m.topk, m.weights, m.x = append(m.topk, idx), append(m.weights, w), append(m.x, x)
	}
	return m, nil
}

// rowsOf lists what rank d receives, in the receive buffer's order: by expert, then source, then token.
func (m *moeRouting) rowsOf(d int) (rows []moeRow) {
	lo, hi := m.expertsOn(d)
	for src := range m.n {
		for i, e := range m.topk[src] {
			if lo <= int(e) && int(e) < hi {
				rows = append(rows, moeRow{src, i / m.k, i % m.k})
			}
		}
	}
	slices.SortStableFunc(rows, func(a, b moeRow) int { return m.expertOf(a) - m.expertOf(b) })
	return rows
}

func (m *moeRouting) perRank() int { return lab.CeilDiv(m.experts, m.n) }

// expertsOn are rank r's experts, [lo, hi): empty on the last ranks when n does not divide experts.
func (m *moeRouting) expertsOn(r int) (lo, hi int) {
	return min(m.experts, r*m.perRank()), min(m.experts, (r+1)*m.perRank())
}

// sendList is kernel 15's list of rank src: its (token, slot) pairs as t·k + j, by expert, then token.
func (m *moeRouting) sendList(src int) []int32 {
	l := make([]int32, len(m.topk[src]))
	for i := range l {
		l[i] = int32(i)
	}
	slices.SortStableFunc(l, func(a, b int32) int { return int(m.topk[src][a] - m.topk[src][b]) })
	return l
}

// rowBlocks are the rows each rank sends to each: [src][dst], src's pairs routed to dst's experts.
func (m *moeRouting) rowBlocks() lab.Blocks {
	b := lab.EqualBlocks(m.n, 0)
	for src, idx := range m.topk {
		for _, e := range idx {
			b[src][int(e)/m.perRank()]++
		}
	}
	return b
}

// moeMeta is the metadata of rows, as kernels 16 and 20 write it.
func moeMeta(rows []moeRow) []int32 {
	meta := make([]int32, 0, len(rows)*moeMetaWords)
	for _, r := range rows {
		meta = append(meta, int32(r.src), int32(r.token), int32(r.slot))
	}
	return meta
}

// row is row r's hidden state, as its source holds it (bf16 values).
func (m *moeRouting) row(r moeRow) []float32 { return m.x[r.src][r.token*m.hidden:][:m.hidden] }

func (m *moeRouting) expertOf(r moeRow) int { return int(m.topk[r.src][r.token*m.k+r.slot]) }

// expertOut is the expert's output for row r: bf16(scale_e · x), as the combine's input.
func (m *moeRouting) expertOut(r moeRow) []float32 {
	y := make([]float32, m.hidden)
	for c, v := range m.row(r) {
		y[c] = m.scale[m.expertOf(r)] * v
	}
	matref.RoundBF16(y)
	return y
}

type moeCase struct {
	lab.RankCase
	combine  bool
	m        *moeRouting
	rows     []moeRow
	blocks   lab.Blocks          // the rows each rank sends to each
	x        *lab.Shared[uint16] // dispatch: this rank's tokens, which peers pull
	topk     *gpu.Buffer[int32]
	counts   *lab.Shared[int32] // dispatch: counts and list starts per expert (kernel 15)
	sendlist *lab.Shared[int32]
	recv     *gpu.Buffer[uint16] // dispatch's outputs; combine's inputs (the expert outputs)
	meta     *gpu.Buffer[int32]
	weights  *gpu.Buffer[float32]
	stage    *lab.Shared[uint16] // combine: k rows per token, which peers push into
	out      *gpu.Buffer[uint16]
	nccl     *moeNCCL  // the NCCL baseline's buffers, made on its first run
	ref      []float64 // combine: this rank's tokens
	sumTol   float64   // combine: what the fp32 sum of k terms adds to the tolerance (see Check)
}

func prepareMoE(env *lab.Env, s *lab.Suite, p lab.Problem) (lab.Case, error) {
	c := &moeCase{RankCase: lab.NewRankCase(env), combine: s.Name == "moe_combine"}
	m, err := drawRouting(p, c.N, env.RNG)
	if err != nil {
		return nil, err
	}
	c.m, c.rows, c.blocks = m, m.rowsOf(c.Rank), m.rowBlocks()
	T, H, k, R := m.tokens[c.Rank], m.hidden, m.k, len(c.rows)
	a := lab.NewPrep(env)
	a.Need(2 * int64(R+T*k+T) * int64(H))
	if !c.combine {
		c.x = lab.PrepUploadShared(a, "tokens", matref.RoundBF16(m.x[c.Rank])) // their bits: rounding leaves them
		c.topk = lab.PrepUpload(a, "routing (top-k experts)", m.topk[c.Rank])
		c.counts = lab.PrepSharedScratch[int32](a, "counts", 2*m.experts, lab.PoisonBytes(0xFF))
		c.sendlist = lab.PrepSharedScratch[int32](a, "send list", T*k, lab.PoisonBytes(0xFF))
		c.recv = lab.PrepOutput[uint16](a, "received rows", max(1, R)*H, lab.PoisonNaN)
		c.meta = lab.PrepOutput[int32](a, "metadata", max(1, R)*moeMetaWords, lab.PoisonBytes(0xFF))
	} else {
		// Combine: the experts have run on the dispatch's rows (the host's own layout, which the
		// dispatch suite checks), and the reference is the weighted sum of their outputs.
		ys := make([]float32, 0, max(1, R)*H)
		for _, r := range c.rows {
			ys = append(ys, m.expertOut(r)...)
		}
		c.recv = lab.PrepUpload(a, "expert outputs", lab.OrOne(matref.RoundBF16(ys), H))
		c.meta = lab.PrepUpload(a, "metadata", lab.OrOne(moeMeta(c.rows), moeMetaWords))
		c.weights = lab.PrepUpload(a, "routing weights", m.weights[c.Rank])
		c.stage = lab.PrepSharedScratch[uint16](a, "staging (k rows per token)", T*k*H, lab.PoisonNaN)
		c.out = lab.PrepOutput[uint16](a, "combined tokens", T*H, lab.PoisonNaN)
		c.ref = make([]float64, T*H)
		absMax, refMax, outs := 0.0, 0.0, make([][]float32, k)
		for t := range T {
			for j := range outs {
				outs[j] = m.expertOut(moeRow{c.Rank, t, j})
			}
			for i := range H {
				var sum, abs float64
				for j, y := range outs {
					g := float64(m.weights[c.Rank][t*k+j]) * float64(y[i])
					sum, abs = sum+g, abs+math.Abs(g)
				}
				c.ref[t*H+i], absMax, refMax = sum, max(absMax, abs), max(refMax, math.Abs(sum))
			}
		}
		// The fp32 sum of k terms errs by up to k·2^-23 of Σ_j |w_j·y_j|, relative to the largest token.
		c.sumTol = float64(k) * 0x1p-23 * absMax / max(refMax, math.SmallestNonzeroFloat64)
	}
	a.Signals() // the device barrier's, zeroed before any run
	return lab.Done[lab.Case](a, c)
}

// Run: dispatch is kernel 15 (counts), a device barrier, kernel 16 (the pull); combine is kernel
// 17 (the push), a device barrier, kernel 18 (the weighted sum); a device barrier before and after.
func (c *moeCase) Run(v *lab.Variant) error {
	if v.Library != "" {
		return c.runNCCL(v)
	}
	k, err := c.Kernel(v)  // kernel 16 (dispatch) or 17 (combine)
	h, err2 := c.helpers() // kernel 15 (before 16) or 18 (after 17)
	if err = cmp.Or(err, err2); err != nil {
		return err
	}
	m, R, bar := c.m, len(c.rows), c.Barrier
	if !c.combine {
		return lab.InOrder(bar, c.count(h[0], v), bar, c.Step(k, v, R*m.hidden, c.x.Table, c.counts.Table,
			c.sendlist.Table, c.recv, c.meta, int32(c.Rank), int32(m.n), int32(m.experts), int32(m.k), int32(m.hidden)), bar)
	}
	return lab.InOrder(bar, c.Step(k, v, R*m.hidden, c.recv, c.meta, int32(R), c.stage.Table, int32(m.k), int32(m.hidden)),
		bar, c.reduce(h[0], v), bar)
}

// helpers are the helper kernels of entries, then kernel 15 (dispatch) or 18 (combine), which both paths need.
func (c *moeCase) helpers(entries ...string) ([]gpu.Kernel, error) {
	var ks []gpu.Kernel
	for _, e := range append(entries, map[bool]string{false: "moe_count", true: "moe_combine_reduce"}[c.combine]) {
		k, err := c.Env.KernelByEntry(e)
		if err != nil {
			return nil, fmt.Errorf("%w (list the file that defines %s under helpers: in lab.yaml)", err, e)
		}
		ks = append(ks, k)
	}
	return ks, nil
}

// count is kernel 15 on one block: this rank's counts and list starts per expert, its send list.
func (c *moeCase) count(k gpu.Kernel, v *lab.Variant) func() error {
	return c.Step(k, v, 1, c.topk, int32(c.m.tokens[c.Rank]*c.m.k), int32(c.m.experts), c.counts.Mine, c.sendlist.Mine)
}

// reduce is kernel 18: every token's weighted sum of its k staged rows.
func (c *moeCase) reduce(k gpu.Kernel, v *lab.Variant) func() error {
	T, H := c.m.tokens[c.Rank], c.m.hidden
	return c.Step(k, v, T*H, c.stage.Mine, c.weights, c.out, int32(T), int32(c.m.k), int32(H))
}

// Check: dispatch's rows and metadata exactly (a copy); combine's tokens against the float64
// weighted sum within one bf16 rounding plus the fp32 accumulation of k terms (lab.yaml).
func (c *moeCase) Check(v *lab.Variant, out *lab.Outputs) (check.Report, error) {
	if c.combine {
		got, err := out.BF16(c.out)
		if err != nil {
			return check.Report{}, err
		}
		rep := check.Against(got, c.ref, out.Tolerance()+c.sumTol)
		rep.Method = fmt.Sprintf("every rank's tokens against a float64 sum of their %d expert outputs times the routing weights", c.m.k)
		return rep, nil
	}
	rows, err := out.BF16(c.recv)
	meta, err2 := lab.Raw(out, c.meta)
	if err = cmp.Or(err, err2); err != nil {
		return check.Report{}, err
	}
	// The rows, then their metadata, as one vector of exact values.
	n := len(c.rows) * c.m.hidden
	got, ref := rows[:n:n], make([]float64, 0, n+len(c.rows)*moeMetaWords)
	for _, r := range c.rows {
		ref = appendWide(ref, c.m.row(r))
	}
	for i, w := range moeMeta(c.rows) {
		got, ref = append(got, float32(meta[i])), append(ref, float64(w))
	}
	rep := check.Against(got, ref, out.Tolerance())
	rep.Method = "every rank's received rows, then their (source rank, token, slot), exactly against the host's routing"
	return rep, nil
}

// Work: the bytes of hidden state that change hands, all ranks together; the metric is the time.
func (c *moeCase) Work() lab.Work {
	return lab.Work{Bytes: 2 * float64(c.blocks.Total()) * float64(c.m.hidden)}
}

// The NCCL baseline (nccl_alltoallv): NCCL's all-to-allv moves contiguous blocks per peer, so the
// rows are permuted into blocks before it and back after it (kernels 19 and 20), as a MoE layer on
// NCCL does. The calls' per-peer sizes come from the host's routing (a layer would first exchange
// the counts and copy them to the host, a synchronisation not paid here); the device still exchanges
// the counts and the (token, slot) pairs, from which kernel 20 lays out the rows and writes the
// metadata. int32 words travel as fp32 ones: NCCL only copies them.
type moeNCCL struct {
	sendRows, recvRows *gpu.Buffer[uint16]
	pairs, counts      *gpu.Buffer[int32] // dispatch: received pairs and counts; combine: this rank's list and the layout's counts
}

func (c *moeCase) runNCCL(v *lab.Variant) error {
	comm, err := c.Env.RankCommunicator()
	ks, err2 := c.helpers("moe_rows_by_pair", "moe_permute") // kernels 19, 20, and 15 or 18
	if err = cmp.Or(err, err2); err != nil {
		return err
	}
	rows, perm, m, st := ks[0], ks[1], c.m, c.Env.Stream
	T, H, R, P := m.tokens[c.Rank], m.hidden, len(c.rows), m.perRank()
	if c.nccl == nil {
		// T·k rows out (dispatch) or back (combine), R in NCCL's order; for combine the dispatch's leavings.
		a, b := lab.NewPrep(c.Env), &moeNCCL{}
		b.sendRows = lab.PrepAlloc[uint16](a, "NCCL send rows", max(1, T*m.k)*H)
		b.recvRows = lab.PrepAlloc[uint16](a, "NCCL received rows", max(1, R)*H)
		if !c.combine {
			b.pairs = lab.PrepAlloc[int32](a, "NCCL received pairs", max(1, R))
			b.counts = lab.PrepAlloc[int32](a, "NCCL received counts", m.n*P)
		} else {
			counts := make([]int32, m.n*P) // by source rank, then local expert: this rank's rows
			for _, r := range c.rows {
				counts[r.src*P+m.expertOf(r)-c.Rank*P]++
			}
			b.counts = lab.PrepUpload(a, "layout counts", counts)
			b.pairs = lab.PrepUpload(a, "send list", append(m.sendList(c.Rank), 0))
		}
		if c.nccl, err = lab.Done(a, b); err != nil {
			return err
		}
	}
	b := c.nccl
	rank, n, E, k, h := int32(c.Rank), int32(m.n), int32(m.experts), int32(m.k), int32(H)
	// NCCL's all-to-allv of this rank's blocks (of unit elements), or back to their senders.
	exchange := func(unit int, back bool, send, recv gpu.Ptr, t gpu.DataType) func() error {
		return func() error { return c.blocks.AllToAllV(comm, c.Rank, unit, back, send, recv, t, st) }
	}
	if !c.combine {
		// The counts of every rank's experts to that rank: P words at j·P, of which rank j owns hiJ−loJ.
		var sc, so, rc, ro []int
		lo, hi := m.expertsOn(c.Rank)
		for j := range m.n {
			loJ, hiJ := m.expertsOn(j)
			sc, so = append(sc, hiJ-loJ), append(so, j*P)
			rc, ro = append(rc, hi-lo), append(ro, j*P)
		}
		return lab.InOrder(c.count(ks[2], v),
			func() error {
				return comm.AllToAllV(c.counts.Mine.DevicePtr(), sc, so, b.counts.DevicePtr(), rc, ro, gpu.F32, st)
			},
			c.Step(rows, v, T*m.k*H, c.x.Mine, b.sendRows, c.sendlist.Mine, int32(T*m.k), k, h, int32(0)),
			exchange(1, false, c.sendlist.Mine.DevicePtr(), b.pairs.DevicePtr(), gpu.F32),
			exchange(H, false, b.sendRows.DevicePtr(), b.recvRows.DevicePtr(), gpu.BF16),
			c.Step(perm, v, R*H, b.recvRows, c.recv, b.counts, b.pairs, c.meta, rank, n, E, k, h, int32(1)))
	}
	// Combine: the expert outputs into NCCL's blocks, back to their home ranks, into the slots.
	return lab.InOrder(c.Step(perm, v, R*H, c.recv, b.recvRows, b.counts, b.pairs, gpu.Ptr(0), rank, n, E, k, h, int32(0)),
		exchange(H, true, b.recvRows.DevicePtr(), b.sendRows.DevicePtr(), gpu.BF16),
		c.Step(rows, v, T*m.k*H, b.sendRows, c.stage.Mine, b.pairs, int32(T*m.k), k, h, int32(1)),
		c.reduce(ks[2], v))
}
