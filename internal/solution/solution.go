// Package solution reads the solution regions of exercise files and produces their student
// stubs. A region is
//
//	// BEGIN SOLUTION
//	…the solution…
//	// STUB: return 0.0f;      (optional: code the stub needs to compile, uncommented in the stub)
//	// END SOLUTION
//
// and its stub is a TODO comment with the region's indentation and comment style, followed by the
// region's STUB lines uncommented. The markers work with any line comment (//, #, --) and with
// <!-- … --> in markdown. The site and the student edition both show files through Strip, and
// Leaks checks that neither holds the code of a region.
package solution

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Begin starts a solution region; End ends it.
const (
	Begin = "BEGIN SOLUTION"
	End   = "END SOLUTION"
)

// Todo is the comment text a stub puts in place of a region.
const Todo = "TODO: your code here (see the instructions above)."

// Region is one solution region of a file.
type Region struct {
	File  string   // as given to Regions
	Line  int      // of the BEGIN marker, 1-based
	Lines []string // the lines between the markers, STUB lines included
}

// Strip replaces the solution regions of a file's text by their stubs and returns the new text
// and the number of regions. name is used in error messages (file:line).
func Strip(name string, data []byte) ([]byte, int, error) {
	var out strings.Builder
	regions, err := scan(name, data, func(l string) { out.WriteString(l) }, func(r *Region, indent, prefix, suffix, nl string) {
		todo := strings.TrimSpace(prefix + " " + Todo + " " + suffix)
		out.WriteString(indent + todo + nl)
		for _, l := range r.Lines {
			if s, ok := stubLine(l, prefix); ok {
				out.WriteString(s + nl)
			}
		}
	})
	if err != nil {
		return nil, 0, err
	}
	return []byte(out.String()), len(regions), nil
}

// Regions returns the solution regions of a file's text.
func Regions(name string, data []byte) ([]Region, error) {
	return scan(name, data, func(string) {}, func(*Region, string, string, string, string) {})
}

// scan walks the lines of data, handing lines outside regions to keep (with their line ends) and
// each closed region to closed (with the BEGIN marker's indentation, comment prefix and suffix
// and the region's line end).
func scan(name string, data []byte, keep func(string), closed func(r *Region, indent, prefix, suffix, nl string)) ([]Region, error) {
	var regions []Region
	var cur *Region
	var indent, prefix, suffix string
	for i, l := range strings.SplitAfter(string(data), "\n") {
		body := strings.TrimRight(l, "\r\n")
		trimmed := strings.TrimSpace(body)
		switch {
		case markerLine(trimmed, Begin):
			if cur != nil {
				return nil, fmt.Errorf("%s:%d: %s inside the region opened at line %d", name, i+1, Begin, cur.Line)
			}
			cur = &Region{File: name, Line: i + 1}
			indent = body[:len(body)-len(strings.TrimLeft(body, " \t"))]
			k := strings.Index(trimmed, Begin)
			prefix = strings.TrimSpace(trimmed[:k])
			suffix = strings.TrimSpace(trimmed[k+len(Begin):])
		case markerLine(trimmed, End):
			if cur == nil {
				return nil, fmt.Errorf("%s:%d: %s without %s", name, i+1, End, Begin)
			}
			nl := "\n"
			if strings.HasSuffix(l, "\r\n") {
				nl = "\r\n"
			}
			closed(cur, indent, prefix, suffix, nl)
			regions = append(regions, *cur)
			cur = nil
		case cur != nil:
			cur.Lines = append(cur.Lines, body)
		default:
			keep(l)
		}
	}
	if cur != nil {
		return nil, fmt.Errorf("%s:%d: %s is never closed by %s", name, cur.Line, Begin, End)
	}
	return regions, nil
}

// markerLine says whether a trimmed line is a marker: a comment that holds only the marker, such
// as "// BEGIN SOLUTION" or "<!-- END SOLUTION -->" (not code or prose that mentions it).
func markerLine(trimmed, marker string) bool {
	k := strings.Index(trimmed, marker)
	if k < 0 {
		return false
	}
	pre := strings.TrimSpace(trimmed[:k])
	post := strings.TrimSpace(trimmed[k+len(marker):])
	switch pre {
	case "//", "///", "#", "--", ";", "%", "<!--", "/*":
	default:
		return false
	}
	return post == "" || post == "-->" || post == "*/"
}

// Has reports whether a file's text has a solution region marker line (BEGIN or END).
func Has(data []byte) bool {
	if !bytes.Contains(data, []byte(Begin)) && !bytes.Contains(data, []byte(End)) {
		return false
	}
	for _, l := range strings.Split(string(data), "\n") {
		if t := strings.TrimSpace(l); markerLine(t, Begin) || markerLine(t, End) {
			return true
		}
	}
	return false
}

// HasBegin reports whether a file's text has a BEGIN SOLUTION marker line.
func HasBegin(data []byte) bool {
	if !bytes.Contains(data, []byte(Begin)) {
		return false
	}
	for _, l := range strings.Split(string(data), "\n") {
		if markerLine(strings.TrimSpace(l), Begin) {
			return true
		}
	}
	return false
}

// stubLine turns "<indent>// STUB: code" into "<indent>code".
func stubLine(body, prefix string) (string, bool) {
	t := strings.TrimLeft(body, " \t")
	ind := body[:len(body)-len(t)]
	if prefix == "" || !strings.HasPrefix(t, prefix) {
		return "", false
	}
	rest := strings.TrimSpace(strings.TrimPrefix(t, prefix))
	if !strings.HasPrefix(rest, "STUB:") {
		return "", false
	}
	code := strings.TrimPrefix(rest, "STUB:")
	code = strings.TrimPrefix(code, " ")
	return ind + code, true
}

// IsText says whether data looks like text (no NUL byte in its first 8000 bytes).
func IsText(b []byte) bool {
	n := min(len(b), 8000)
	return !bytes.Contains(b[:n], []byte{0})
}

// EditionFile marks the root of a student edition (written by `labrun export`): its exercise
// files hold stubs, so the course's tests of the reference solutions skip there.
const EditionFile = ".student-edition"

// IsStudentEdition reports whether the course at root is a student edition.
func IsStudentEdition(root string) bool {
	_, err := os.Stat(filepath.Join(root, EditionFile))
	return err == nil
}
