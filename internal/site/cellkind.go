package site

// cellKind is one kind of cell, registered from its own file (sourcecell.go, resultscell.go,
// plotcell.go, propertiescell.go, ceilingscell.go, figurecell.go, profilecell.go): how to read
// its body, check it, and render it. cells.go parses and renders every cell through it.
type cellKind struct {
	newSpec func() any                                                       // the body's struct, decoded strictly
	check   func(d *notesDoc, c *cell, spec any) error                       // keys it needs, values it allows (optional)
	render  func(b *builder, pc *pageCtx, c *cell, spec any) (string, error) // the cell's HTML
}

var cellKinds = map[string]cellKind{}

// registerCell adds a kind of cell; each cell file calls it from init.
func registerCell(kind string, k cellKind) {
	cellKinds[kind] = k
	CellKinds = append(CellKinds, kind)
}
