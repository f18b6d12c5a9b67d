package profile

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/results"
)

// Schema is the version of the profile file format.
const Schema = 1

// File is a lab's profiles on one device: results/<device>/<NN_lab>.profile.json.
type File struct {
	Schema   int            `json:"schema"`
	Lab      string         `json:"lab"`
	Device   gpu.DeviceInfo `json:"device"`
	Tool     string         `json:"tool"` // "NVIDIA (R) Nsight Compute Command Line Profiler ... Version 2025.3.1"
	Commit   string         `json:"commit,omitempty"`
	Time     time.Time      `json:"time"` // of the latest profile merged in
	Profiles []Profile      `json:"profiles"`
}

// Profile is one kernel launch of one variant on one problem, as ncu measured it.
type Profile struct {
	Suite   string            `json:"suite"`
	Variant string            `json:"variant"`
	Problem string            `json:"problem"`
	Kernel  string            `json:"kernel"`
	Launch  int               `json:"launch"` // which profiled launch of the variant (0: the first)
	Kind    Kind              `json:"kind"`
	Block   string            `json:"block,omitempty"`
	Grid    string            `json:"grid,omitempty"`
	Metrics map[string]Metric `json:"metrics"`
	Seed    uint64            `json:"seed"`
	Command string            `json:"command"` // the ncu command line that measured it
	RunAt   time.Time         `json:"run_at"`
}

// Key identifies a profile within a file.
func (p Profile) Key() string {
	return fmt.Sprintf("%s/%s/%s/%s/%d", p.Suite, p.Variant, p.Problem, p.Kernel, p.Launch)
}

// Metric returns a metric's value and whether the profile has it as a number.
func (p Profile) Metric(name string) (float64, bool) {
	m, ok := p.Metrics[name]
	return m.Value, ok && m.Text == ""
}

// PathFor is results/<device>/<lab>.profile.json under root.
func PathFor(root string, info gpu.DeviceInfo, lab string) string {
	return filepath.Join(root, "results", results.DeviceSlug(info), lab+".profile.json")
}

// Load reads a profile file; a missing file is (nil, nil), one that does not parse a
// *results.CorruptError (labrun never overwrites it).
func Load(path string) (*File, error) {
	data, found, err := results.ReadOptional(path)
	if !found || err != nil {
		return nil, err
	}
	var f File
	if err := results.DecodeStrict(path, data, &f); err != nil {
		return nil, err
	}
	if f.Schema != Schema {
		return nil, &results.CorruptError{Path: path, Err: fmt.Errorf("schema %d, this labrun reads schema %d", f.Schema, Schema)}
	}
	for i, p := range f.Profiles {
		if p.Suite == "" || p.Variant == "" || p.Problem == "" || p.Kernel == "" {
			return nil, &results.CorruptError{Path: path, Err: fmt.Errorf("profile %d lacks suite, variant, problem or kernel", i)}
		}
	}
	return &f, nil
}

// LoadAll reads the profile file of a lab for every device folder under root/results.
func LoadAll(root, lab string) ([]*File, []error) {
	paths, _ := filepath.Glob(filepath.Join(root, "results", "*", lab+".profile.json"))
	var files []*File
	var errs []error
	for _, p := range paths {
		f, err := Load(p)
		if err != nil {
			errs = append(errs, err)
		} else if f != nil {
			files = append(files, f)
		}
	}
	return files, errs
}

// Merge returns old with new's profiles in place of those with the same variant and problem (a
// new profile of a variant replaces every launch recorded for it), the others kept.
func Merge(old, new *File) *File {
	if old == nil || old.Device.Name != new.Device.Name {
		return new
	}
	replaced := map[string]bool{}
	for _, p := range new.Profiles {
		replaced[p.Suite+"/"+p.Variant+"/"+p.Problem] = true
	}
	out := *new
	out.Profiles = nil
	for _, p := range old.Profiles {
		if !replaced[p.Suite+"/"+p.Variant+"/"+p.Problem] {
			out.Profiles = append(out.Profiles, p)
		}
	}
	out.Profiles = append(out.Profiles, new.Profiles...)
	return &out
}

// Save merges f into the file at path and writes it atomically. A corrupt file there is left
// alone and f goes beside it, so that nothing recorded is lost; the error says where.
func Save(path string, f *File) (string, error) {
	old, err := Load(path)
	var ce *results.CorruptError
	if errors.As(err, &ce) {
		side := strings.TrimSuffix(path, ".json") + ".new-" + time.Now().UTC().Format("20060102T150405") + ".json"
		if serr := write(side, f); serr != nil {
			return "", fmt.Errorf("%v; saving these profiles to %s also failed: %v", err, side, serr)
		}
		return side, fmt.Errorf("%v\nthese profiles were saved to %s", err, side)
	}
	if err != nil {
		return "", err
	}
	return path, write(path, Merge(old, f))
}

func write(path string, f *File) error {
	f.Schema = Schema
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	return results.WriteFileAtomic(path, append(data, '\n'))
}

// Find returns the first launch recorded for a variant on a problem, or nil.
func (f *File) Find(variant, problem string) *Profile {
	for i := range f.Profiles {
		p := &f.Profiles[i]
		if p.Variant == variant && (problem == "" || p.Problem == problem) {
			return p
		}
	}
	return nil
}
