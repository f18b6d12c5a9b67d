package term

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestWidthFromColumns(t *testing.T) {
	for env, want := range map[string]int{"": DefaultWidth, "80": 80, "junk": DefaultWidth, "5": DefaultWidth, " 132 ": 132} {
		t.Setenv("COLUMNS", env)
		assert.Equal(t, want, Width(), "COLUMNS=%q", env)
	}
}

func TestElide(t *testing.T) {
	assert.Equal(t, "short", Elide("short", 10))
	assert.Equal(t, "needs cu…", Elide("needs cuBLAS", 9))
	assert.Equal(t, 9, DisplayWidth(Elide("needs cuBLAS, which exists", 9)))
	assert.Equal(t, "算子…", Elide("算子实验室", 5), "CJK characters take two columns")
}

func TestWrapKeepsEveryWordWithinWidth(t *testing.T) {
	s := "build kernels/03_dynamic.cu: the CPU emulator needs Boost.Context, which c++ cannot find: " +
		"install it with `apt-get install g++ libboost-context-dev` " + strings.Repeat("x", 50)
	lines := Wrap(s, 40, "    ")
	for _, l := range lines {
		assert.LessOrEqual(t, DisplayWidth(l), 40, "%q", l)
		assert.Equal(t, strings.TrimRight(l, " "), l, "no trailing spaces")
	}
	assert.Equal(t, strings.Fields(s)[:10], strings.Fields(strings.Join(lines, " "))[:10], "nothing is lost")
	assert.Equal(t, strings.ReplaceAll(s, " ", ""), strings.ReplaceAll(strings.Join(lines, ""), " ", ""))
	assert.True(t, strings.HasPrefix(lines[1], "    "), "continuation lines are indented")
	assert.Equal(t, []string{"a   b"}, Wrap("a   b   ", 40, ""), "spacing inside a short line is kept")
	path := "/tmp/kernellabs/results/emulator/02_gemm.new-20261201T174511.json"
	assert.Equal(t, []string{"saved to", "  " + path, "  so"}, Wrap("saved to "+path+" so", 30, "  "), "a path is never cut")
}

func TestTableFitsByEliding(t *testing.T) {
	tab := &Table{Header: []string{"variant", "problem", "status", "note"}, Elide: map[int]bool{1: true, 3: true}}
	tab.Row("tiled_loop", "8 experts, Zipf, 2 empty", "FAILED", "compile: the CPU emulator needs Boost.Context, which c++ cannot find")
	tab.Row("persistent", "3 groups", "ok")
	tab.Line("skipped: cublas_loop, cublas_grouped (needs cuBLAS, which exists on NVIDIA GPUs only)")
	for _, width := range []int{40, 60, 100, 200} {
		var b bytes.Buffer
		tab.Write(&b, width)
		lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
		for _, l := range lines {
			assert.LessOrEqual(t, DisplayWidth(l), width, "width %d: %q", width, l)
			assert.Equal(t, strings.TrimRight(l, " "), l, "width %d: trailing spaces in %q", width, l)
		}
		assert.True(t, strings.HasPrefix(lines[1], "tiled_loop  "), "names are never elided: %q", lines[1])
		assert.Contains(t, b.String(), "FAILED")
		assert.Contains(t, b.String(), "only)", "a note line wraps, it is not cut")
	}
	var wide bytes.Buffer
	tab.Write(&wide, 200)
	assert.NotContains(t, wide.String(), "…", "a table that fits is not elided")
}

func TestTableDropsEmptyColumns(t *testing.T) {
	tab := &Table{Header: []string{"variant", "status", "note"}}
	tab.Row("a", "ok", "")
	var b bytes.Buffer
	tab.Write(&b, 80)
	assert.Equal(t, "variant  status\na        ok\n", b.String())
}

func TestSuggest(t *testing.T) {
	names := []string{"backend", "bytes", "quick", "seed", "variant", "no-save", "no-site"}
	assert.Equal(t, "quick", Suggest("quik", names))
	assert.Equal(t, "variant", Suggest("varaint", names))
	assert.Equal(t, "backend", Suggest("back", names), "an unambiguous part")
	assert.Equal(t, "", Suggest("frob", names))
	assert.Equal(t, "", Suggest("no", names), "ambiguous: no suggestion")
}

func TestWrapWriter(t *testing.T) {
	var b bytes.Buffer
	w := NewWrapWriter(&b, 20)
	_, _ = w.Write([]byte("one two three four five six\npartial"))
	assert.Equal(t, "one two three four\n    five six\n", b.String())
	assert.NoError(t, w.Flush())
	assert.Equal(t, "one two three four\n    five six\npartial\n", b.String())
}
