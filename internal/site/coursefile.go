package site

import (
	"errors"
	"fmt"
	"regexp"

	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/strictyaml"
	"github.com/kernel-labs/kernellabs/site/theme"
)

// The theme's course.yaml: the repository's address, and the chapters planned that have no
// lab folder yet.

// chapterRE is a chapter's name, its lab folder's: NN_name.
var chapterRE = regexp.MustCompile(`^(\d\d)_[a-z0-9_]+$`)

type plannedChapter struct {
	Name    string   `yaml:"name"`
	Title   lab.Text `yaml:"title"`
	Summary lab.Text `yaml:"summary"`
}

// courseFile is the theme's course.yaml.
type courseFile struct {
	// Repository is where the course's code lives; every page links to it.
	Repository string           `yaml:"repository"`
	Chapters   []plannedChapter `yaml:"chapters"`
}

func readCourseFile() (*courseFile, error) {
	data, err := theme.FS.ReadFile("course.yaml")
	if err != nil {
		return nil, err
	}
	return parseCourseFile(data)
}

// parseCourseFile decodes course.yaml strictly: an unknown key is an error, not ignored.
func parseCourseFile(data []byte) (*courseFile, error) {
	var doc courseFile
	if err := decodeYAML("site/theme/course.yaml", data, &doc); err != nil {
		return nil, fmt.Errorf("%w (it holds repository: and chapters:, each chapter name:, title: and summary:)", err)
	}
	for _, p := range doc.Chapters {
		if !chapterRE.MatchString(p.Name) {
			return nil, fmt.Errorf("site/theme/course.yaml: chapter %q: a name is a lab folder's name, NN_name (two digits, then lower-case words joined by _)", p.Name)
		}
	}
	return &doc, nil
}

// decodeYAML decodes a YAML file of the course strictly (internal/strictyaml: an unknown key or
// a value that does not fit is an error); each problem is an error at file:line.
func decodeYAML(file string, data []byte, v any) error {
	var all []error
	for _, e := range strictyaml.Unmarshal(data, v) {
		all = append(all, &lab.FileError{File: file, Line: e.Line, Msg: e.Msg})
	}
	return errors.Join(all...)
}

func plannedChapters() ([]plannedChapter, error) {
	doc, err := readCourseFile()
	if err != nil {
		return nil, err
	}
	return doc.Chapters, nil
}
