package site

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/lab"
)

// The tests' courses: the repository's own, and the synthetic test course (testdata/course),
// copied for each test so that it may edit it; building them, and reading and editing their files.

// realCourse is the repository's own course (its labs/ and results/), which tests check as it is.
func realCourse(t testing.TB) string {
	t.Helper()
	root, err := lab.FindRoot(".")
	require.NoError(t, err)
	return root
}

// fixture copies the synthetic test course (testdata/course) into a temporary folder.
func fixture(t testing.TB) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "course")
	require.NoError(t, os.CopyFS(dst, os.DirFS("testdata/course")))
	return dst
}

// build builds a course's site into a temporary folder: the report, the folder and the error.
func build(t testing.TB, root string, strict bool) (*Report, string, error) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "public")
	rep, err := Build(root, out, Options{Strict: strict})
	return rep, out, err
}

// built is build for a course whose site must build.
func built(t testing.TB, root string, strict bool) (*Report, string) {
	t.Helper()
	rep, out, err := build(t, root, strict)
	require.NoError(t, err)
	return rep, out
}

// read reads a file below dir; rel is slash-separated.
func read(t testing.TB, dir, rel string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
	require.NoError(t, err)
	return string(data)
}

// writeFile writes a file below dir (rel is slash-separated), and the folders it needs.
func writeFile(t testing.TB, dir, rel, text string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
}

// editFile rewrites a file below dir with what edit makes of its text; the edit must change it
// (an edit that finds nothing to replace would leave the test checking the unedited course).
func editFile(t testing.TB, dir, rel string, edit func(string) string) {
	t.Helper()
	old := read(t, dir, rel)
	edited := edit(old)
	require.NotEqual(t, old, edited, "the edit of %s applies", rel)
	writeFile(t, dir, rel, edited)
}

// editNotes edits the notes of a lab in both languages: edit gets the language and the text.
func editNotes(t testing.TB, root, labDir string, edit func(lang, text string) string) {
	t.Helper()
	for _, lang := range Langs {
		editFile(t, root, notesPath(labDir, lang), func(s string) string { return edit(lang, s) })
	}
}

// notesPath is the course-relative path of a lab's notes in a language.
func notesPath(labDir, lang string) string { return "labs/" + labDir + "/notes." + lang + ".md" }

// withText puts text after the "Measured ceilings" heading of both languages of the fixture's lab 01.
func withText(t testing.TB, root, en, zh string) {
	t.Helper()
	text := map[string]string{"en": en, "zh": zh}
	head := map[string]string{"en": "## Measured ceilings\n", "zh": "## 实测上限\n"}
	editNotes(t, root, "01_device_props", func(lang, s string) string {
		return strings.Replace(s, head[lang], head[lang]+"\n"+text[lang]+"\n", 1)
	})
}

// siteFiles lists the files below dir that match the slash-separated glob patterns, as sorted
// slash-separated paths relative to dir.
func siteFiles(t testing.TB, dir string, patterns ...string) []string {
	t.Helper()
	var out []string
	for _, pat := range patterns {
		found, err := filepath.Glob(filepath.Join(dir, filepath.FromSlash(pat)))
		require.NoError(t, err)
		for _, p := range found {
			rel, err := filepath.Rel(dir, p)
			require.NoError(t, err)
			out = append(out, filepath.ToSlash(rel))
		}
	}
	sort.Strings(out)
	return out
}

// between is the part of s from the first start to the end before the next end ("" without a
// start, the rest of s without an end).
func between(s, start, end string) string {
	i := strings.Index(s, start)
	if i < 0 {
		return ""
	}
	j := strings.Index(s[i:], end)
	if j < 0 {
		return s[i:]
	}
	return s[i : i+j]
}
