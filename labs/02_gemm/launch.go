package gemm

import (
	"cmp"
	"fmt"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/lab"
)

// Launch parameters a variant may set in lab.yaml (params:), with their defaults.
const (
	ParamBM, ParamBN = "bm", "bn"     // the tile of C one block computes (32, 32)
	ParamThreads     = "threads"      // a 1-D block of this many threads; else bx × by
	ParamBX, ParamBY = "bx", "by"     // the block's x and y when threads is not set (32 × 1)
	ParamSmem        = "smem"         // dynamic shared memory in bytes (0); above 48 KiB the kernel is opted in
	ParamTMA         = "tma"          // 1: the kernel takes TMA tensor maps of A and B (tmA, tmB) instead of pointers
	ParamBK          = "bk"           // the K step of the tensor maps' boxes (64)
	ParamCBF16       = "cbf16"        // 1: the kernel writes a bf16 C (bf16 suites only)
	ParamTMAC        = "tmac"         // 1: and takes a tensor map of it (tmC, after tmA and tmB), for TMA stores
	ParamCBoxM       = "cbox_m"       // the rows of the C map's boxes (64)
	ParamCBoxN       = "cbox_n"       // their columns (64)
	ParamPersistent  = "persistent"   // 1: a 1-D grid of whole clusters, no more than the SMs hold; the kernel loops over tiles
	ParamCTAsPerSM   = "ctas_per_sm"  // blocks per SM of a persistent grid (1)
	ParamCluster     = "cluster"      // blocks per cluster along x (1), as the kernel's __cluster_dims__
	ParamMaxBlocks   = "max_blocks"   // the most blocks of a persistent grid (0: SMs × ctas_per_sm)
	ParamSplitK      = "split_k"      // blocks that share a tile of C, each summing a slice of K (1), consecutive in x
	ParamMaxGFLOP    = "max_gflop"    // skip problems above this many GFLOP, too slow to time (0: no limit)
	ParamAColMajor   = "a_col_major"  // 1: A stored column-major (Layout)
	ParamBTransposed = "b_transposed" // 1: B stored as Bᵀ, N×K, as PyTorch stores a linear layer's weight
	ParamBiasReLU    = "bias_relu"    // 1: the bias + ReLU epilogue (Layout)
)

// launchShape is how a kernel variant is launched on one problem.
type launchShape struct {
	Grid, Block gpu.Dim3
	Shared      int
	BM, BN, BK  int
	TMA, TMAC   bool // tensor maps of A and B; and of C
	CBF16       bool // C is bf16
	Persistent  bool
	CBox        [2]int // the C map's box: rows (cbox_m), columns (cbox_n)
	Cluster     int    // blocks per cluster (the grid's x is a multiple of it)
}

// shapeFor computes the launch of kernel variant v (params from lab.yaml) on an M×N×K problem,
// or refuses it. sms is the device's multiprocessor count, maxThreads its block-size limit.
func shapeFor(v *lab.Variant, m, n, k, sms, maxThreads int) (launchShape, error) {
	name, get := v.Name, v.Int
	var ls launchShape
	var splitK int
	ls.BM, ls.BN, ls.BK = int(get(ParamBM, 32)), int(get(ParamBN, 32)), int(get(ParamBK, 64))
	if ls.BM < 1 || ls.BN < 1 || ls.BK < 1 {
		return ls, fmt.Errorf("variant %s: tile bm=%d bn=%d bk=%d must be positive (params in lab.yaml)", name, ls.BM, ls.BN, ls.BK)
	}
	ls.Block = gpu.D2(int(get(ParamBX, 32)), int(get(ParamBY, 1)))
	if t := get(ParamThreads, 0); t > 0 {
		ls.Block = gpu.D1(int(t))
	}
	maxThreads = cmp.Or(max(maxThreads, 0), 1024)
	if c := ls.Block.Count(); c < 1 || c > int64(maxThreads) {
		return ls, fmt.Errorf("variant %s: block %v has %d threads, the device allows 1..%d", name, ls.Block, c, maxThreads)
	}
	if ls.Shared = int(get(ParamSmem, 0)); ls.Shared < 0 {
		return ls, fmt.Errorf("variant %s: negative smem %d", name, ls.Shared)
	}
	if limit, gf := get(ParamMaxGFLOP, 0), 2*float64(m)*float64(n)*float64(k)/1e9; limit > 0 && gf > float64(limit) {
		return ls, lab.Skip("too slow for this size: %s would run %.0f GFLOP per call, above its limit of %d (params.max_gflop in lab.yaml)",
			name, gf, limit)
	}
	if ls.TMA = get(ParamTMA, 0) != 0; ls.TMA && (k%8 != 0 || n%8 != 0) {
		return ls, lab.Skip("%s loads tiles with TMA, whose row strides must be multiples of 16 bytes: K and N must be multiples of 8 (this problem has K=%d, N=%d)",
			name, k, n)
	}
	ls.CBF16, ls.TMAC = get(ParamCBF16, 0) != 0, get(ParamTMAC, 0) != 0
	ls.CBox = [2]int{int(get(ParamCBoxM, 64)), int(get(ParamCBoxN, 64))}
	if ls.TMAC {
		switch {
		case !ls.TMA || !ls.CBF16:
			return ls, fmt.Errorf("variant %s: tmac (a tensor map of C) needs tma: 1 and cbf16: 1 (params in lab.yaml)", name)
		case ls.CBox[0] < 1 || ls.CBox[0] > 256 || ls.CBox[1] < 1 || ls.CBox[1]*2 > 128:
			return ls, fmt.Errorf("variant %s: C box %d×%d: rows must be 1..256 and a row at most 128 bytes (64 bf16, the swizzle span)",
				name, ls.CBox[0], ls.CBox[1])
		}
	}
	ls.Cluster, splitK = int(get(ParamCluster, 1)), int(get(ParamSplitK, 1))
	if ls.Cluster < 1 || ls.Cluster > 16 || splitK < 1 {
		return ls, fmt.Errorf("variant %s: cluster=%d must be 1..16 and split_k=%d positive (params in lab.yaml)", name, ls.Cluster, splitK)
	}
	tilesM, tilesN := lab.CeilDiv(m, ls.BM), lab.CeilDiv(n, ls.BN)
	if get(ParamPersistent, 0) != 0 {
		if splitK != 1 {
			return ls, fmt.Errorf("variant %s: split_k and persistent do not go together (params in lab.yaml)", name)
		}
		// Whole clusters: as many as the tiles need (the last may hold a block with no tile), as
		// many as the SMs hold. A device may hold fewer clusters than SMs / cluster (a GPC with an
		// odd number of free SMs leaves one idle), hence max_blocks: blocks beyond what it holds
		// would wait for a second round.
		ls.Persistent = true
		slots := max(sms, 1) * max(int(get(ParamCTAsPerSM, 1)), 1)
		if mb := int(get(ParamMaxBlocks, 0)); mb > 0 {
			slots = min(slots, mb)
		}
		ls.Grid = gpu.D1(min(lab.CeilDiv(tilesM*tilesN, ls.Cluster), max(slots/ls.Cluster, 1)) * ls.Cluster)
		return ls, nil
	}
	gx := lab.CeilDiv(tilesN*splitK, ls.Cluster) * ls.Cluster
	if gx > 1<<31-1 || tilesM > 65535 {
		return ls, fmt.Errorf("variant %s: grid (%d, %d) is beyond the device's limits (y ≤ 65535)", name, gx, tilesM)
	}
	ls.Grid = gpu.D2(gx, tilesM)
	return ls, nil
}
