package grouped

import (
	"fmt"

	"github.com/kernel-labs/kernellabs/internal/lab"
)

// Launch parameters a kernel variant sets in lab.yaml (params:). What the kernel takes follows
// from them:
//
//	loop         1: the host loop — one launch per non-empty group of a one-GEMM kernel
//	             (A, B, C, M, N, K, lda, ldb, ldc, tl, tile_base, group), grid (ceil(N/bn), ceil(M/bm))
//	persistent   1: one launch of SMs × ctas_per_sm blocks over all groups; the grouped form
//	             (groups, G, tl), or with dynamic: 1 (groups, G, counters, tl)
//	moe          1 (with persistent): the MoE form (X, W, Y, offs, E, N, K, tl)
//	gather       1 (with moe, fp32): the MoE form with the dispatch fused — X in token order and
//	             the routing's row list, rows[j] the token of routed row j (Xtok, rows, W, Y, offs,
//	             E, N, K, tl)
//	tma          1 (with moe): the wgmma kernel (offs, E, N, K, Y, tensor map of X, of W, tl);
//	             needs N and K multiples of 8
//	decode       1 (with moe): the decode kernel (X, W, Y, offs, E, N, K, ws, counters, max_split):
//	             ws holds max_split·T·N fp32 partial sums, counters one int per item (T·ceil(N/256))
//	max_split    decode: the most units an item's K is split into (default 16)
//	align        the kernel needs N and K multiples of align (kernel 08 copies 16-byte chunks of
//	             bf16 rows: align 8); the driver skips other problems (default 1)
//	lpt          1: the groups in the metadata are ordered longest tile first (LongestFirst)
//	bm, bn       the kernel's tile (128 × 128), for the grid of the loop and the timeline's size
//	threads      block size (1-D)
//	smem         dynamic shared memory in bytes (the driver opts in above 48 KiB)
//	ctas_per_sm  the most blocks per SM of a persistent grid (default 2); the driver lowers it to
//	             what fits on the SM (registers, shared memory): the backend's occupancy calculator
//	timeline     1: the kernel is built with -DKL_TIMELINE; the driver keeps its tile records
const (
	ParamLoop       = "loop"
	ParamPersistent = "persistent"
	ParamMoE        = "moe"
	ParamGather     = "gather"
	ParamTMA        = "tma"
	ParamDecode     = "decode"
	ParamMaxSplit   = "max_split"
	ParamAlign      = "align"
	ParamDynamic    = "dynamic"
	ParamLPT        = "lpt"
	ParamBM         = "bm"
	ParamBN         = "bn"
	ParamThreads    = "threads"
	ParamSmem       = "smem"
	ParamCTAsPerSM  = "ctas_per_sm"
	ParamTimeline   = "timeline"
)

const defaultMaxSplit = 16

// launchShape is how a kernel variant is launched.
type launchShape struct {
	Loop, Persistent, MoE, Gather, TMA, Decode, Dynamic, LPT, Timeline bool
	BM, BN, Threads, Smem, CTAsPerSM, MaxSplit, Align                  int
}

// shapeOf reads a kernel variant's launch parameters.
func shapeOf(v *lab.Variant) (launchShape, error) {
	ls := launchShape{BM: int(v.Int(ParamBM, 128)), BN: int(v.Int(ParamBN, 128)), Threads: int(v.Int(ParamThreads, 128)),
		Smem: int(v.Int(ParamSmem, 0)), CTAsPerSM: int(v.Int(ParamCTAsPerSM, 2)), MaxSplit: int(v.Int(ParamMaxSplit, defaultMaxSplit)),
		Align: int(v.Int(ParamAlign, 1))}
	for p, flag := range map[string]*bool{ParamLoop: &ls.Loop, ParamPersistent: &ls.Persistent, ParamMoE: &ls.MoE,
		ParamGather: &ls.Gather, ParamTMA: &ls.TMA, ParamDecode: &ls.Decode, ParamDynamic: &ls.Dynamic, ParamLPT: &ls.LPT,
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
	case ls.Decode && (!ls.MoE || ls.TMA || ls.Gather):
		return ls, fmt.Errorf("variant %s: decode: 1 is the MoE-form decode kernel (add moe: 1; not with tma or gather)", v.Name)
	case ls.Dynamic && (ls.MoE || ls.Loop):
		return ls, fmt.Errorf("variant %s: dynamic: 1 is a grouped-form persistent kernel", v.Name)
	case ls.BM < 1 || ls.BN < 1 || ls.Threads < 32 || ls.Threads > 1024 || ls.Smem < 0 || ls.CTAsPerSM < 1 || ls.MaxSplit < 1 || ls.Align < 1:
		return ls, fmt.Errorf("variant %s: bad launch parameters %v", v.Name, v.Params)
	}
	return ls, nil
}
