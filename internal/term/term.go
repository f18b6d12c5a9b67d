// Package term fits labrun's terminal output to the reader's window: tables that elide a long
// cell instead of wrapping, lines without trailing padding, long messages wrapped at spaces, and
// "did you mean" suggestions for mistyped names.
package term

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// DefaultWidth is the width used when $COLUMNS does not say: wide enough for the course's
// tables, narrow enough for a laptop's split terminal.
const DefaultWidth = 100

// Width is the number of columns output must fit: $COLUMNS when it is a sane number, else
// DefaultWidth. (Shells do not export COLUMNS by default, so the default is what most runs see.)
func Width() int {
	if n, err := strconv.Atoi(strings.TrimSpace(os.Getenv("COLUMNS"))); err == nil && n >= 20 {
		return n
	}
	return DefaultWidth
}

// DisplayWidth is how many terminal columns s takes: CJK and full-width characters take two.
func DisplayWidth(s string) int {
	n := 0
	for _, r := range s {
		n += runeWidth(r)
	}
	return n
}

func runeWidth(r rune) int {
	switch {
	case r < 0x20 || r == 0x7f:
		return 0
	case r >= 0x1100 && r <= 0x115f, // Hangul Jamo
		r >= 0x2e80 && r <= 0xa4cf && r != 0x303f, // CJK radicals … Yi
		r >= 0xac00 && r <= 0xd7a3,                // Hangul syllables
		r >= 0xf900 && r <= 0xfaff,                // CJK compatibility ideographs
		r >= 0xfe30 && r <= 0xfe4f,                // CJK compatibility forms
		r >= 0xff00 && r <= 0xff60,                // full-width forms
		r >= 0xffe0 && r <= 0xffe6,
		r >= 0x20000 && r <= 0x3fffd:
		return 2
	}
	return 1
}

// Elide shortens s to at most width columns, ending it with "…" when something was cut.
func Elide(s string, width int) string {
	if DisplayWidth(s) <= width {
		return s
	}
	if width <= 0 {
		return ""
	}
	var b strings.Builder
	used := 0
	for _, r := range s {
		w := runeWidth(r)
		if used+w > width-1 {
			break
		}
		b.WriteRune(r)
		used += w
	}
	return strings.TrimRight(b.String(), " ") + "…"
}

// Wrap breaks s into lines of at most width columns at spaces; continuation lines start with
// indent. Spacing inside a line is kept (aligned columns stay aligned on the first line). A word
// longer than a line is cut where it must be, so no line is ever wider.
func Wrap(s string, width int, indent string) []string {
	s = strings.TrimRight(s, " \t")
	if DisplayWidth(s) <= width {
		return []string{s}
	}
	if DisplayWidth(indent) >= width/2 {
		indent = ""
	}
	var lines []string
	cur, curW, empty := "", 0, true
	newLine := func() { cur, curW, empty = indent, DisplayWidth(indent), true }
	lead := len(s) - len(strings.TrimLeft(s, " "))
	if lead < width/2 {
		cur, curW = s[:lead], lead // an indented message stays indented
	}
	for _, loc := range wordRE.FindAllStringIndex(s, -1) {
		word := s[loc[0]:loc[1]]
		sep := ""
		if loc[0] > 0 {
			sep = s[prevEnd(s, loc[0]):loc[0]]
		}
		for word != "" {
			ww := DisplayWidth(word)
			if empty {
				sep = ""
			}
			if curW+len(sep)+ww <= width {
				cur += sep + word
				curW += len(sep) + ww
				empty = false
				break
			}
			if !empty {
				lines = append(lines, cur)
				newLine()
				continue
			}
			if strings.ContainsRune(word, '/') {
				// A path (or URL) wider than a line stays whole, on a line of its own: cut, it
				// could not be copied.
				lines = append(lines, cur+word)
				newLine()
				break
			}
			head, tail := cutColumns(word, width-curW) // a word wider than a whole line
			lines = append(lines, cur+head)
			newLine()
			word = tail
		}
	}
	if !empty {
		lines = append(lines, cur)
	}
	return lines
}

var wordRE = regexp.MustCompile(`\S+`)

// prevEnd is where the run of spaces before position i starts.
func prevEnd(s string, i int) int {
	j := i
	for j > 0 && (s[j-1] == ' ' || s[j-1] == '\t') {
		j--
	}
	return j
}

// cutColumns splits s after at most n columns (at least one rune).
func cutColumns(s string, n int) (string, string) {
	used := 0
	for i, r := range s {
		w := runeWidth(r)
		if used+w > n && i > 0 {
			return s[:i], s[i:]
		}
		used += w
	}
	_, size := utf8.DecodeRuneInString(s)
	return s[:size], s[size:]
}
