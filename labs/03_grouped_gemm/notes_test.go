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
	"github.com/kernel-labs/kernellabs/internal/labtest"
	"github.com/kernel-labs/kernellabs/internal/results"
	"github.com/kernel-labs/kernellabs/internal/site"
)

// The two chapters are in step (the same sections with the same ids, the same cells), and every
// cell points at something that exists.
func TestNotesCellsPointAtRealThings(t *testing.T) {
	cells := labtest.NotesInStep(t)
	m := labtest.Manifest(t)
	kinds := map[string]int{}
	plotted := map[string]bool{}
	for _, c := range cells {
		kinds[c.Kind+" "+c.Body["kind"]]++
		switch c.Kind {
		case "kl-results", "kl-plot":
			s := m.Suite(c.Body["suite"])
			require.NotNil(t, s, "cell %s names suite %q", c.Kind, c.Body["suite"])
			if c.Kind == "kl-plot" {
				assert.Contains(t, []string{"speedup", "timeline"}, c.Body["kind"])
				plotted[s.Name] = true
			}
			if p := c.Body["problems"]; p != "" {
				var names []string
				require.NoError(t, json.Unmarshal([]byte(p), &names), "problems: %s", p)
				for _, n := range names {
					found := false
					for _, q := range s.Problems.All() {
						found = found || q.Name == n
					}
					assert.True(t, found, "suite %s has problem %q", s.Name, n)
				}
			}
		case "kl-source":
			src, err := os.ReadFile(filepath.Join(m.Dir, c.Body["file"]))
			require.NoError(t, err, "cell kl-source names %q", c.Body["file"])
			if fn := c.Body["function"]; fn != "" {
				assert.Regexp(t, `\b`+fn+`\(`, string(src), "function %s in %s", fn, c.Body["file"])
			}
			assert.NotContains(t, c.Body["file"], "exercises/", "the notes do not show the exercise's solution")
		case "kl-profile", "kl-figure": // the site build checks their variants and files
		default:
			t.Errorf("unknown cell kind %q", c.Kind)
		}
	}
	for _, s := range m.Suites {
		found := false
		for _, c := range cells {
			found = found || (c.Kind == "kl-results" && c.Body["suite"] == s.Name)
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
	// The numbers the prose quotes are checked against the recorded GPU results and profiles, and
	// against lab 01's measured HBM bandwidth, which the decode section divides by: lab 01's
	// chapter comes along, since the site reads a ceiling from the chapter that records it.
	const lab01 = "01_device_props"
	require.NoError(t, os.CopyFS(filepath.Join(root, "labs", lab01), os.DirFS(filepath.Join(labRoot, "labs", lab01))))
	for _, name := range []string{LabDir + ".json", LabDir + ".profile.json", lab01 + ".json", lab01 + ".profile.json"} {
		b, err := os.ReadFile(filepath.Join(labRoot, "results", "nvidia-h200", name))
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Join(root, "results", "nvidia-h200"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, "results", "nvidia-h200", name), b, 0o644))
	}
	if b, err := os.ReadFile(filepath.Join(labRoot, "README.md")); err == nil {
		require.NoError(t, os.WriteFile(filepath.Join(root, "README.md"), b, 0o644))
	}
	m := labtest.Manifest(t)
	f := &results.File{Lab: LabDir, Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Command: "synthetic, for a test",
		Device: gpu.DeviceInfo{Backend: "emu", Name: "Kernel Labs CPU emulator", Emulated: true, SMs: 4}}
	for _, s := range m.Suites {
		for _, p := range s.Problems.Emu {
			for _, v := range s.Variants {
				e := results.Entry{Suite: s.Name, Variant: v.Name, Problem: p.Name, Params: p.Params, Status: results.StatusOK,
					Emulated: true, RunAt: f.Time}
				if strings.HasSuffix(v.Name, "_tl") {
					e.Data = map[string]any{results.TimelineKey: map[string]any{"sms": 4.0, "launches": 1.0,
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
