package site

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseCourseFile(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, err string
	}{
		{"the theme's own", "repository: https://x\nchapters: []\n", ""},
		{"a planned chapter", "chapters:\n  - name: 07_attention\n    title: {en: A, zh: 甲}\n", ""},
		{"an unknown key", "repository: https://x\nchapter: []\n", `site/theme/course.yaml:2: unknown key "chapter" in the top level`},
		{"a misspelt chapter key", "chapters:\n  - name: 07_attention\n    titel: {en: A}\n", `site/theme/course.yaml:3: unknown key "titel" in chapters[0]`},
		{"not YAML", "chapters: [\n", "site/theme/course.yaml:1: "},
		{"a name that is not a folder's", "chapters:\n  - name: attention\n", `chapter "attention": a name is a lab folder's name`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseCourseFile([]byte(tc.yaml))
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.err)
		})
	}
}

// TestCourseFileHasNoLabTitles: a chapter's title and summary have one source, its lab.yaml.
func TestCourseFileHasNoLabTitles(t *testing.T) {
	c, err := loadCourse(realCourse(t))
	require.NoError(t, err)
	for _, e := range c.errs {
		assert.NotContains(t, e.Error(), "course.yaml")
	}
	doc, err := readCourseFile()
	require.NoError(t, err)
	for _, p := range doc.Chapters {
		ch := c.chapter(p.Name)
		if ch != nil {
			assert.Nil(t, ch.Manifest, "course.yaml lists %s, which has a lab.yaml", p.Name)
		}
	}
}
