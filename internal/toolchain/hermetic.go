package toolchain

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Hermetic builds of submissions. A file submitted for grading is hostile: it must not reach the
// instructor's reference solutions, which lie beside the exercise it replaces. So a submission is
// built alone:
//
//  1. its #include lines are scanned, and an include with an absolute path or a `..` component
//     is refused at its file:line (ScanIncludes);
//  2. the file is copied alone into a fresh, empty scratch folder and built there, with only the
//     course's shared headers (labs/common) and the emulator's (emu/) on the include path;
//  3. the compiler runs under the sandbox (sandbox.go): it can read the system's headers, those
//     folders and the scratch folder, nothing else of the course tree;
//  4. every file the compiler read (its -MD dependency output) is audited: one inside a
//     protected folder (the course tree, the build cache) other than those include folders
//     fails the build (AuditDeps). This catches what the scan cannot see (an include built by
//     a macro, #include_next, __has_include) even where the sandbox is not available.

// Submission says how a submitted file is built (Request.Submission).
type Submission struct {
	// Protect lists folders whose files the build must not read, apart from the include folders
	// (the course tree being graded from).
	Protect []string
	// DeviceCheck (emulator builds): the file must also compile as CUDA device code (clang++ in
	// CUDA mode, syntax only), so that host-only C++ that nvcc would reject earns nothing.
	DeviceCheck bool
	// Sandbox confines the compiler (internal/sandbox): it can read only the system, the
	// include folders and its scratch folder. Without it the dependency audit still holds.
	Sandbox bool
}

var (
	includeRE    = regexp.MustCompile(`^\s*#\s*(include_next|include|import|embed)\b\s*(.*)$`)
	hasIncludeRE = regexp.MustCompile(`__has_include(?:_next)?\s*\(\s*("[^"]*"|<[^>]*>)`)
	dependencyRE = regexp.MustCompile(`^\s*#\s*pragma\s+GCC\s+dependency\s+("[^"]*"|<[^>]*>)`)
)

// AllowedIncludes says, in words, what a submission may include.
const AllowedIncludes = "a submission may include only the course's shared headers by name (#include \"kl.cuh\", " +
	"\"gemm_common.cuh\": the files of labs/common) and the system's headers (<stdint.h>); " +
	"no absolute path and no `..`"

// ScanIncludes finds the includes of a submission that name a file by an absolute path or with a
// `..` component (also in #include_next, #import, #embed, __has_include and #pragma GCC
// dependency), and returns one error located at file:line for each. Comments are skipped;
// continued lines are joined. Includes whose name a macro builds cannot be read here: the
// sandbox and the dependency audit catch those.
func ScanIncludes(file string, src []byte) []Diagnostic {
	var ds []Diagnostic
	lines := strings.Split(stripComments(string(src)), "\n")
	for i := 0; i < len(lines); i++ {
		line, first := lines[i], i+1
		for strings.HasSuffix(line, "\\") && i+1 < len(lines) {
			i++
			line = strings.TrimSuffix(line, "\\") + lines[i]
		}
		var names []string
		if m := includeRE.FindStringSubmatch(line); m != nil {
			if n, ok := headerName(m[2]); ok {
				names = append(names, n)
			}
		}
		if m := dependencyRE.FindStringSubmatch(line); m != nil {
			names = append(names, m[1][1:len(m[1])-1])
		}
		for _, m := range hasIncludeRE.FindAllStringSubmatch(line, -1) {
			names = append(names, m[1][1:len(m[1])-1])
		}
		for _, n := range names {
			if why := badIncludeName(n); why != "" {
				ds = append(ds, Diagnostic{File: file, Line: first, Kind: "error",
					Message: fmt.Sprintf("refused include %q: %s; %s", n, why, AllowedIncludes)})
			}
		}
	}
	return ds
}

// headerName reads the "name" or <name> that starts an include's operand.
func headerName(op string) (string, bool) {
	op = strings.TrimSpace(op)
	if len(op) < 2 {
		return "", false
	}
	var end byte
	switch op[0] {
	case '"':
		end = '"'
	case '<':
		end = '>'
	default:
		return "", false // a macro: the sandbox and the dependency audit see where it leads
	}
	j := strings.IndexByte(op[1:], end)
	if j < 0 {
		return "", false
	}
	return op[1 : 1+j], true
}

func badIncludeName(n string) string {
	s := filepath.ToSlash(n)
	if strings.HasPrefix(s, "/") || strings.HasPrefix(s, "~") || filepath.IsAbs(n) {
		return "it is an absolute path"
	}
	for _, part := range strings.Split(s, "/") {
		if part == ".." {
			return "it climbs out of its folder with `..`"
		}
	}
	return ""
}

// stripComments blanks // and /* */ comments outside string and character literals, keeping
// every newline (so that line numbers stay right). A literal ends at the end of its line.
func stripComments(s string) string {
	b := []byte(s)
	const (
		normal = iota
		str
		chr
		line
		block
	)
	state := normal
	for i := 0; i < len(b); i++ {
		c := b[i]
		next := byte(0)
		if i+1 < len(b) {
			next = b[i+1]
		}
		switch state {
		case normal:
			switch {
			case c == '"':
				state = str
			case c == '\'':
				state = chr
			case c == '/' && next == '/':
				state = line
				b[i] = ' '
			case c == '/' && next == '*':
				state = block
				b[i], b[i+1] = ' ', ' '
				i++
			}
		case str, chr:
			switch {
			case c == '\\' && next != '\n':
				i++
			case c == '\n', state == str && c == '"', state == chr && c == '\'':
				state = normal
			}
		case line:
			if c == '\n' {
				if i > 0 && b[i-1] == '\\' { // a continued // comment goes on
					b[i-1] = ' '
					continue
				}
				state = normal
			} else {
				b[i] = ' '
			}
		case block:
			if c == '*' && next == '/' {
				b[i], b[i+1] = ' ', ' '
				i++
				state = normal
			} else if c != '\n' {
				b[i] = ' '
			}
		}
	}
	return string(b)
}

// hermeticCopy copies a submitted file alone into scratch, under its own name, and returns the
// copy's path. The caller has refused symbolic links already; the copy also fixes the content
// that is built, audited and hashed, whatever happens to the original meanwhile.
func hermeticCopy(src, scratch string) (string, []byte, error) {
	st, err := os.Lstat(src)
	if err != nil {
		return "", nil, fmt.Errorf("submitted file: %w", err)
	}
	if !st.Mode().IsRegular() {
		return "", nil, fmt.Errorf("submitted file %s is not a regular file (%s): submit the file itself", src, st.Mode().Type())
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return "", nil, fmt.Errorf("submitted file: %w", err)
	}
	dst := filepath.Join(scratch, filepath.Base(src))
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		return "", nil, err
	}
	return dst, data, nil
}

// readDeps parses a make-style dependency file (-MD -MF) into its prerequisites.
func readDeps(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the compiler's dependency list: %w", err)
	}
	return parseDeps(b), nil
}

func parseDeps(b []byte) []string {
	b = bytes.ReplaceAll(b, []byte("\\\r\n"), []byte(" "))
	b = bytes.ReplaceAll(b, []byte("\\\n"), []byte(" "))
	var out []string
	seen := map[string]bool{}
	for _, rule := range strings.Split(string(b), "\n") {
		// "target: dep dep"; a colon inside a path is rare, the first ": " ends the target.
		i := strings.Index(rule, ": ")
		if i < 0 {
			if strings.HasSuffix(strings.TrimSpace(rule), ":") {
				continue // a phony target with no prerequisites (-MP)
			}
			continue
		}
		rest := rule[i+2:]
		var cur strings.Builder
		flush := func() {
			if cur.Len() > 0 && !seen[cur.String()] {
				seen[cur.String()] = true
				out = append(out, cur.String())
			}
			cur.Reset()
		}
		for k := 0; k < len(rest); k++ {
			c := rest[k]
			switch {
			case c == '\\' && k+1 < len(rest) && (rest[k+1] == ' ' || rest[k+1] == '#' || rest[k+1] == '\\'):
				cur.WriteByte(rest[k+1])
				k++
			case c == '$' && k+1 < len(rest) && rest[k+1] == '$':
				cur.WriteByte('$')
				k++
			case c == ' ' || c == '\t' || c == '\r':
				flush()
			default:
				cur.WriteByte(c)
			}
		}
		flush()
	}
	return out
}

// realDir is a folder's absolute path with its symbolic links resolved ("" when it cannot be).
func realDir(d string) string {
	abs, err := filepath.Abs(d)
	if err != nil {
		return ""
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		return r
	}
	return filepath.Clean(abs)
}

// within says whether path p lies inside folder dir (both cleaned, absolute).
func within(p, dir string) bool {
	if dir == "" {
		return false
	}
	if p == dir {
		return true
	}
	return strings.HasPrefix(p, strings.TrimSuffix(dir, string(filepath.Separator))+string(filepath.Separator))
}

// AuditDeps checks the files a submission's build read (deps, as the compiler listed them,
// relative to workDir): each must lie in one of allowed, or outside every folder of protect. It
// returns one message per file that breaks the rule.
func AuditDeps(deps []string, workDir string, allowed, protect []string) []string {
	var ok, bad []string
	for _, d := range allowed {
		if r := realDir(d); r != "" {
			ok = append(ok, r)
		}
	}
	for _, d := range protect {
		if r := realDir(d); r != "" {
			bad = append(bad, r)
		}
	}
	var msgs []string
	for _, dep := range deps {
		p := depPath(dep, workDir)
		if r, err := filepath.EvalSymlinks(p); err == nil {
			p = r
		}
		inAllowed := false
		for _, a := range ok {
			if within(p, a) {
				inAllowed = true
				break
			}
		}
		if inAllowed {
			continue
		}
		for _, b := range bad {
			if within(p, b) {
				msgs = append(msgs, fmt.Sprintf("the build read %s (as %q), a file of the course tree outside the shared headers: %s", p, dep, AllowedIncludes))
				break
			}
		}
	}
	return msgs
}

// relocate rewrites the scratch folder's path in compiler output to the submitted file's folder,
// so that messages name the student's own file.
func relocate(out, scratch, origDir string) string {
	if scratch == "" || origDir == "" {
		return out
	}
	return strings.ReplaceAll(out, scratch+string(filepath.Separator), origDir+string(filepath.Separator))
}
