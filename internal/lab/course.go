package lab

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// marker is a file that only the course's root folder has.
const marker = "labs/common/kl.cuh"

// FindRoot returns the course root: $LABRUN_ROOT, or the nearest folder at or above dir that
// holds labs/common/kl.cuh.
func FindRoot(dir string) (string, error) {
	if r := os.Getenv("LABRUN_ROOT"); r != "" {
		if _, err := os.Stat(filepath.Join(r, marker)); err != nil {
			return "", fmt.Errorf("LABRUN_ROOT=%s is not the course folder (no %s)", r, marker)
		}
		return filepath.Abs(r)
	}
	d, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(d, marker)); err == nil {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", errors.New("not inside the course folder: run labrun from the repository (or set LABRUN_ROOT)")
		}
		d = parent
	}
}

var labDirRE = regexp.MustCompile(`^(\d\d)_[a-z0-9_]+$`)

// LabDirs lists the lab folders (NN_name) under root/labs that have a lab.yaml, in order.
func LabDirs(root string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(root, "labs"))
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, e := range entries {
		if !e.IsDir() || !labDirRE.MatchString(e.Name()) {
			continue
		}
		if _, err := os.Stat(filepath.Join(root, "labs", e.Name(), "lab.yaml")); err == nil {
			dirs = append(dirs, e.Name())
		}
	}
	sort.Strings(dirs)
	return dirs, nil
}

// UnknownLabError says which labs exist.
type UnknownLabError struct {
	Asked string
	Known []string
}

func (e *UnknownLabError) Error() string {
	return fmt.Sprintf("unknown lab %q: the labs are %s (run `labrun list`)", e.Asked, strings.Join(e.Known, ", "))
}

// Resolve turns "3", "03", "03_grouped_gemm" or "grouped_gemm" into a lab folder name.
func Resolve(root, name string) (string, error) {
	dirs, err := LabDirs(root)
	if err != nil {
		return "", err
	}
	want := strings.TrimSpace(name)
	if len(want) == 1 && want[0] >= '0' && want[0] <= '9' {
		want = "0" + want
	}
	for _, d := range dirs {
		if d == want || d[:2] == want || d[3:] == want {
			return d, nil
		}
	}
	return "", &UnknownLabError{Asked: name, Known: dirs}
}

// Load resolves a lab name and loads its manifest.
func Load(root, name string) (*Manifest, error) {
	dir, err := Resolve(root, name)
	if err != nil {
		return nil, err
	}
	return LoadManifest(filepath.Join(root, "labs", dir))
}
