package grade

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/kernel-labs/kernellabs/internal/lab"
)

// resolveSubmission finds the file to grade for each exercise. It returns the engine's file
// replacements (variant file → submitted file) and, per exercise, what is graded.
//
//   - no submission: the exercise files of the course tree (a student's own repository);
//   - a file: the exercise whose file has the same name (or the lab's only exercise);
//   - a folder: for the exercise file labs/NN_name/F (F like exercises/ex1.cu), the first of
//     DIR/labs/NN_name/F, DIR/NN_name/F, DIR/F and DIR/<base name of F>. An exercise with no file
//     there is not submitted and scores 0.
func resolveSubmission(root string, m *lab.Manifest, exs []*lab.Exercise, sub string) (map[string]string, []Submitted, error) {
	files := map[string]string{}
	out := make([]Submitted, len(exs))
	if sub == "" {
		for i, ex := range exs {
			out[i] = Submitted{Exercise: ex.V.Name, File: rel(root, filepath.Join(m.Dir, ex.V.File))}
		}
		return files, out, nil
	}
	abs, err := filepath.Abs(sub)
	if err != nil {
		return nil, nil, err
	}
	st, err := os.Stat(abs)
	if err != nil {
		return nil, nil, &lab.UsageError{Msg: fmt.Sprintf("--submission %s: %v", sub, err)}
	}
	if !st.IsDir() {
		match := -1
		for i, ex := range exs {
			if filepath.Base(ex.V.File) == filepath.Base(abs) {
				match = i
			}
		}
		if match < 0 && len(exs) == 1 {
			match = 0
		}
		if match < 0 {
			var names []string
			for _, ex := range exs {
				names = append(names, filepath.Base(ex.V.File))
			}
			return nil, nil, &lab.UsageError{Msg: fmt.Sprintf("--submission %s: lab %s has %d exercises; name the file like one of them (%s) or submit a folder",
				sub, m.Name, len(exs), strings.Join(names, ", "))}
		}
		for i, ex := range exs {
			if i == match {
				files[ex.V.File] = abs
				out[i] = Submitted{Exercise: ex.V.Name, File: abs}
			} else {
				out[i] = Submitted{Exercise: ex.V.Name, File: "(not submitted)", Missing: true}
			}
		}
		return files, out, nil
	}
	for i, ex := range exs {
		f := filepath.FromSlash(ex.V.File)
		cands := []string{filepath.Join(abs, "labs", m.Name, f), filepath.Join(abs, m.Name, f), filepath.Join(abs, f),
			filepath.Join(abs, filepath.Base(f))}
		out[i] = Submitted{Exercise: ex.V.Name, File: fmt.Sprintf("(not submitted: no %s in %s)", filepath.Base(f), sub), Missing: true}
		for _, c := range cands {
			if st, err := os.Stat(c); err == nil && !st.IsDir() {
				files[ex.V.File] = c
				out[i] = Submitted{Exercise: ex.V.Name, File: c}
				break
			}
		}
	}
	return files, out, nil
}

func rel(root, p string) string {
	if r, err := filepath.Rel(root, p); err == nil {
		return r
	}
	return p
}

var (
	commentRE = regexp.MustCompile(`(?s)//[^\n]*|/\*.*?\*/`)
)

// ConstParams reads the signature of kernel entry in a kernel file's source and says, for each
// parameter, whether it points at data the kernel must not change (const T*, T const*). The
// grader takes it from the course's own file, not from the submission, so that a submission cannot
// drop a const to change its inputs unnoticed.
func ConstParams(src, entry string) ([]bool, error) {
	src = commentRE.ReplaceAllString(src, " ")
	re := regexp.MustCompile(`\b` + regexp.QuoteMeta(entry) + `\s*\(`)
	for _, loc := range re.FindAllStringIndex(src, -1) {
		head := src[max(0, loc[0]-300):loc[0]]
		if !strings.Contains(head, "__global__") {
			continue
		}
		if i := strings.LastIndexAny(head, ";}"); i >= 0 && !strings.Contains(head[i:], "__global__") {
			continue // __global__ belongs to an earlier declaration
		}
		open := loc[1] - 1
		depth, end := 0, -1
		for i := open; i < len(src); i++ {
			switch src[i] {
			case '(':
				depth++
			case ')':
				depth--
			}
			if depth == 0 {
				end = i
				break
			}
		}
		if end < 0 {
			return nil, fmt.Errorf("the parameter list of %s is not closed", entry)
		}
		list := strings.TrimSpace(src[open+1 : end])
		if list == "" || list == "void" {
			return []bool{}, nil
		}
		var out []bool
		for _, p := range splitTop(list) {
			i := strings.LastIndexByte(p, '*')
			out = append(out, i >= 0 && regexp.MustCompile(`\bconst\b`).MatchString(p[:i]))
		}
		return out, nil
	}
	return nil, fmt.Errorf("no __global__ function %s found in its kernel file", entry)
}

// splitTop splits a parameter list at commas outside <>, () and [].
func splitTop(s string) []string {
	var parts []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '<', '(', '[':
			depth++
		case '>', ')', ']':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, s[start:])
}
