package grouped

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/results"
	"github.com/kernel-labs/kernellabs/internal/site"
)

// cell is a notebook cell of the notes: a fenced block whose info string starts with "kl-".
type cell struct {
	kind string
	body map[string]string
}

// outline returns the headings (level and explicit id) outside code blocks, and the cells.
func outline(t *testing.T, path string) (heads []string, cells []cell) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var cur *cell
	inFence := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "```") {
			if !inFence {
				inFence = true
				if info := strings.TrimSpace(strings.TrimPrefix(line, "```")); strings.HasPrefix(info, "kl-") {
					cur = &cell{kind: info, body: map[string]string{}}
				}
			} else {
				inFence = false
				if cur != nil {
					cells = append(cells, *cur)
					cur = nil
				}
			}
			continue
		}
		if inFence {
			if cur != nil && strings.TrimSpace(line) != "" {
				k, v, ok := strings.Cut(line, ":")
				require.True(t, ok, "%s: cell line %q is not key: value", path, line)
				cur.body[strings.TrimSpace(k)] = strings.TrimSpace(v)
			}
			continue
		}
		if strings.HasPrefix(line, "#") {
			level := len(line) - len(strings.TrimLeft(line, "#"))
			id := ""
			if i := strings.Index(line, "{#"); i >= 0 {
				id = strings.TrimSuffix(strings.TrimSpace(line[i:]), "}")
			}
			heads = append(heads, strings.Repeat("#", level)+" "+id)
		}
	}
	require.False(t, inFence, "%s: unclosed code block", path)
	return heads, cells
}

func TestNotesAreInStep(t *testing.T) {
	enHeads, enCells := outline(t, "notes.en.md")
	zhHeads, zhCells := outline(t, "notes.zh.md")
	assert.Equal(t, enHeads, zhHeads, "the two chapters have the same sections, with the same ids")
	assert.Equal(t, enCells, zhCells, "the two chapters have the same cells in the same order")
	require.NotEmpty(t, enHeads)
	assert.True(t, strings.HasPrefix(enHeads[0], "# "), "a chapter starts with its title")
}

func TestNotesCellsPointAtRealThings(t *testing.T) {
	m := loadManifest(t)
	_, cells := outline(t, "notes.en.md")
	kinds := map[string]int{}
	plotted := map[string]bool{}
	for _, c := range cells {
		kinds[c.kind+" "+c.body["kind"]]++
		switch c.kind {
		case "kl-results", "kl-plot":
			s := m.Suite(c.body["suite"])
			require.NotNil(t, s, "cell %s names suite %q", c.kind, c.body["suite"])
			if c.kind == "kl-plot" {
				assert.Contains(t, []string{"speedup", "timeline"}, c.body["kind"])
				plotted[s.Name] = true
			}
			if p := c.body["problems"]; p != "" {
				var names []string
				require.NoError(t, json.Unmarshal([]byte(p), &names), "problems: %s", p)
				for _, n := range names {
					found := false
					for _, set := range [][]lab.Problem{s.Problems.GPU, s.Problems.Emu, s.Problems.Grade} {
						for _, q := range set {
							found = found || q.Name == n
						}
					}
					assert.True(t, found, "suite %s has problem %q", s.Name, n)
				}
			}
		case "kl-source":
			src, err := os.ReadFile(filepath.Join(m.Dir, c.body["file"]))
			require.NoError(t, err, "cell kl-source names %q", c.body["file"])
			if fn := c.body["function"]; fn != "" {
				assert.Regexp(t, `\b`+fn+`\(`, string(src), "function %s in %s", fn, c.body["file"])
			}
			assert.NotContains(t, c.body["file"], "exercises/", "the notes do not show the exercise's solution")
		case "kl-profile", "kl-figure": // the site build checks their variants and files
		default:
			t.Errorf("unknown cell kind %q", c.kind)
		}
	}
	for _, s := range m.Suites {
		found := false
		for _, c := range cells {
			found = found || (c.kind == "kl-results" && c.body["suite"] == s.Name)
		}
		assert.True(t, found, "suite %s has no kl-results cell", s.Name)
	}
	assert.True(t, plotted["timeline"] && plotted["bf16_timeline"], "the timelines are drawn")
	assert.GreaterOrEqual(t, kinds["kl-plot timeline"], 3)
}

// The chapter renders in the site's strict mode, with results that hold timelines (a synthetic
// results file written for the test, not a measurement) beside the recorded H200 results that
// the prose quotes.
func TestNotesRender(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: renders the chapter")
	}
	root := t.TempDir()
	labRoot, err := lab.FindRoot(".")
	require.NoError(t, err)
	require.NoError(t, os.CopyFS(filepath.Join(root, "labs", LabDir), os.DirFS(".")))
	require.NoError(t, os.CopyFS(filepath.Join(root, "labs", "common"), os.DirFS(filepath.Join(labRoot, "labs", "common"))))
	// The numbers the prose quotes are checked against the recorded GPU results and profiles.
	for _, name := range []string{LabDir + ".json", LabDir + ".profile.json"} {
		b, err := os.ReadFile(filepath.Join(labRoot, "results", "nvidia-h200", name))
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Join(root, "results", "nvidia-h200"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, "results", "nvidia-h200", name), b, 0o644))
	}
	if b, err := os.ReadFile(filepath.Join(labRoot, "README.md")); err == nil {
		require.NoError(t, os.WriteFile(filepath.Join(root, "README.md"), b, 0o644))
	}
	m := loadManifest(t)
	f := &results.File{Lab: LabDir, Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Command: "synthetic, for a test",
		Device: gpu.DeviceInfo{Backend: "emu", Name: "Kernel Labs CPU emulator", Emulated: true, SMs: 4}}
	for _, s := range m.Suites {
		for _, p := range s.Problems.Emu {
			for _, v := range s.Variants {
				e := results.Entry{Suite: s.Name, Variant: v.Name, Problem: p.Name, Params: p.Params, Status: results.StatusOK,
					Emulated: true, RunAt: f.Time}
				if strings.HasSuffix(v.Name, "_tl") {
					e.Data = map[string]any{TimelineKey: map[string]any{"sms": 4.0, "launches": 1.0,
						"tiles": []any{[]any{0.0, 0.0, 1000.0, 0.0}, []any{1.0, 0.0, 1500.0, 1.0}}}}
				}
				f.Entries = append(f.Entries, e)
			}
		}
	}
	require.NoError(t, results.Save(filepath.Join(root, "results", "emulator", LabDir+".json"), f))
	out := filepath.Join(t.TempDir(), "public")
	rep, err := site.Build(root, out, site.Options{Strict: true})
	require.NoError(t, err)
	assert.Contains(t, rep.Pages, "en/labs/"+LabDir+".html")
	assert.Contains(t, rep.Pages, "zh/labs/"+LabDir+".html")
	page, err := os.ReadFile(filepath.Join(out, "en", "labs", LabDir+".html"))
	require.NoError(t, err)
	assert.Contains(t, string(page), `data-kind="timeline"`)
	assert.Contains(t, string(page), "kl_find_group")
}
