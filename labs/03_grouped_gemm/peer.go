package grouped

import "github.com/kernel-labs/kernellabs/internal/lab"

// PeerProblem describes a problem for the lab's peer scripts (peers/*.py, lab.PeerDriver):
// the groups exactly as GroupsOf decodes them (a MoE problem's token counts come from its own
// seed, so a peer must get them from here), and the data's precision. C = A·B, no scalars.
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
