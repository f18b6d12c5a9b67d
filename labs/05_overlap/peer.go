package overlap

import (
	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/ranks"
)

// PeerRankProblem describes a problem for the lab's PyTorch peer (peers/torch_nccl.py,
// lab.PeerRanksDriver): the layer, the sizes and this rank's blocks — of A's rows and C's rows
// (RowsOf, Row0Of), and in gemm_rs of A's columns and B's rows (ColsOf, Col0Of) — with the work
// of the lab's own variants, so that the rates compare exactly. NCCL's collectives in torch
// (all_gather_into_tensor, reduce_scatter_tensor) take equal blocks, so M must be a multiple of
// the ranks, as for the nccl_cublas baseline.
func (Lab) PeerRankProblem(s *lab.Suite, p lab.Problem, w ranks.World) (map[string]any, lab.Work, error) {
	sh, err := ShapeOf(p)
	if err != nil {
		return nil, lab.Work{}, err
	}
	op, work := "all-gather", WorkOf(sh, w.Size)
	if s.Name == SuiteGemmRS {
		op, work = "reduce-scatter", RSWorkOf(sh)
		if err := splitK(sh, w.Size); err != nil {
			return nil, lab.Work{}, err
		}
	}
	if err := equalBlocks(op, sh, w.Size); err != nil {
		return nil, lab.Work{}, err
	}
	return map[string]any{"layer": s.Name, "m": sh.M, "n": sh.N, "k": sh.K,
		"row0": Row0Of(w.Rank, sh.M, w.Size), "rows": RowsOf(w.Rank, sh.M, w.Size),
		"col0": Col0Of(w.Rank, sh.K, w.Size), "cols": ColsOf(w.Rank, sh.K, w.Size)}, work, nil
}
