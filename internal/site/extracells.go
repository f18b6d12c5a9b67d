package site

// extraCell is a kind of cell that lives in its own file (kl-profile, kl-figure): how to read its
// body, check it, and render it. cells.go dispatches to these after its own kinds.
type extraCell struct {
	newSpec func() any                                                       // the body's struct, decoded strictly
	check   func(d *notesDoc, c *cell, spec any) error                       // keys it needs, values it allows
	render  func(b *builder, pc *pageCtx, c *cell, spec any) (string, error) // the cell's HTML
}

var extraCells = map[string]extraCell{}

// registerCell adds a kind of cell; each cell file calls it from init.
func registerCell(kind string, k extraCell) {
	extraCells[kind] = k
	CellKinds = append(CellKinds, kind)
}
