package lab

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kernel-labs/kernellabs/internal/bench"
	"github.com/kernel-labs/kernellabs/internal/check"
	"github.com/kernel-labs/kernellabs/internal/results"
)

// A peer variant is an implementation the reader would otherwise use — torch.matmul,
// torch._grouped_mm, a Triton kernel — run by a Python script in the same run as the lab's own
// variants (lab.yaml: `peer: peers/torch_matmul.py`, needs [torch] or [torch, triton]).
//
// The protocol: the worker sends `python3 SCRIPT` one JSON object (PeerRequest: the problem as
// the driver describes it, the seed, the tolerance, the timing budget) a problem; the script
// builds its inputs on the device, checks its output against its own PyTorch reference in float32
// or float64, times it with CUDA events as the engine does, and answers with one JSON line
// (PeerReply). A peer of one process serves every problem of the worker, one line each way
// (peer_serve.go); a rank's peer reads one request on stdin and its reply is the last line of its
// stdout. Peers use labs/common/peers/klpeer.py for all of that. The
// entry is recorded like any other, with a check method that says it was checked by the peer's
// reference, not by the lab's.

// Needs of peer variants.
const (
	NeedTorch  = "torch"  // python3 imports torch and sees a CUDA device
	NeedTriton = "triton" // python3 also imports triton
)

// PythonEnv names the interpreter that runs peers (default python3 on PATH).
const PythonEnv = "LABRUN_PYTHON"

// PeerMethodPrefix starts the check method of every peer entry.
const PeerMethodPrefix = "checked by the peer's reference"

// PeerDriver is implemented by the drivers of labs with peer variants: the problem as a peer
// script reads it (sizes, scalars, the groups), and the work of one run, so that the peer's rates
// are derived exactly as the lab's own.
type PeerDriver interface {
	PeerProblem(s *Suite, p Problem) (map[string]any, Work, error)
}

// PeerRequest is the JSON object a peer script reads on stdin.
type PeerRequest struct {
	Lab     string         `json:"lab"`
	Suite   string         `json:"suite"`
	Variant string         `json:"variant"`
	Problem string         `json:"problem"`
	Params  map[string]any `json:"params"` // PeerDriver's description of the problem
	// VariantParams are the variant's params from lab.yaml (tile sizes of a Triton kernel, say).
	VariantParams map[string]int64 `json:"variant_params"`
	Seed          uint64           `json:"seed"`
	Device        int              `json:"device"` // CUDA device index
	Tolerance     float64          `json:"tolerance"`
	FlushL2       bool             `json:"flush_l2"`
	Bench         PeerBench        `json:"bench"`
	Ranks         *PeerRanks       `json:"ranks,omitempty"` // a lab of ranks: this rank's place (peer_ranks.go)
}

// PeerBench is the engine's timing method (bench.Options) for the script.
type PeerBench struct {
	Warmup      int     `json:"warmup"`
	WarmupMinMs float64 `json:"warmup_min_ms"`
	MinReps     int     `json:"min_reps"`
	MaxReps     int     `json:"max_reps"`
	BudgetMs    float64 `json:"budget_ms"`
}

// PeerReply is the last line a peer script prints.
type PeerReply struct {
	Status    string    `json:"status"` // ok, wrong, skipped or failed
	Error     string    `json:"error,omitempty"`
	Check     *PeerChk  `json:"check,omitempty"`
	SamplesMs []float64 `json:"samples_ms,omitempty"` // one timed repetition each
	Versions  any       `json:"versions,omitempty"`   // torch, triton, CUDA: kept in the entry's data
	Batch     int       `json:"batch,omitempty"`      // a peer of ranks: runs per timed batch (peer_ranks.go)
}

// PeerChk is the peer's own check of its output.
type PeerChk struct {
	OK        bool    `json:"ok"`
	Method    string  `json:"method"`
	Checked   int     `json:"checked"`
	RelErr    float64 `json:"rel_err"`
	MaxAbsErr float64 `json:"max_abs_err"`
	Tolerance float64 `json:"tolerance"`
}

func peerBench(o bench.Options) PeerBench {
	return PeerBench{Warmup: o.Warmup, WarmupMinMs: float64(o.WarmupMin) / 1e6, MinReps: o.MinReps,
		MaxReps: o.MaxReps, BudgetMs: float64(o.Budget) / 1e6}
}

// validatePeer checks a peer variant: a Python script in the lab, and needs that say what it imports.
func (m *Manifest) validatePeer(v *Variant) []error {
	var errs []error
	if v.File != "" || v.Library != "" || v.Entry != "" {
		errs = append(errs, m.errAt(v.line, "variant %s: a peer is a Python script alone: drop file, entry and library", v.Name))
	}
	if filepath.IsAbs(v.Peer) || strings.Contains(v.Peer, "..") || filepath.Ext(v.Peer) != ".py" {
		errs = append(errs, m.errAt(v.line, "variant %s: peer %q must be a .py script inside the lab (e.g. peers/torch_matmul.py)", v.Name, v.Peer))
	} else if _, err := os.Stat(filepath.Join(m.Dir, v.Peer)); err != nil {
		errs = append(errs, m.errAt(v.line, "variant %s: peer script %s not found in %s", v.Name, v.Peer, m.Dir))
	}
	has := func(n string) bool {
		for _, x := range v.Needs {
			if x == n {
				return true
			}
		}
		return false
	}
	if !has(NeedTorch) {
		errs = append(errs, m.errAt(v.line, "variant %s: a peer needs torch (add needs: [torch], and triton for a Triton kernel)", v.Name))
	}
	return errs
}

// pythonProbe caches, per interpreter, why peers cannot run ("" when they can), one per need set.
var pythonProbe struct {
	sync.Mutex
	why map[string]string
}

// peerSkipReason says why a variant with needs torch/triton cannot run here ("" when it can).
func peerSkipReason(needs []string, emulated bool) string {
	var mods []string
	for _, n := range needs {
		if n == NeedTorch || n == NeedTriton {
			mods = append(mods, n)
		}
	}
	if len(mods) == 0 {
		return ""
	}
	if emulated {
		return "a Python peer (" + strings.Join(mods, ", ") + ") runs on a GPU only, not on the emulator"
	}
	py := PythonInterpreter()
	key := py + "|" + strings.Join(mods, ",")
	pythonProbe.Lock()
	defer pythonProbe.Unlock()
	if why, ok := pythonProbe.why[key]; ok {
		return why
	}
	why := probePython(py, mods)
	if pythonProbe.why == nil {
		pythonProbe.why = map[string]string{}
	}
	pythonProbe.why[key] = why
	return why
}

// PythonInterpreter is the interpreter peers run with.
func PythonInterpreter() string {
	if p := os.Getenv(PythonEnv); p != "" {
		return p
	}
	return "python3"
}

// probePython imports the modules in the interpreter and asks torch for a CUDA device.
func probePython(py string, mods []string) string {
	path, err := exec.LookPath(py)
	if err != nil {
		return fmt.Sprintf("no Python interpreter %q here (install python3 with torch, or set %s)", py, PythonEnv)
	}
	script := "import sys\n"
	for _, m := range mods {
		script += fmt.Sprintf("try:\n import %s\nexcept Exception as e:\n print('%s: ' + type(e).__name__ + ': ' + str(e)); sys.exit(3)\n", m, m)
	}
	script += "if not torch.cuda.is_available():\n print('torch: no CUDA device visible to torch'); sys.exit(3)\n"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "-c", script).CombinedOutput()
	if err == nil {
		return ""
	}
	msg := strings.TrimSpace(lastLine(string(out)))
	if msg == "" {
		msg = err.Error()
	}
	return fmt.Sprintf("%s cannot run the peer: %s (pip install %s)", py, msg, strings.Join(mods, " "))
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// ParsePeerReply reads the reply from a peer's stdout: its last non-empty line, one JSON object.
func ParsePeerReply(stdout []byte) (PeerReply, error) {
	var last string
	sc := bufio.NewScanner(bytes.NewReader(stdout))
	sc.Buffer(make([]byte, 1<<16), 1<<24)
	for sc.Scan() {
		if t := strings.TrimSpace(sc.Text()); t != "" {
			last = t
		}
	}
	if last == "" {
		return PeerReply{}, errors.New("the peer printed nothing: its last line must be one JSON object (klpeer.py's emit)")
	}
	var r PeerReply
	dec := json.NewDecoder(strings.NewReader(last))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return PeerReply{}, fmt.Errorf("the peer's last line is not its JSON reply (%v): %.200s", err, last)
	}
	switch r.Status {
	case results.StatusOK:
		if r.Check == nil || !r.Check.OK {
			return r, errors.New("the peer says ok without a passing check")
		}
		if len(r.SamplesMs) == 0 {
			return r, errors.New("the peer says ok without timings (samples_ms)")
		}
		for _, x := range r.SamplesMs {
			if !(x > 0) || math.IsInf(x, 0) {
				return r, fmt.Errorf("the peer reported a time of %v ms: every sample must be a positive number", x)
			}
		}
	case results.StatusWrong:
		if r.Check == nil || r.Check.OK {
			return r, errors.New("the peer says wrong without a failing check")
		}
	case results.StatusSkipped, results.StatusFailed:
		if r.Error == "" {
			return r, fmt.Errorf("the peer says %s without saying why (error)", r.Status)
		}
	default:
		return r, fmt.Errorf("the peer's status %q is not one of ok, wrong, skipped, failed", r.Status)
	}
	return r, nil
}

// peerProblemFailed records why a driver could not describe a problem for a peer: a skip, or an
// error.
func peerProblemFailed(e *results.Entry, err error) bool {
	if why, ok := skipReason(err); ok {
		e.Status, e.Error = results.StatusSkipped, why
		return true
	}
	if err != nil {
		e.Error = "describing the problem for the peer: " + err.Error()
		return true
	}
	return false
}

// runPeer runs a peer variant's script on one problem and fills the entry from its reply.
func (w *worker) runPeer(s *Suite, v *Variant, p Problem, e results.Entry) results.Entry {
	if w.rk != nil {
		return w.runRankPeer(s, v, p, e)
	}
	d, ok := w.drv.(PeerDriver)
	if !ok {
		e.Error = fmt.Sprintf("lab %s has peer variants, but its driver does not describe problems for them (lab.PeerDriver)", w.man.Name)
		return e
	}
	params, work, err := d.PeerProblem(s, p)
	if peerProblemFailed(&e, err) {
		return e
	}
	opts := bench.Default
	if w.spec.Quick {
		opts = bench.Quick
	}
	req := PeerRequest{Lab: w.man.Name, Suite: s.Name, Variant: v.Name, Problem: p.Name, Params: params,
		VariantParams: v.Params, Seed: w.env.RNG.Uint64(), Device: w.spec.Device, Tolerance: s.Tolerance, FlushL2: s.FlushL2, Bench: peerBench(opts)}
	r, crashed, err := w.servePeer(filepath.Join(w.man.Dir, v.Peer), req)
	if err != nil {
		if crashed { // it died before its reply: a crash, as a kernel's would be
			e.Status = results.StatusCrashed
		}
		e.Error = fmt.Sprintf("the peer %s: %v", v.Peer, err)
		return e
	}
	return peerEntry(e, r, work, s.Tolerance)
}

// peerEntry turns a parsed reply into the entry's outcome, rates from the lab's own work counts.
func peerEntry(e results.Entry, r PeerReply, work Work, tol float64) results.Entry {
	e.Status, e.Error = r.Status, r.Error
	if r.Check != nil {
		rep := check.Report{OK: r.Check.OK, Method: PeerMethodPrefix + ": " + r.Check.Method, Checked: r.Check.Checked,
			RelErr: r.Check.RelErr, MaxAbsErr: r.Check.MaxAbsErr, Tolerance: r.Check.Tolerance}
		if rep.Tolerance == 0 {
			rep.Tolerance = tol
		}
		e.Check = &rep
		if !rep.OK && e.Error == "" {
			e.Error = fmt.Sprintf("relative error %.3g above the tolerance %.3g (%s)", rep.RelErr, rep.Tolerance, rep.Method)
		}
	}
	e.Data = map[string]any{"peer": true}
	if r.Versions != nil {
		e.Data["versions"] = r.Versions
	}
	if r.Status != results.StatusOK {
		return e
	}
	st := bench.StatsOf(r.SamplesMs)
	e.Time = &st
	if sec := st.MedianMs / 1e3; sec > 0 {
		if work.FLOPs > 0 {
			e.TFLOPs = work.FLOPs / sec / 1e12
		}
		if work.Bytes > 0 {
			e.GBps = work.Bytes / sec / 1e9
		}
	}
	ops := max(work.Ops, 1)
	e.Ops = work.Ops
	e.PerOpUs = st.MedianMs * 1e3 / float64(ops)
	return e
}

// startPeer runs the script once with the request on stdin (and env added to its environment): a
// rank's peer, which joins a process group of its own for each problem (peer_serve.go). It
// stays in the worker's process group, so the engine's time limit (which kills the group) ends it
// too, and dies with the worker.
func (w *worker) startPeer(script string, req PeerRequest, env ...string) (stdout, stderr []byte, err error) {
	in, err := json.Marshal(req)
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(PythonInterpreter(), script)
	cmd.Dir = filepath.Dir(script)
	cmd.Stdin = bytes.NewReader(in)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Env = append(withoutEnv(os.Environ(), SecretSeedEnv),
		"PYTHONPATH="+peerPythonPath(w.man.Dir), "PYTHONDONTWRITEBYTECODE=1")
	cmd.Env = append(cmd.Env, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	// Pdeathsig follows the thread that started the child: keep it alive until the child ends.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	err = cmd.Run()
	return out.Bytes(), errb.Bytes(), err
}

// peerPythonPath puts labs/common/peers (klpeer.py) on the peer's import path.
func peerPythonPath(labDir string) string {
	p := filepath.Join(filepath.Dir(labDir), "common", "peers")
	if old := os.Getenv("PYTHONPATH"); old != "" {
		p += string(os.PathListSeparator) + old
	}
	return p
}

func tailOf(stderr []byte) string {
	s := strings.TrimSpace(string(stderr))
	if s == "" {
		return ""
	}
	if len(s) > 1500 {
		s = "…" + s[len(s)-1500:]
	}
	return "\n" + s
}
