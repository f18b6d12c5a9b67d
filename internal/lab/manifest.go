package lab

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/kernel-labs/kernellabs/internal/strictyaml"
)

// Text is a string in both course languages.
type Text struct {
	EN string `yaml:"en" json:"en"`
	ZH string `yaml:"zh" json:"zh"`
}

// Manifest is a lab's lab.yaml: what the lab is, its suites of variants and problems.
type Manifest struct {
	ID      string        `yaml:"id"`      // "01"
	Title   Text          `yaml:"title"`   // chapter title
	Summary Text          `yaml:"summary"` // one paragraph for the course index
	Timeout time.Duration `yaml:"timeout"` // per variant × problem job; default 60s
	// Ranks makes the lab a job of ranks, one process per GPU (collectives: see ranks.go); nil
	// for a lab of one process on one device.
	Ranks  *RankSpec `yaml:"ranks"`
	Suites []*Suite  `yaml:"suites"`
	// Helpers are kernels that variants use but that are not variants themselves (a device-side
	// random fill, say). Drivers find them with Env.KernelByEntry.
	Helpers []HelperKernel `yaml:"helpers"`
	// Grading says how `labrun grade` scores the lab's exercises (nil: derived; see Grading).
	Grading *Grading `yaml:"grading"`
	// CustomFlags are the flags of `labrun NN` that make a custom problem (custom.go).
	CustomFlags []*CustomFlag `yaml:"custom_flags"`

	Dir  string `yaml:"-"` // absolute path of the lab directory
	Name string `yaml:"-"` // directory name, e.g. "01_device_props"
	path string
	keys map[string]int // the line of each top-level key, for validation messages
}

// Suite is a family of variants that solve the same problems and are compared with one baseline.
type Suite struct {
	Name      string  `yaml:"name"`
	Title     Text    `yaml:"title"`
	Metric    string  `yaml:"metric"`    // the headline rate: "tflops", "gbps" or "us" (time per op)
	Baseline  string  `yaml:"baseline"`  // variant that the others are compared with
	Tolerance float64 `yaml:"tolerance"` // relative error allowed (‖out−ref‖/‖ref‖)
	FlushL2   bool    `yaml:"flush_l2"`  // flush L2 before each timed repetition
	// TimeHostLaunches: the times include the host's launches, for a suite that measures them
	// (lab 01's launch cost); otherwise each timed run is queued behind a hold first (hold.go).
	TimeHostLaunches bool       `yaml:"time_host_launches"`
	Variants         []*Variant `yaml:"variants"`
	Problems         ProblemSet `yaml:"problems"`

	line int
}

// Variant is one way of solving a suite's problems: a kernel, or a library call.
type Variant struct {
	Name    string           `yaml:"name"`
	Title   Text             `yaml:"title"`
	File    string           `yaml:"file"`     // kernel file, relative to the lab directory
	Entry   string           `yaml:"entry"`    // extern "C" kernel name in File
	Library string           `yaml:"library"`  // a vendor call instead of a kernel ("cublas_sgemm")
	Peer    string           `yaml:"peer"`     // a Python script (PyTorch, Triton) run as a peer: peer.go
	Needs   []string         `yaml:"needs"`    // requirements: "nvidia", "sm_90a", "sm_80", "cublas", "nccl", "nccl_device", "gpu"
	EmuSkip string           `yaml:"emu_skip"` // why the emulator cannot run it (e.g. inline PTX)
	Params  map[string]int64 `yaml:"params"`   // launch parameters the driver reads (block size...)
	Flags   []string         `yaml:"flags"`    // extra compiler flags for File

	Suite *Suite `yaml:"-"`
	line  int
}

// HelperKernel is a kernel file and entry that the engine builds and loads for the driver.
type HelperKernel struct {
	File    string   `yaml:"file"`
	Entry   string   `yaml:"entry"`
	Needs   []string `yaml:"needs"` // as a variant's: [nvidia] for an NVIDIA-only helper
	EmuSkip string   `yaml:"emu_skip"`

	line int
}

// ProblemSet holds the problems of a suite for each use.
type ProblemSet struct {
	GPU   []Problem `yaml:"gpu"`   // the full set for a real GPU
	Emu   []Problem `yaml:"emu"`   // small sizes for the CPU emulator
	Grade []Problem `yaml:"grade"` // grading set, with edge cases
}

// All is every problem of the three sets in order: the GPU set, the emulator's, then the grading
// set (a problem in two sets is there twice).
func (ps ProblemSet) All() []Problem { return slices.Concat(ps.GPU, ps.Emu, ps.Grade) }

// Problem is one problem instance: a name and integer parameters (sizes, counts).
type Problem struct {
	Name   string
	Params map[string]int64
	Quick  bool // part of the --quick subset
	Title  Text // how pages name it, where the name is words: {zh: ...}, en defaults to Name
}

// Int returns a parameter, or def when the problem does not set it.
func (p Problem) Int(key string, def int64) int64 {
	if v, ok := p.Params[key]; ok {
		return v
	}
	return def
}

// UnmarshalYAML reads `{name: "1 MiB", bytes: 1MiB, quick: true}`: every key but name and quick
// is an integer parameter, with optional KiB/MiB/GiB suffixes.
func (p *Problem) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return strictyaml.At(n, "a problem is a mapping like {name: small, m: 128}")
	}
	p.Params = map[string]int64{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Value == "title" { // a mapping, unlike the other keys
			if errs := strictyaml.DecodeIn(v, &p.Title, "title"); len(errs) > 0 {
				return errs[0]
			}
			if v.Kind != yaml.MappingNode || p.Title.ZH == "" {
				return strictyaml.At(v, "a problem's title is {zh: ...} (en: too, where it is not the name)")
			}
			continue
		}
		if v.Kind != yaml.ScalarNode {
			return strictyaml.At(v, "problem key %s takes one value, not a list or mapping", k.Value)
		}
		if _, dup := p.Params[k.Value]; dup || (k.Value == "name" && p.Name != "") {
			return strictyaml.At(k, "problem key %s given twice", k.Value)
		}
		switch k.Value {
		case "name":
			p.Name = v.Value
		case "quick":
			b, err := strconv.ParseBool(v.Value)
			if err != nil {
				return strictyaml.At(v, "quick must be true or false, not %q", v.Value)
			}
			p.Quick = b
		default:
			x, err := ParseSize(v.Value)
			if err != nil {
				return strictyaml.At(v, "problem parameter %s: %v", k.Value, err)
			}
			p.Params[k.Value] = x
		}
	}
	if p.Name == "" {
		p.Name = p.defaultName()
	}
	return nil
}

func (p Problem) defaultName() string {
	keys := make([]string, 0, len(p.Params))
	for k := range p.Params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, p.Params[k])
	}
	return strings.Join(parts, ",")
}

var sizeRE = regexp.MustCompile(`^\s*(-?\d+)\s*(KiB|MiB|GiB|TiB|Ki|Mi|Gi|K|M|G)?\s*$`)

// ParseSize reads an integer with an optional binary (KiB, MiB, GiB) or decimal (K, M, G) suffix.
func ParseSize(s string) (int64, error) {
	m := sizeRE.FindStringSubmatch(s)
	if m == nil {
		return 0, fmt.Errorf("%q is not an integer (suffixes KiB, MiB, GiB, K, M, G are accepted)", s)
	}
	v, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q: %v", s, err)
	}
	mult := map[string]int64{"": 1, "K": 1e3, "M": 1e6, "G": 1e9,
		"Ki": 1 << 10, "KiB": 1 << 10, "Mi": 1 << 20, "MiB": 1 << 20, "Gi": 1 << 30, "GiB": 1 << 30, "TiB": 1 << 40}[m[2]]
	return v * mult, nil
}

// ProblemSets are the names of a suite's problem sets (lab.yaml's problems: gpu, emu, grade).
var ProblemSets = []string{"gpu", "emu", "grade"}

// ProblemsFor returns the problem set for a use: "gpu", "emu" or "grade".
func (s *Suite) ProblemsFor(set string) ([]Problem, error) {
	switch set {
	case "gpu":
		return s.Problems.GPU, nil
	case "emu":
		return s.Problems.Emu, nil
	case "grade":
		return s.Problems.Grade, nil
	}
	return nil, fmt.Errorf("unknown problem set %q (gpu, emu or grade)", set)
}

// Variant finds a variant by name.
func (s *Suite) Variant(name string) *Variant {
	return byName(s.Variants, name, func(v *Variant) string { return v.Name })
}

// Key names the variant within its lab: suites may reuse a variant name (each suite has its own
// cuBLAS baseline, say), so loaded kernels are found by suite and name.
func (v *Variant) Key() string {
	if v.Suite == nil {
		return v.Name
	}
	return v.Suite.Name + "/" + v.Name
}

// IsKernel reports whether the variant is a kernel of the lab (not a library call).
func (v *Variant) IsKernel() bool { return v.File != "" }

// IsPeer reports whether the variant is a peer implementation in Python (peer.go).
func (v *Variant) IsPeer() bool { return v.Peer != "" }

// NeedNVIDIA marks a kernel that compiles for NVIDIA GPUs only (inline PTX, wmma, TMA, wgmma,
// mbarrier, clusters, 32-lane warps): it is not compiled for AMD GPUs (labrun hip-check) and not
// run with 64-lane warps on the emulator. Every other kernel is portable: kl.cuh's layer only.
const NeedNVIDIA = "nvidia"

// Portable reports whether the variant is a kernel that compiles for both vendors.
func (v *Variant) Portable() bool { return v.IsKernel() && !slices.Contains(v.Needs, NeedNVIDIA) }

// KernelBuild is one kernel file of a lab as it is compiled: its flags and the entries in it.
type KernelBuild struct {
	File    string   // relative to the lab directory
	Flags   []string // the variants' extra compiler flags
	Entries []string // extern "C" kernels that variants or helpers use
}

// PortableKernels lists the lab's portable kernel files (variants and helpers without
// needs: [nvidia]), once per file and flags, in manifest order.
func (m *Manifest) PortableKernels() []KernelBuild {
	var out []KernelBuild
	index := map[string]int{}
	add := func(file, entry string, flags []string) {
		key := file + "|" + strings.Join(flags, " ")
		i, ok := index[key]
		if !ok {
			i = len(out)
			index[key] = i
			out = append(out, KernelBuild{File: file, Flags: flags})
		}
		if !slices.Contains(out[i].Entries, entry) {
			out[i].Entries = append(out[i].Entries, entry)
		}
	}
	for _, h := range m.Helpers {
		if !slices.Contains(h.Needs, NeedNVIDIA) {
			add(h.File, h.Entry, nil)
		}
	}
	for _, s := range m.Suites {
		for _, v := range s.Variants {
			if v.Portable() {
				add(v.File, v.Entry, v.Flags)
			}
		}
	}
	return out
}

// FileError is a problem in one of the course's files (a lab.yaml, a chapter's notes, course.yaml),
// located by file and line.
type FileError struct {
	File string
	Line int
	Msg  string
}

func (e *FileError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// LoadManifest reads and validates dir/lab.yaml.
func LoadManifest(dir string) (*Manifest, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(abs, "lab.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading lab manifest: %w", err)
	}
	return ParseManifest(path, data)
}

// ParseManifest parses and validates a manifest; every error carries file:line.
func ParseManifest(path string, data []byte) (*Manifest, error) {
	m := &Manifest{path: path, Dir: filepath.Dir(path), Name: filepath.Base(filepath.Dir(path))}
	root, perr := strictyaml.Parse(data)
	if perr != nil {
		return nil, m.errAt(perr.Line, "%s", perr.Msg)
	}
	if errs := strictyaml.Decode(root, m); len(errs) > 0 {
		all := make([]error, len(errs))
		for i, e := range errs {
			all[i] = m.errAt(e.Line, "%s", e.Msg)
		}
		return nil, errors.Join(all...)
	}
	m.attachLines(root)
	if err := m.validate(); err != nil {
		return nil, err
	}
	return m, nil
}

// attachLines records the lines of the top-level keys, suites, variants, helpers and custom
// flags, for validation messages.
func (m *Manifest) attachLines(root *yaml.Node) {
	doc := root
	if doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
		doc = doc.Content[0]
	}
	m.keys = map[string]int{}
	for i := 0; i+1 < len(doc.Content); i += 2 {
		m.keys[doc.Content[i].Value] = doc.Content[i].Line
	}
	m.attachGradingLines(doc)
	if hs := mapValue(doc, "helpers"); hs != nil {
		for i, hn := range hs.Content {
			if i < len(m.Helpers) {
				m.Helpers[i].line = hn.Line
			}
		}
	}
	if fs := mapValue(doc, "custom_flags"); fs != nil {
		for i, fn := range fs.Content {
			if i < len(m.CustomFlags) {
				m.CustomFlags[i].line = fn.Line
			}
		}
	}
	suites := mapValue(doc, "suites")
	if suites == nil {
		return
	}
	for i, sn := range suites.Content {
		if i >= len(m.Suites) {
			break
		}
		m.Suites[i].line = sn.Line
		if vs := mapValue(sn, "variants"); vs != nil {
			for j, vn := range vs.Content {
				if j < len(m.Suites[i].Variants) {
					m.Suites[i].Variants[j].line = vn.Line
				}
			}
		}
	}
}

func mapValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

var knownMetrics = map[string]bool{"tflops": true, "gbps": true, "us": true}
var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_]*$`)

func (m *Manifest) errAt(line int, format string, args ...any) error {
	return &FileError{File: m.path, Line: line, Msg: fmt.Sprintf(format, args...)}
}

// keyLine is the line of a top-level key, or 1 (the top of the file) when the key is missing.
func (m *Manifest) keyLine(key string) int {
	if l := m.keys[key]; l > 0 {
		return l
	}
	return 1
}

func (m *Manifest) validate() error {
	var errs []error
	if m.ID == "" {
		errs = append(errs, m.errAt(1, "missing id (the lab number, e.g. \"01\")"))
	}
	if m.Title.EN == "" || m.Title.ZH == "" {
		errs = append(errs, m.errAt(m.keyLine("title"), "title needs both en and zh"))
	}
	if m.Timeout == 0 {
		m.Timeout = 60 * time.Second
	}
	if err := m.Ranks.validate(); err != nil {
		errs = append(errs, m.errAt(1, "ranks: %v", err))
	}
	if len(m.Suites) == 0 {
		errs = append(errs, m.errAt(m.keyLine("suites"), "no suites: a lab needs at least one suite of variants"))
	}
	seenSuite := map[string]bool{}
	for _, s := range m.Suites {
		if !nameRE.MatchString(s.Name) {
			errs = append(errs, m.errAt(s.line, "suite name %q must be lower-case letters, digits and _", s.Name))
		}
		if seenSuite[s.Name] {
			errs = append(errs, m.errAt(s.line, "suite %q defined twice", s.Name))
		}
		seenSuite[s.Name] = true
		if !knownMetrics[s.Metric] {
			errs = append(errs, m.errAt(s.line, "suite %s: metric %q must be one of tflops, gbps, us", s.Name, s.Metric))
		}
		if s.Tolerance < 0 {
			errs = append(errs, m.errAt(s.line, "suite %s: negative tolerance", s.Name))
		}
		if len(s.Problems.GPU) == 0 {
			errs = append(errs, m.errAt(s.line, "suite %s: problems.gpu is empty", s.Name))
		}
		seenVar := map[string]bool{}
		for _, v := range s.Variants {
			v.Suite = s
			switch {
			case !nameRE.MatchString(v.Name):
				errs = append(errs, m.errAt(v.line, "variant name %q must be lower-case letters, digits and _", v.Name))
			case seenVar[v.Name]:
				errs = append(errs, m.errAt(v.line, "variant %q defined twice in suite %s", v.Name, s.Name))
			case v.Peer != "":
				errs = append(errs, m.validatePeer(v)...)
			case v.File == "" && v.Library == "":
				errs = append(errs, m.errAt(v.line, "variant %s: set file and entry (a kernel), library (a vendor call) or peer (a Python script)", v.Name))
			case v.File != "" && v.Entry == "":
				errs = append(errs, m.errAt(v.line, "variant %s: file %s needs an entry (the extern \"C\" kernel name)", v.Name, v.File))
			case v.File != "":
				if _, err := os.Stat(filepath.Join(m.Dir, v.File)); err != nil {
					errs = append(errs, m.errAt(v.line, "variant %s: kernel file %s not found in %s", v.Name, v.File, m.Dir))
				}
			}
			seenVar[v.Name] = true
			errs = append(errs, m.validateNeeds(v.line, "variant "+v.Name, v.Needs)...)
		}
		if s.Baseline != "" && s.Variant(s.Baseline) == nil {
			errs = append(errs, m.errAt(s.line, "suite %s: baseline %q is not one of its variants", s.Name, s.Baseline))
		}
	}
	for _, h := range m.Helpers {
		if h.File == "" || h.Entry == "" {
			errs = append(errs, m.errAt(h.line, "helpers: each helper needs file and entry"))
		} else if _, err := os.Stat(filepath.Join(m.Dir, h.File)); err != nil {
			errs = append(errs, m.errAt(h.line, "helper kernel file %s not found in %s", h.File, m.Dir))
		}
		errs = append(errs, m.validateNeeds(h.line, "helper "+h.Entry, h.Needs)...)
	}
	if m.Timeout < 0 {
		errs = append(errs, m.errAt(m.keyLine("timeout"), "timeout: %s is negative: give the time limit of one job, e.g. 120s", m.Timeout))
	}
	for _, s := range m.Suites {
		errs = append(errs, m.validateProblemNames(s)...)
	}
	errs = append(errs, m.validateCustomFlags()...)
	errs = append(errs, m.validateGrading()...)
	return errors.Join(errs...)
}

// validateProblemNames refuses two problems of one set with the same name: results are kept by
// suite, variant and problem name, so the second would overwrite the first.
func (m *Manifest) validateProblemNames(s *Suite) []error {
	var errs []error
	for _, set := range ProblemSets {
		ps, _ := s.ProblemsFor(set)
		seen := map[string]bool{}
		for _, p := range ps {
			if seen[p.Name] {
				errs = append(errs, m.errAt(s.line, "suite %s: two problems of problems.%s are named %q: results are kept by name, give each its own", s.Name, set, p.Name))
			}
			seen[p.Name] = true
		}
	}
	return errs
}

var smNeedRE = regexp.MustCompile(`^sm_[0-9]{2,3}a?$`)

// validateNeeds checks a variant's or helper's needs: known words only, and an NVIDIA
// architecture (sm_80, sm_90a) only together with nvidia, so that every kernel that needs NVIDIA
// hardware is left out of the HIP check and of wave64 runs.
func (m *Manifest) validateNeeds(line int, what string, needs []string) []error {
	var errs []error
	for _, n := range needs {
		switch {
		case n == "gpu" || n == "cublas" || n == "nccl" || n == NeedNVIDIA || n == NeedTorch || n == NeedTriton:
		case n == NeedNCCLDevice:
			if !slices.Contains(needs, NeedNVIDIA) {
				errs = append(errs, m.errAt(line, "%s: needs %s, NCCL's device API: add nvidia to its needs "+
					"(RCCL has no such API, so the kernel is NVIDIA-only)", what, n))
			}
		case smNeedRE.MatchString(n):
			if !slices.Contains(needs, NeedNVIDIA) {
				errs = append(errs, m.errAt(line, "%s: needs %s, an NVIDIA architecture: add nvidia to its needs "+
					"(the kernel is NVIDIA-only; the chapter says what the AMD equivalent is)", what, n))
			}
		default:
			errs = append(errs, m.errAt(line, "%s: unknown need %q (known: nvidia, gpu, cublas, nccl, nccl_device, torch, triton, sm_NN such as sm_80 or sm_90a)", what, n))
		}
	}
	return errs
}

// Suite finds a suite by name.
func (m *Manifest) Suite(name string) *Suite {
	return byName(m.Suites, name, func(s *Suite) string { return s.Name })
}

// byName is the item of items that nameOf calls name (nil when none is): the lookup of suites,
// variants and custom flags.
func byName[T any](items []*T, name string, nameOf func(*T) string) *T {
	if i := slices.IndexFunc(items, func(x *T) bool { return nameOf(x) == name }); i >= 0 {
		return items[i]
	}
	return nil
}

// DeviceCount is how many devices one process of the lab opens: 1 (a lab of ranks opens one per
// rank process).
func (m *Manifest) DeviceCount() int { return 1 }

// Path is the manifest's file path.
func (m *Manifest) Path() string { return m.path }
