package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The README's layout section (English and Chinese) matches the tree: every package folder under
// internal/ (and every backend under internal/gpu/) is listed, and every path listed exists.
func TestReadmeLayoutMatchesTheTree(t *testing.T) {
	root := repoRoot(t)
	var want []string
	for _, dir := range []string{"internal", "internal/gpu"} {
		entries, err := os.ReadDir(filepath.Join(root, dir))
		require.NoError(t, err)
		for _, e := range entries {
			if e.IsDir() && e.Name() != "testdata" {
				want = append(want, dir+"/"+e.Name()+"/")
			}
		}
	}
	for _, readme := range []string{"README.md", "README.zh.md"} {
		listed := layoutPaths(t, filepath.Join(root, readme))
		for _, w := range want {
			assert.True(t, listed[w], "%s: the layout section does not list %s", readme, w)
		}
		for p := range listed {
			if strings.ContainsAny(p, "<") || strings.Contains(p, "NN_") {
				continue // a pattern: results/<device>/, labs/NN_name/
			}
			_, err := os.Stat(filepath.Join(root, p))
			assert.NoError(t, err, "%s: the layout section lists %s, which is not in the tree", readme, p)
		}
	}
}

// layoutPaths reads the first code block after "## Layout" (or "## 目录结构"): a path per line,
// each indented level (two spaces) under the path above it; a line indented past the paths is a
// wrapped description.
func layoutPaths(t *testing.T, readme string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(readme)
	require.NoError(t, err)
	text := string(b)
	start := -1
	for _, h := range []string{"\n## Layout\n", "\n## 目录结构\n"} {
		if i := strings.Index(text, h); i >= 0 {
			start = i
		}
	}
	require.GreaterOrEqual(t, start, 0, "%s has no layout section", readme)
	text = text[start:]
	open := strings.Index(text, "```\n")
	require.GreaterOrEqual(t, open, 0)
	text = text[open+4:]
	text = text[:strings.Index(text, "```")]
	listed := map[string]bool{}
	var parents []string // the path at each depth of indentation (two spaces a level)
	for _, l := range strings.Split(text, "\n") {
		fields := strings.Fields(l)
		indent := len(l) - len(strings.TrimLeft(l, " "))
		if len(fields) == 0 || indent >= 12 {
			continue // a blank line, or a description wrapped onto the next line
		}
		depth := min(indent/2, len(parents))
		path := fields[0]
		if depth > 0 {
			path = parents[depth-1] + path
		}
		parents = append(parents[:depth], path)
		listed[path] = true
	}
	return listed
}
