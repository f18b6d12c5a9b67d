// Package results reads and writes the measured results of a lab on one device:
// results/<device>/<NN_lab>.json. Only real runs write them; writes are atomic (temporary file and
// rename), and a file that does not parse is reported, never overwritten.
package results

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gofrs/flock"

	"github.com/kernel-labs/kernellabs/internal/bench"
	"github.com/kernel-labs/kernellabs/internal/check"
	"github.com/kernel-labs/kernellabs/internal/gpu"
)

// Schema is the version of the file format; bump it on incompatible changes.
const Schema = 1

// Status of one entry.
const (
	StatusOK      = "ok"      // checked correct and timed
	StatusWrong   = "wrong"   // ran, but the check failed
	StatusFailed  = "failed"  // an error: launch, compile, library...
	StatusCrashed = "crashed" // the worker process died (segfault, illegal address...)
	StatusTimeout = "timeout" // the worker passed the time limit (a hang)
	StatusSkipped = "skipped" // not run here, with the reason (needs sm_90a, GPU-only...)
)

// File is one lab's results on one device.
type File struct {
	Schema    int            `json:"schema"`
	Lab       string         `json:"lab"` // "01_device_props"
	Device    gpu.DeviceInfo `json:"device"`
	Toolchain Toolchain      `json:"toolchain"`
	Commit    string         `json:"commit,omitempty"`
	Time      time.Time      `json:"time"` // of the latest run merged into the file
	Command   string         `json:"command,omitempty"`
	// Ranks is the world size of a lab of ranks (labs 04 and 05: one process per GPU); a run at
	// another world size is another file (RanksSlug), so a 2-GPU and an 8-GPU run both stay.
	Ranks   int            `json:"ranks,omitempty"`
	Entries []Entry        `json:"entries"`
	Extra   map[string]any `json:"extra,omitempty"` // lab-specific: lab 01's properties and ceilings
}

// Toolchain records what compiled the kernels.
type Toolchain struct {
	Compiler string `json:"compiler"` // "nvcc", "c++"
	Version  string `json:"version"`
	Arch     string `json:"arch,omitempty"`
}

// Entry is one variant on one problem.
type Entry struct {
	Suite    string           `json:"suite"`
	Variant  string           `json:"variant"`
	Problem  string           `json:"problem"`
	Params   map[string]int64 `json:"params,omitempty"`
	Custom   bool             `json:"custom,omitempty"` // a problem given on the command line
	Status   string           `json:"status"`
	Error    string           `json:"error,omitempty"`
	Check    *check.Report    `json:"check,omitempty"`
	Time     *bench.Stats     `json:"time,omitempty"` // per Run
	Ops      int              `json:"ops,omitempty"`  // operations per Run (lab 01 launch latency)
	TFLOPs   float64          `json:"tflops,omitempty"`
	GBps     float64          `json:"gbps,omitempty"`
	PerOpUs  float64          `json:"per_op_us,omitempty"`
	Baseline string           `json:"baseline,omitempty"`
	Speedup  float64          `json:"speedup,omitempty"` // baseline median / this median, same run
	Kernel   *gpu.KernelAttrs `json:"kernel,omitempty"`
	Emulated bool             `json:"emulated,omitempty"` // timings are not performance figures
	Data     map[string]any   `json:"data,omitempty"`     // lab-specific data (lab 03's SM timeline)
	Seed     uint64           `json:"seed"`
	RunAt    time.Time        `json:"run_at"`
}

// Key identifies an entry within a file.
func (e Entry) Key() string { return e.Suite + "/" + e.Variant + "/" + e.Problem }

// OK reports whether the entry was checked correct and timed.
func (e Entry) OK() bool { return e.Status == StatusOK }

var slugRE = regexp.MustCompile(`[^a-z0-9]+`)

// DeviceSlug names the results folder of a device: "NVIDIA H200" → "nvidia-h200".
func DeviceSlug(info gpu.DeviceInfo) string {
	if info.Emulated {
		return "emulator"
	}
	s := strings.Trim(slugRE.ReplaceAllString(strings.ToLower(info.Name), "-"), "-")
	if s == "" {
		s = "unknown-device"
	}
	return s
}

// RanksSlug is the results folder of a run of ranks processes on info's kind of GPU: the
// device's slug, with "-xN" for N > 1 ranks ("nvidia-h200-x8"), so that world sizes keep their
// own results.
func RanksSlug(info gpu.DeviceInfo, ranks int) string {
	if ranks > 1 && !info.Emulated {
		return fmt.Sprintf("%s-x%d", DeviceSlug(info), ranks)
	}
	return DeviceSlug(info)
}

// WorldSize is the world size of f, a file in the results folder slug: its Ranks, or for a file
// recorded before files carried it, the "-xN" of its folder (RanksSlug); 1 for a lone process.
func WorldSize(f *File, slug string) int {
	if f.Ranks > 0 {
		return f.Ranks
	}
	if i := strings.LastIndex(slug, "-x"); i >= 0 && f.Device.Name != "" && slug[:i] == DeviceSlug(f.Device) {
		if n, err := strconv.Atoi(slug[i+2:]); err == nil && n > 1 {
			return n
		}
	}
	return 1
}

// PathFor is results/<device>/<lab>.json under root: the recorded results, tracked in git,
// that the site shows.
func PathFor(root string, info gpu.DeviceInfo, lab string) string {
	return filepath.Join(root, "results", DeviceSlug(info), lab+".json")
}

// LocalDir is the folder under results/ for runs that are not recorded: git ignores it and the
// site does not read it (it lies one level deeper than the device folders).
const LocalDir = "local"

// LocalPathFor is results/local/<device>/<lab>.json under root, where a student's emulator runs
// go, so that running a lab changes no tracked file.
func LocalPathFor(root string, info gpu.DeviceInfo, lab string) string {
	return filepath.Join(root, "results", LocalDir, DeviceSlug(info), lab+".json")
}

// CorruptError is returned for a results file that exists but cannot be read.
type CorruptError struct {
	Path string
	Err  error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("results file %s is corrupt (%v); labrun will not overwrite it: move it aside "+
		"(or restore it with git checkout) and run again", e.Path, e.Err)
}

func (e *CorruptError) Unwrap() error { return e.Err }

// Load reads a results file. A missing file returns (nil, nil); a file that does not parse, or
// whose schema is unknown, returns a *CorruptError.
func Load(path string) (*File, error) {
	data, found, err := ReadOptional(path)
	if !found || err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// ReadOptional reads the file at path; a missing one is not an error but found = false.
func ReadOptional(path string) (data []byte, found bool, err error) {
	data, err = os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	return data, err == nil, err
}

// DecodeStrict decodes data, the file at path, into v: no unknown fields and nothing after the
// JSON document, or a *CorruptError.
func DecodeStrict(path string, data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &CorruptError{Path: path, Err: err}
	}
	if dec.More() {
		return &CorruptError{Path: path, Err: errors.New("trailing data after the JSON document")}
	}
	return nil
}

// Parse decodes a results file's bytes, strictly.
func Parse(path string, data []byte) (*File, error) {
	var f File
	if err := DecodeStrict(path, data, &f); err != nil {
		return nil, err
	}
	if f.Schema != Schema {
		return nil, &CorruptError{Path: path, Err: fmt.Errorf("schema %d, this labrun reads schema %d", f.Schema, Schema)}
	}
	if f.Lab == "" {
		return nil, &CorruptError{Path: path, Err: errors.New("no lab name")}
	}
	for i, e := range f.Entries {
		if e.Suite == "" || e.Variant == "" || e.Problem == "" || e.Status == "" {
			return nil, &CorruptError{Path: path, Err: fmt.Errorf("entry %d lacks suite, variant, problem or status", i)}
		}
	}
	return &f, nil
}

// Merge returns old updated with the entries and metadata of new: entries of new replace those
// with the same key, the others of old are kept (a run of one variant keeps the rest). Extra keys
// of new replace those of old.
func Merge(old, new *File) *File {
	if old == nil {
		return new
	}
	out := *new
	byKey := map[string]int{}
	out.Entries = nil
	for _, e := range old.Entries {
		byKey[e.Key()] = len(out.Entries)
		out.Entries = append(out.Entries, e)
	}
	for _, e := range new.Entries {
		if i, ok := byKey[e.Key()]; ok {
			out.Entries[i] = e
		} else {
			byKey[e.Key()] = len(out.Entries)
			out.Entries = append(out.Entries, e)
		}
	}
	out.Extra = map[string]any{}
	for k, v := range old.Extra {
		out.Extra[k] = v
	}
	for k, v := range new.Extra {
		out.Extra[k] = v
	}
	if len(out.Extra) == 0 {
		out.Extra = nil
	}
	return &out
}

// Save writes f to path atomically: a temporary file in the same folder, synced, then renamed.
// An interrupted write leaves the previous file as it was.
func Save(path string, f *File) error {
	f.Schema = Schema
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding results: %w", err)
	}
	return WriteFileAtomic(path, append(data, '\n'))
}

// WriteFileAtomic writes data to path through a temporary file in the same folder, synced, then
// renamed over path: a reader sees the old file or the new one, never a part of either. Profiles
// (internal/profile) are written the same way.
func WriteFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // no-op after a successful rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// Find returns the entry with the given key parts, or nil.
func (f *File) Find(suite, variant, problem string) *Entry {
	for i := range f.Entries {
		e := &f.Entries[i]
		if e.Suite == suite && e.Variant == variant && e.Problem == problem {
			return e
		}
	}
	return nil
}

// Update changes the results file at path under an exclusive lock on path+".lock", so that runs
// that write the same file at once each read the other's entries before they write: change gets
// the current file (nil when there is none, or when it belongs to another device) and returns the
// file to save. A corrupt file is never read or overwritten: Update returns its *CorruptError
// without calling change. The lock waits at most lockWait for another run to finish its write.
func Update(path string, change func(old *File) (*File, error)) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	lock := flock.New(path + ".lock")
	ctx, cancel := context.WithTimeout(context.Background(), lockWait)
	defer cancel()
	ok, err := lock.TryLockContext(ctx, 50*time.Millisecond)
	if err != nil || !ok {
		if err == nil {
			err = ctx.Err()
		}
		return &LockedError{Path: path, Err: err}
	}
	defer lock.Unlock()
	old, err := Load(path)
	if err != nil {
		return err
	}
	f, err := change(old)
	if err != nil {
		return err
	}
	return Save(path, f)
}

// lockWait bounds how long Update waits for another run's write.
const lockWait = 2 * time.Minute

// LockedError is a results file that another process kept locked for too long.
type LockedError struct {
	Path string
	Err  error
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("results file %s stayed locked by another labrun for %s (%v): is a run stuck? remove %s.lock if none is running",
		e.Path, lockWait, e.Err, e.Path)
}

func (e *LockedError) Unwrap() error { return e.Err }
