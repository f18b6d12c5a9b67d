// Package theme holds the course site's theme: page templates, the stylesheet, the fixed pages
// (the course introduction, how to run) in both languages, and the list of planned chapters.
// internal/site renders with it; everything is embedded, so labrun needs no files at run time.
package theme

import "embed"

// FS holds templates/*.html, assets/*, pages/*.md and course.yaml.
//
//go:embed templates/*.html assets/* pages/*.md course.yaml
var FS embed.FS
