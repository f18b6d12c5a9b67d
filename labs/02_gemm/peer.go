package gemm

import "github.com/kernel-labs/kernellabs/internal/lab"

// PeerProblem describes a problem for the lab's peer scripts (peers/*.py, lab.PeerDriver):
// the sizes, the same alpha and beta as the kernels get (beta 0 for beta0 problems), and the
// precision of A and B; the work is the lab's own, so the peers' rates compare exactly. The peers
// write C in the precision of A and B (torch's bf16 matmul returns bf16).
func (Lab) PeerProblem(s *lab.Suite, p lab.Problem) (map[string]any, lab.Work, error) {
	sh, err := ShapeOf(p)
	if err != nil {
		return nil, lab.Work{}, err
	}
	prec := lab.PrecisionOf(s)
	beta := Beta
	if sh.Beta0 {
		beta = 0
	}
	return map[string]any{"m": sh.M, "n": sh.N, "k": sh.K, "alpha": Alpha, "beta": beta, "inputs": prec.String()},
		WorkOf(prec, sh, prec.Bytes()), nil
}
