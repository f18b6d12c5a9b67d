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
// replacements (variant file → submitted file), which the engine builds hermetically (see
// toolchain.Submission), and, per exercise, what is graded.
//
//   - no submission: the exercise files of the course tree (a student's own repository, or the
//     instructor's references). They are built hermetically too, so that a student's own check
//     gives the grade of record's verdict on includes; being inside the course tree is what
//     this mode means, so that rule does not apply;
//   - a file: the exercises whose file has the same name (or the lab's only exercise file);
//   - a folder: for the exercise file labs/NN_name/F (F like exercises/ex1.cu), the first of
//     DIR/labs/NN_name/F, DIR/NN_name/F, DIR/F and DIR/<base name of F>. An exercise with no file
//     there is not submitted and scores 0.
//
// A submission must lie outside the course tree it is graded from (a usage error otherwise). A
// submitted file that is a symbolic link, or reached through one inside the submission folder, or
// that is a hard link to a file of the course tree, is refused: its exercise scores 0.
func resolveSubmission(root string, m *lab.Manifest, exs []*lab.Exercise, sub string) (map[string]string, []Submitted, error) {
	files := map[string]string{}
	out := make([]Submitted, len(exs))
	if sub == "" {
		for i, ex := range exs {
			files[ex.V.File] = filepath.Join(m.Dir, ex.V.File)
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
	// A submitted file that is a symbolic link is refused below, as what it is, wherever it leads.
	if lst, err := os.Lstat(abs); err == nil && lst.Mode()&os.ModeSymlink == 0 || st.IsDir() {
		if err := outsideCourse(root, abs, sub); err != nil {
			return nil, nil, err
		}
	}
	courseFiles := courseFileIDs(root)
	if !st.IsDir() {
		// The exercises of that file: several when one file holds the entries of several
		// variants (lab 05's exercise 1, fp32 and bf16).
		match := map[int]bool{}
		exFiles := map[string]bool{}
		for i, ex := range exs {
			exFiles[ex.V.File] = true
			if filepath.Base(ex.V.File) == filepath.Base(abs) {
				match[i] = true
			}
		}
		if len(match) == 0 && len(exFiles) == 1 {
			for i := range exs {
				match[i] = true
			}
		}
		if len(match) == 0 {
			var names []string
			for _, ex := range exs {
				names = append(names, filepath.Base(ex.V.File))
			}
			return nil, nil, &lab.UsageError{Msg: fmt.Sprintf("--submission %s: lab %s has %d exercises; name the file like one of them (%s) or submit a folder",
				sub, m.Name, len(exs), strings.Join(names, ", "))}
		}
		for i, ex := range exs {
			if match[i] {
				out[i] = Submitted{Exercise: ex.V.Name, File: abs}
				if why := refusedFile(filepath.Dir(abs), abs, courseFiles); why != "" {
					out[i].Refused = why
				} else {
					files[ex.V.File] = abs
				}
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
			if _, err := os.Lstat(c); err != nil {
				continue
			}
			out[i] = Submitted{Exercise: ex.V.Name, File: c}
			if why := refusedFile(abs, c, courseFiles); why != "" {
				out[i].Refused = why
				break
			}
			if st, err := os.Stat(c); err == nil && !st.IsDir() {
				files[ex.V.File] = c
				break
			}
			out[i] = Submitted{Exercise: ex.V.Name, File: fmt.Sprintf("(not submitted: no %s in %s)", filepath.Base(f), sub), Missing: true}
		}
	}
	return files, out, nil
}

// outsideCourse refuses a submission whose real path lies inside the course tree at root, or
// that holds the course tree: grading the course's own files is what no --submission does.
func outsideCourse(root, abs, asTyped string) error {
	realSub, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return &lab.UsageError{Msg: fmt.Sprintf("--submission %s: %v", asTyped, err)}
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		realRoot = root
	}
	if inside(realSub, realRoot) || inside(realRoot, realSub) {
		return &lab.UsageError{Msg: fmt.Sprintf("--submission %s: its real path %s lies inside (or holds) the course tree %s that grades it; "+
			"check the submission out in a folder of its own outside the course tree (to grade the course's own exercise files, leave out --submission)",
			asTyped, realSub, realRoot)}
	}
	return nil
}

func inside(p, dir string) bool {
	if p == dir {
		return true
	}
	r, err := filepath.Rel(dir, p)
	return err == nil && r != ".." && !strings.HasPrefix(r, ".."+string(filepath.Separator)) && !filepath.IsAbs(r)
}

// refusedFile says why a submitted file (at path, inside the submission folder top) is refused,
// or "": a symbolic link (the file or a folder between top and it), something other than a
// regular file, or a hard link to a file of the course tree.
func refusedFile(top, path string, course map[fileID]string) string {
	r, err := filepath.Rel(top, path)
	if err != nil {
		return fmt.Sprintf("%s is not inside the submission folder %s", path, top)
	}
	cur := top
	for _, part := range strings.Split(r, string(filepath.Separator)) {
		cur = filepath.Join(cur, part)
		st, err := os.Lstat(cur)
		if err != nil {
			return fmt.Sprintf("%s: %v", cur, err)
		}
		if st.Mode()&os.ModeSymlink != 0 {
			target, _ := os.Readlink(cur)
			return fmt.Sprintf("%s is a symbolic link (to %s): symbolic links are refused; submit the file itself", cur, target)
		}
	}
	st, err := os.Lstat(path)
	if err != nil {
		return err.Error()
	}
	if !st.Mode().IsRegular() {
		return fmt.Sprintf("%s is not a regular file: submit the file itself", path)
	}
	if id, ok := idOf(st); ok {
		if c, hit := course[id]; hit {
			return fmt.Sprintf("%s is the course's own file %s (a hard link): submit your own copy", path, c)
		}
	}
	return ""
}

// courseFileIDs indexes the files under root/labs by device and inode, to recognise a hard link
// to one of them.
func courseFileIDs(root string) map[fileID]string {
	ids := map[fileID]string{}
	_ = filepath.WalkDir(filepath.Join(root, "labs"), func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		if st, err := os.Lstat(p); err == nil {
			if id, ok := idOf(st); ok {
				ids[id] = p
			}
		}
		return nil
	})
	return ids
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
