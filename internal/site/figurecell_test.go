package site

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// figurePath is where the tests put a figure of the fixture's lab 01 (its cell names figures/tiles.svg).
const figurePath = "labs/01_device_props/figures/tiles.svg"

const figureSVG = `<?xml version="1.0"?>
<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 10 10"><title>Tile figure</title><text><tspan lang="en">Block tile</tspan><tspan lang="zh">线程块分块</tspan></text><text>128</text></svg>`

func TestFigureCell(t *testing.T) {
	root := fixture(t)
	writeFile(t, root, figurePath, figureSVG)
	cell := "```kl-figure\nfile: figures/tiles.svg\ncaption: {en: Tiles, zh: 分块}\n```"
	withText(t, root, cell, cell)
	_, out := built(t, root, true)
	en, zh := read(t, out, "en/labs/01_device_props.html"), read(t, out, "zh/labs/01_device_props.html")
	assert.Contains(t, en, "Block tile")
	assert.NotContains(t, en, "线程块分块", "each page keeps its own language's labels")
	assert.Contains(t, zh, "线程块分块")
	assert.NotContains(t, zh, "Block tile")
	assert.Contains(t, zh, "<text>128</text>", "text for both languages stays")
	assert.Contains(t, zh, "<figcaption>分块</figcaption>")
	assert.Contains(t, zh, "<title>分块</title>", "the drawing's title is the caption in the page's language")
	assert.NotContains(t, zh, "Tile figure")
	assert.NotContains(t, en, "<?xml", "inlined without its XML declaration")

	for body, want := range map[string]string{
		"file: figures/nope.svg":                       "figures/nope.svg does not exist",
		"file: figures/tiles.png":                      "not an SVG",
		"file: ../02_gemm/figures/x.svg":               "inside the lab's folder",
		"file: figures/tiles.svg\ncaption: {en: Only}": "caption needs both languages",
		"caption: {en: a, zh: b}":                      "kl-figure needs file",
	} {
		root := fixture(t)
		writeFile(t, root, figurePath, figureSVG)
		c := "```kl-figure\n" + body + "\n```"
		withText(t, root, c, c)
		_, _, err := build(t, root, false)
		require.Error(t, err, body)
		assert.Contains(t, err.Error(), want)
	}
	// A figure that would run code in the reader's browser is refused.
	root = fixture(t)
	writeFile(t, root, figurePath, `<svg onload="alert(1)"><text lang="en">a</text><text lang="zh">b</text></svg>`)
	withText(t, root, cell, cell)
	_, _, err := build(t, root, false)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "scripts or event handlers")
}
