package lab

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/bench"
	"github.com/kernel-labs/kernellabs/internal/labtest/coursedir"
	"github.com/kernel-labs/kernellabs/internal/ranks"
	"github.com/kernel-labs/kernellabs/internal/results"
)

func TestParsePeerReply(t *testing.T) {
	okCheck := `"check":{"ok":true,"method":"m","checked":4,"rel_err":1e-7,"max_abs_err":1e-7,"tolerance":1e-5}`
	tests := []struct {
		name, out, status, err string
	}{
		{"ok after other output", "compiling...\n{\"status\":\"ok\"," + okCheck + ",\"samples_ms\":[1.5,1.25]}\n\n", "ok", ""},
		{"skipped", `{"status":"skipped","error":"torch._grouped_mm needs bf16"}`, "skipped", ""},
		{"wrong", `{"status":"wrong","check":{"ok":false,"method":"m","checked":4,"rel_err":0.5,"max_abs_err":1,"tolerance":1e-5}}`, "wrong", ""},
		{"nothing", "\n", "", "printed nothing"},
		{"not JSON", "Traceback (most recent call last):\n", "", "not its JSON reply"},
		{"unknown field", `{"status":"ok","tflops":900}`, "", "unknown field"},
		{"ok without check", `{"status":"ok","samples_ms":[1]}`, "", "without a passing check"},
		{"ok without times", `{"status":"ok",` + okCheck + `}`, "", "without timings"},
		{"zero time", `{"status":"ok",` + okCheck + `,"samples_ms":[0]}`, "", "positive number"},
		{"wrong with a passing check", `{"status":"wrong",` + okCheck + `}`, "", "without a failing check"},
		{"skipped without a reason", `{"status":"skipped"}`, "", "without saying why"},
		{"unknown status", `{"status":"great"}`, "", "not one of"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := ParsePeerReply([]byte(tc.out))
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.status, r.Status)
		})
	}
}

func TestPeerEntryUsesTheLabsWork(t *testing.T) {
	r := PeerReply{Status: results.StatusOK, SamplesMs: []float64{2, 1, 3},
		Check: &PeerChk{OK: true, Method: "torch.addmm against float64", Checked: 16, RelErr: 1e-7}}
	e := peerEntry(results.Entry{Status: results.StatusFailed}, r, Work{FLOPs: 2e12, Bytes: 1e9}, 1e-5)
	require.Equal(t, results.StatusOK, e.Status)
	assert.Equal(t, 2.0, e.Time.MedianMs)
	assert.InDelta(t, 1000, e.TFLOPs, 1e-9) // 2e12 flops in 2 ms
	assert.InDelta(t, 500, e.GBps, 1e-9)
	assert.Equal(t, PeerMethodPrefix+": torch.addmm against float64", e.Check.Method)
	assert.Equal(t, 1e-5, e.Check.Tolerance, "the suite's tolerance when the peer gives none")
	assert.Equal(t, true, e.Data["peer"])
}

func TestValidatePeer(t *testing.T) {
	head := "id: \"01\"\ntitle: {en: a, zh: b}\nsuites:\n  - name: s\n    metric: us\n    problems: {gpu: [{n: 1}]}\n    variants:\n"
	tests := []struct{ name, variant, want string }{
		{"good", "      - {name: v, peer: peers/p.py, needs: [torch, triton]}\n", ""},
		{"missing script", "      - {name: v, peer: peers/none.py, needs: [torch]}\n", "peer script peers/none.py not found"},
		{"not python", "      - {name: v, peer: peers/p.sh, needs: [torch]}\n", "must be a .py script inside the lab"},
		{"outside the lab", "      - {name: v, peer: ../p.py, needs: [torch]}\n", "must be a .py script inside the lab"},
		{"no torch need", "      - {name: v, peer: peers/p.py, needs: [triton]}\n", "a peer needs torch"},
		{"also a kernel", "      - {name: v, peer: peers/p.py, file: k.cu, entry: k, needs: [torch]}\n", "drop file, entry and library"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.MkdirAll(filepath.Join(dir, "peers"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "peers", "p.py"), []byte("pass\n"), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "peers", "p.sh"), []byte("true\n"), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "k.cu"), []byte("\n"), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "lab.yaml"), []byte(head+tc.variant), 0o644))
			m, err := LoadManifest(dir)
			if tc.want == "" {
				require.NoError(t, err)
				v := m.Suite("s").Variant("v")
				assert.True(t, v.IsPeer())
				assert.False(t, v.IsKernel())
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// klpeerPath skips the test without python3 and returns a PYTHONPATH entry with klpeer.py, after
// the folders given (a fake torch, say), and the environment a peer's Python gets.
func klpeerPath(t *testing.T, first ...string) []string {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed here: the peers' Python side cannot be tested")
	}
	helper, err := filepath.Abs("../../labs/common/peers")
	require.NoError(t, err)
	dirs := append(append([]string{}, first...), helper)
	return append(os.Environ(), "PYTHONPATH="+strings.Join(dirs, string(os.PathListSeparator)), "PYTHONDONTWRITEBYTECODE=1")
}

// fakeTorch is testdata/faketorch's absolute path.
func fakeTorch(t *testing.T) string {
	t.Helper()
	fake, err := filepath.Abs("testdata/faketorch")
	require.NoError(t, err)
	return fake
}

// fakeTorchless is a folder with a torch module that fails to import, first on PYTHONPATH: a
// machine without torch, whatever this one has.
func fakeTorchless(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed here: the peers' Python side cannot be tested")
	}
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "torch.py"), []byte("raise ImportError('No module named torch (fake)')\n"), 0o644))
	return dir
}

func TestPeerSkipReason(t *testing.T) {
	assert.Equal(t, "", peerSkipReason([]string{"gpu"}, false), "no peer needs: nothing to probe")
	assert.Contains(t, peerSkipReason([]string{NeedTorch}, true), "not on the emulator")

	t.Setenv(PythonEnv, filepath.Join(t.TempDir(), "no-python"))
	assert.Contains(t, peerSkipReason([]string{NeedTorch}, false), "no Python interpreter")

	t.Setenv(PythonEnv, "python3")
	t.Setenv("PYTHONPATH", fakeTorchless(t))
	why := peerSkipReason([]string{NeedTorch, NeedTriton}, false)
	assert.Contains(t, why, "torch: ImportError: No module named torch (fake)")
	assert.Contains(t, why, "pip install torch triton")
}

// TestKlpeerWithoutTorch runs the course's Python helper as labrun would, with torch missing:
// it must answer with one skipped line that ParsePeerReply accepts.
func TestKlpeerWithoutTorch(t *testing.T) {
	env := klpeerPath(t, fakeTorchless(t))
	script := filepath.Join(t.TempDir(), "peer.py")
	require.NoError(t, os.WriteFile(script, []byte("import klpeer\nklpeer.main(lambda peer: None)\n"), 0o644))
	req, err := json.Marshal(PeerRequest{Params: map[string]any{"m": 1}, Seed: 1, Tolerance: 1e-5, Bench: peerBench(bench.Default)})
	require.NoError(t, err)
	for _, in := range []string{string(req), `{"params": {}}`} {
		cmd := exec.Command("python3", script)
		cmd.Env = env
		cmd.Stdin = strings.NewReader(in)
		out, err := cmd.Output()
		require.NoError(t, err, string(out))
		r, err := ParsePeerReply(out)
		require.NoError(t, err, string(out))
		if in == string(req) {
			assert.Equal(t, results.StatusSkipped, r.Status)
			assert.Contains(t, r.Error, "cannot import torch")
		} else {
			assert.Equal(t, results.StatusFailed, r.Status, "a request without seed is labrun's bug, said plainly")
			assert.Contains(t, r.Error, "reading labrun's request")
		}
	}
}

const peerManifest = `id: "98"
title: {en: Peer test, zh: 对照测试}
timeout: 3s
` + scaleSuite + `      - {name: lib, library: fake_copy}
      - {name: peer_ok, peer: peers/ok.py, needs: [torch]}
      - {name: peer_wrong, peer: peers/wrong.py, needs: [torch]}
      - {name: peer_flaky, peer: peers/flaky.py, needs: [torch]}
      - {name: peer_crash, peer: peers/crash.py, needs: [torch]}
      - {name: peer_hang, peer: peers/hang.py, needs: [torch]}
    problems:
      gpu: [{name: small, n: 1000, quick: true}, {name: large, n: 2000, quick: true}]
`

// TestRunPeersThroughTheEngine runs peer variants of the scale lab (registered as 98_peer by
// scalelab_test.go) through the real worker with a fake interpreter (a shell that runs the
// "scripts" as servers, one request a line): the reply is recorded, rates come from the driver's
// work, one process answers every problem, a failed reply or a crash costs a fresh process, and a
// hang is isolated like a kernel's.
func TestRunPeersThroughTheEngine(t *testing.T) {
	check := `"check":{"ok":%s,"method":"against float64","checked":1000,"rel_err":%s,"max_abs_err":0,"tolerance":1e-6}`
	okReply := `'{"status":"ok",` + strings.Replace(strings.Replace(check, "%s", "true", 1), "%s", "1e-8", 1) + `,"samples_ms":[0.004,0.002,0.003]}'`
	scripts := map[string]string{
		// Each request arrives as a line with the problem's description; the script's own
		// output goes to stderr.
		"ok.py": `[ "$KLPEER_SERVE" = 1 ] || exit 8
while read -r req; do
  echo "$req" | grep -q '"params":{"n":[0-9]*}' || exit 9
  echo $$ >>"$PEER_PIDS/ok"; echo "compiled" >&2; echo ` + okReply + `
done`,
		"wrong.py": `while read -r req; do echo '{"status":"wrong",` + strings.Replace(strings.Replace(check, "%s", "false", 1), "%s", "0.5", 1) + `}'; done`,
		// The first request fails as after a CUDA error: the next one must come to a new process.
		"flaky.py": `while read -r req; do
  echo $$ >>"$PEER_PIDS/flaky"
  if [ -f "$PEER_PIDS/flaked" ]; then echo ` + okReply + `; else touch "$PEER_PIDS/flaked"; echo '{"status":"failed","error":"CUDA error: an illegal memory access"}'; fi
done`,
		"crash.py": `read -r req; echo 'Segmentation fault' >&2; exit 139`,
		// It hangs on the last job (the large problem), so the worker runs every job before it.
		"hang.py": `while read -r req; do case "$req" in *'"n":2000'*) sleep 60 ;; *) echo ` + okReply + ` ;; esac; done`,
	}
	files := map[string]string{"lab.yaml": peerManifest}
	for name, body := range scripts {
		files[filepath.Join("peers", name)] = body + "\n"
	}
	root := coursedir.Write(t, "98_peer", files)
	py := filepath.Join(root, "fakepython")
	require.NoError(t, os.WriteFile(py, []byte("#!/bin/sh\n[ \"$1\" = -c ] && exit 0\nexec sh \"$1\"\n"), 0o755))
	t.Setenv(PythonEnv, py)
	pids := t.TempDir()
	t.Setenv("PEER_PIDS", pids)

	out, err := Run(context.Background(), Options{Root: root, Lab: "98", Backend: "fake", Seed: 7, SeedSet: true,
		Quick: true, Worker: testWorker})
	require.NoError(t, err)
	got, large := map[string]results.Entry{}, map[string]results.Entry{}
	for _, e := range out.Results.Entries {
		if e.Problem == "small" {
			got[e.Variant] = e
		} else {
			large[e.Variant] = e
		}
	}
	ok := got["peer_ok"]
	require.Equal(t, results.StatusOK, ok.Status, ok.Error)
	assert.Equal(t, 0.003, ok.Time.MedianMs)
	assert.InDelta(t, 8000/0.003e-3/1e9, ok.GBps, 1e-6, "the driver's work over the peer's median")
	assert.True(t, strings.HasPrefix(ok.Check.Method, PeerMethodPrefix), ok.Check.Method)
	assert.Greater(t, ok.Speedup, 0.0, "compared with the suite's baseline like any variant")
	require.Equal(t, results.StatusOK, large["peer_ok"].Status, large["peer_ok"].Error)
	assert.InDelta(t, 16000/0.003e-3/1e9, large["peer_ok"].GBps, 1e-6)
	assert.Len(t, distinctLines(t, filepath.Join(pids, "ok")), 1, "one process answers both problems")

	assert.Equal(t, results.StatusWrong, got["peer_wrong"].Status)
	assert.Contains(t, got["peer_wrong"].Error, "relative error 0.5")

	flaky := []string{got["peer_flaky"].Status, large["peer_flaky"].Status}
	assert.ElementsMatch(t, []string{results.StatusFailed, results.StatusOK}, flaky)
	assert.Len(t, distinctLines(t, filepath.Join(pids, "flaky")), 2, "a failed reply ends its process")

	for _, e := range []results.Entry{got["peer_crash"], large["peer_crash"]} {
		assert.Equal(t, results.StatusCrashed, e.Status)
		assert.Contains(t, e.Error, "Segmentation fault")
		assert.Contains(t, e.Error, "exit status 139")
	}
	assert.Equal(t, results.StatusOK, got["peer_hang"].Status, got["peer_hang"].Error)
	assert.Equal(t, results.StatusTimeout, large["peer_hang"].Status, large["peer_hang"].Error)
}

// distinctLines reads a file's distinct lines.
func distinctLines(t *testing.T, path string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	m := map[string]bool{}
	for _, l := range strings.Fields(string(b)) {
		m[l] = true
	}
	return m
}

// TestKlpeerServes runs klpeer.py as labrun keeps a peer running (KLPEER_SERVE=1) under the fake
// torch: one reply a line for each request, in order, with the script's own prints on stderr, and
// a request it cannot read answered without ending the process.
func TestKlpeerServes(t *testing.T) {
	env := klpeerPath(t, fakeTorch(t))
	script := filepath.Join(t.TempDir(), "peer.py")
	require.NoError(t, os.WriteFile(script, []byte(`import klpeer, torch

def run(peer):
    print("noise from the peer")
    out = torch.tensor([1.0, 2.0])
    ref = torch.tensor([1.0, 2.0 + peer.params.get("err", 0)])
    if peer.check(out, ref, "fake"):
        peer.time(lambda: torch.cuda.work(0.5))

klpeer.main(run)
`), 0o644))
	var in strings.Builder
	for _, params := range []map[string]any{{}, {"err": 1}, {}} {
		req, err := json.Marshal(PeerRequest{Params: params, Seed: 1, Tolerance: 1e-5, Bench: peerBench(bench.Quick)})
		require.NoError(t, err)
		in.Write(append(req, '\n'))
		if len(params) > 0 {
			in.WriteString("{not json\n\n")
		}
	}
	cmd := exec.Command("python3", script)
	cmd.Env = append(env, PeerServeEnv+"=1")
	cmd.Stdin = strings.NewReader(in.String())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, stderr.String())
	var statuses []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		r, err := ParsePeerReply([]byte(line))
		require.NoError(t, err, line)
		statuses = append(statuses, r.Status)
	}
	assert.Equal(t, []string{results.StatusOK, results.StatusWrong, results.StatusFailed, results.StatusOK}, statuses)
	assert.Contains(t, stderr.String(), "noise from the peer", "the script's prints go to stderr")
	assert.NotContains(t, string(out), "noise")
}

// Peers in a lab of ranks on the fake backend, with a fake interpreter (a shell) as in
// TestRunPeersThroughTheEngine: every rank's worker starts the script with its rank and the peers'
// own rendezvous, and the entry merges every rank's reply.

// No variant hangs, and rank processes start slowly on a loaded 2-core machine: a generous limit.
const peerRanksManifest = `id: "97"
title: {en: Peer ranks, zh: 多进程对照}
timeout: 60s
ranks: {emu: 2}
suites:
  - name: r
    metric: gbps
    baseline: good
    variants:
      - {name: good, library: good}
      - {name: peer_ok, peer: peers/ok.py, needs: [torch]}
      - {name: peer_wrong, peer: peers/wrong.py, needs: [torch]}
      - {name: peer_crash, peer: peers/crash.py, needs: [torch]}
      - {name: peer_skip, peer: peers/skip.py, needs: [torch]}
      - {name: peer_uneven, peer: peers/uneven.py, needs: [torch]}
    problems:
      gpu: [{name: one, n: 1000}]
`

// peerRanksDriver is ranksDriver with peers whose problem depends on the world.
type peerRanksDriver struct{ ranksDriver }

func (peerRanksDriver) PeerRankProblem(s *Suite, p Problem, w ranks.World) (map[string]any, Work, error) {
	return map[string]any{"n": p.Int("n", 0), "mine": w.Rank}, Work{Bytes: float64(8 * p.Int("n", 0) * int64(w.Size))}, nil
}

func init() { RegisterDriver("97_peerranks", peerRanksDriver{}) }

func TestPeersOfRanks(t *testing.T) {
	check := `"check":{"ok":OK,"method":"against float64","checked":1000,"rel_err":ERR,"max_abs_err":0,"tolerance":1e-6}`
	okCheck := func(rel string) string {
		return strings.NewReplacer("OK", "true", "ERR", rel).Replace(check)
	}
	// Every script first checks what a rank's peer must get: its rank in the request and in
	// torchrun's variables, its block of the problem, and a rendezvous of its own (not the one
	// the workers meet at).
	const preamble = `req=$(cat)
echo "$req" | grep -q "\"params\":{\"mine\":$RANK,\"n\":1000}" || { echo "bad params: $req" >&2; exit 9; }
echo "$req" | grep -q "\"ranks\":{\"rank\":$RANK,\"size\":$WORLD_SIZE,\"local_rank\":$LOCAL_RANK," || { echo "bad ranks: $req" >&2; exit 9; }
echo "$req" | grep -q "\"init_method\":\"tcp://$MASTER_ADDR:$MASTER_PORT\"" || { echo "bad init: $req" >&2; exit 9; }
[ "$LABRUN_RENDEZVOUS" != "$MASTER_ADDR:$MASTER_PORT" ] || { echo "the workers' rendezvous" >&2; exit 9; }
`
	scripts := map[string]string{
		// Rank 1 is slower on the first two batches, rank 0 on the second: the entry takes each
		// batch's slowest, and the worst rank's error.
		"ok.py": `if [ "$RANK" = 1 ]; then s='0.003,0.001,0.002'; e=2e-8; else s='0.001,0.004,0.002'; e=1e-8; fi
echo '{"status":"ok",` + okCheck(`'$e'`) + `,"samples_ms":['$s'],"batch":7}'`,
		"wrong.py": `if [ "$RANK" = 1 ]; then echo '{"status":"wrong",` + strings.NewReplacer("OK", "false", "ERR", "0.5").Replace(check) + `}'; exit 0; fi
echo '{"status":"failed","error":"another rank'"'"'s check failed (its entry says which): not timed",` + okCheck("1e-8") + `}'`,
		// Rank 0 dies; rank 1 says why it failed (its own error comes first).
		"crash.py": `if [ "$RANK" = 0 ]; then echo 'Segmentation fault' >&2; exit 139; fi
echo '{"status":"failed","error":"the process group timed out waiting for rank 0"}'`,
		"skip.py": `if [ "$RANK" = 1 ]; then echo '{"status":"skipped","error":"no NCCL in this torch"}'; exit 0; fi
echo '{"status":"ok",` + okCheck("1e-8") + `,"samples_ms":[1]}'`,
		"uneven.py": `if [ "$RANK" = 1 ]; then s='1,2'; else s='1'; fi
echo '{"status":"ok",` + okCheck("1e-8") + `,"samples_ms":['$s']}'`,
	}
	files := map[string]string{"lab.yaml": peerRanksManifest}
	for name, body := range scripts {
		files[filepath.Join("peers", name)] = preamble + body + "\n"
	}
	root := coursedir.Write(t, "97_peerranks", files)
	py := filepath.Join(root, "fakepython")
	require.NoError(t, os.WriteFile(py, []byte("#!/bin/sh\n[ \"$1\" = -c ] && exit 0\nexec sh \"$1\"\n"), 0o755))
	t.Setenv(PythonEnv, py)

	t.Run("one GPU per rank", func(t *testing.T) {
		t.Setenv("LABRUN_FAKE_DEVICES", "2")
		out, err := Run(context.Background(), Options{Root: root, Lab: "97", Backend: "fake", Seed: 5, SeedSet: true, Quick: true,
			NoSave: true, Worker: testWorker, Ranks: 2})
		require.NoError(t, err)
		got := byVariant(out.Results.Entries)

		ok := got["peer_ok"]
		require.Equal(t, results.StatusOK, ok.Status, ok.Error)
		assert.Equal(t, 0.003, ok.Time.MedianMs, "per batch the slowest rank: 0.003, 0.004, 0.002")
		assert.InDelta(t, 16000/0.003e-3/1e9, ok.GBps, 1e-6, "the driver's work of the world over the merged median")
		assert.True(t, strings.HasPrefix(ok.Check.Method, PeerMethodPrefix), ok.Check.Method)
		assert.Equal(t, 2e-8, ok.Check.RelErr, "the worst rank's check")
		assert.Contains(t, ok.Check.Note, "all 2 ranks correct; largest error on rank 1")
		assert.EqualValues(t, 2, ok.Data["ranks"])
		assert.EqualValues(t, 7, ok.Data["batch"])
		assert.Equal(t, true, ok.Data["peer"])
		assert.Greater(t, ok.Speedup, 0.0, "compared with the suite's baseline like any variant")

		assert.Equal(t, results.StatusWrong, got["peer_wrong"].Status)
		assert.Contains(t, got["peer_wrong"].Error, "rank 1: relative error 0.5")
		assert.Equal(t, "rank 1", got["peer_wrong"].Check.Note)

		assert.Equal(t, results.StatusFailed, got["peer_crash"].Status, "the rank that said why, before the one that died")
		assert.Contains(t, got["peer_crash"].Error, "rank 1: the process group timed out")
		assert.Contains(t, got["peer_crash"].Error, "(also rank 0: the peer peers/crash.py: exit status 139", "the other rank's failure, in a line")

		assert.Equal(t, results.StatusSkipped, got["peer_skip"].Status)
		assert.Contains(t, got["peer_skip"].Error, "rank 1: no NCCL in this torch")

		assert.Equal(t, results.StatusFailed, got["peer_uneven"].Status)
		assert.Contains(t, got["peer_uneven"].Error, "different numbers of batches")

		assert.Equal(t, results.StatusOK, got["good"].Status, got["good"].Error)
	})

	t.Run("ranks share a GPU", func(t *testing.T) {
		out, err := Run(context.Background(), Options{Root: root, Lab: "97", Backend: "fake", Seed: 5, SeedSet: true, Quick: true,
			NoSave: true, Worker: testWorker, Ranks: 2, Variants: []string{"good", "peer_ok"}})
		require.NoError(t, err)
		e := byVariant(out.Results.Entries)["peer_ok"]
		assert.Equal(t, results.StatusSkipped, e.Status)
		assert.Contains(t, e.Error, "NCCL, which needs one GPU per rank")
	})

	t.Run("one rank", func(t *testing.T) {
		out, err := Run(context.Background(), Options{Root: root, Lab: "97", Backend: "fake", Seed: 5, SeedSet: true, Quick: true,
			NoSave: true, Worker: testWorker, Ranks: 1, Variants: []string{"good", "peer_ok", "peer_crash"}})
		require.NoError(t, err)
		got := byVariant(out.Results.Entries)
		ok := got["peer_ok"]
		require.Equal(t, results.StatusOK, ok.Status, ok.Error)
		assert.Equal(t, 0.002, ok.Time.MedianMs, "rank 0's own samples")
		assert.Equal(t, results.StatusCrashed, got["peer_crash"].Status)
		assert.Contains(t, got["peer_crash"].Error, "Segmentation fault")
		assert.NotContains(t, got["peer_crash"].Error, "rank 0:", "a world of one names no rank")
	})
}

func TestNewPeerMeeting(t *testing.T) {
	m, err := newPeerMeeting(ranks.World{Size: 2, Rendezvous: "127.0.0.1:29500"})
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1", m.Addr)
	assert.NotEqual(t, 29500, m.Port, "a port of the peers' own")
	assert.Equal(t, "tcp://127.0.0.1:"+strconv.Itoa(m.Port), m.InitMethod)

	dir := t.TempDir()
	m, err = newPeerMeeting(ranks.World{Size: 2, Rendezvous: "file:" + dir})
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(m.InitMethod, "file://"+dir+"/torch-peer-"), m.InitMethod)

	m, err = newPeerMeeting(ranks.World{Size: 1})
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1", m.Addr, "a world of one meets on the loopback")

	_, err = newPeerMeeting(ranks.World{Size: 2, Rendezvous: "no-port"})
	assert.Error(t, err)
}

// TestKlpeerRanksWithAFakeTorch runs klpeer.py's lab-of-ranks path (joining the group, agreeing
// on the checks, the collective timing, leaving the group) under a fake torch
// (testdata/faketorch: a world of one, CUDA events on a clock the work advances), as labrun starts
// a rank's peer: here torch itself is not installed.
func TestKlpeerRanksWithAFakeTorch(t *testing.T) {
	env := klpeerPath(t, fakeTorch(t))
	script := filepath.Join(t.TempDir(), "peer.py")
	require.NoError(t, os.WriteFile(script, []byte(`import klpeer, torch

def run(peer):
    out = torch.tensor([1.0, 2.0])
    ref = torch.tensor([1.0, 2.0 + peer.params.get("err", 0)])
    if peer.check(out, ref, "fake"):
        peer.time(lambda: torch.cuda.work(0.5), poison=lambda: None)
        peer.check(out, ref, "fake, after the timed batches")
    if peer.params.get("raise"):
        raise RuntimeError("boom")

klpeer.main(run)
`), 0o644))
	rk := &PeerRanks{Rank: 0, Size: 1, LocalSize: 1, InitMethod: "tcp://127.0.0.1:1", TimeoutS: 10, BatchTargetMs: 2, MaxBatch: maxBatch}
	tests := []struct {
		name   string
		params map[string]any
		ranks  *PeerRanks
		env    string
		status string
		want   string
	}{
		{"ok", map[string]any{}, rk, "", results.StatusOK, ""},
		{"a lab of one process", map[string]any{}, nil, "", results.StatusOK, ""},
		{"wrong", map[string]any{"err": 1}, rk, "", results.StatusWrong, ""},
		{"another rank wrong", map[string]any{}, rk, "FAKE_TORCH_OTHER_CHECK_FAILS=1", results.StatusFailed, "another rank's check failed"},
		{"an exception", map[string]any{"raise": true}, rk, "", results.StatusFailed, "RuntimeError: boom"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := json.Marshal(PeerRequest{Params: tc.params, Seed: 1, Tolerance: 1e-5, Bench: peerBench(bench.Quick), Ranks: tc.ranks})
			require.NoError(t, err)
			cmd := exec.Command("python3", script)
			cmd.Env = append(env, tc.env)
			cmd.Stdin = strings.NewReader(string(req))
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			require.NoError(t, err, stderr.String())
			r, err := ParsePeerReply(out)
			require.NoError(t, err, string(out))
			require.Equal(t, tc.status, r.Status, "%s\n%s", r.Error, stderr.String())
			assert.Contains(t, r.Error, tc.want)
			if r.Status != results.StatusOK {
				return
			}
			assert.GreaterOrEqual(t, len(r.SamplesMs), bench.Quick.MinReps)
			assert.LessOrEqual(t, len(r.SamplesMs), bench.Quick.MaxReps)
			for _, x := range r.SamplesMs {
				assert.InDelta(t, 0.5, x, 1e-9, "per call, from batches of K calls")
			}
			if tc.ranks != nil {
				assert.Equal(t, 4, r.Batch, "K: a 2 ms batch of 0.5 ms calls")
				assert.Equal(t, "fake, after the timed batches", r.Check.Method, "checked again after timing")
			} else {
				assert.Zero(t, r.Batch)
			}
		})
	}
}

// TestKlpeerHoldPacesAndTimesOut runs klpeer.py's hold with fake driver calls (there is no GPU
// here): the stream waits first, the run is queued, the pacer's gap passes, then the hold is let
// go once; a run whose host part does not come back is let go by the watchdog thread, once, and
// the peer is timed unheld from then on.
func TestKlpeerHoldPacesAndTimesOut(t *testing.T) {
	env := klpeerPath(t)
	script := `import sys, time, types
import klpeer
events = []
h = object.__new__(klpeer._Hold)
h.available, h.n, h.ctx = True, 0, None
h.set_ctx = lambda ctx: None
h.wait = lambda stream, word, n, flags: events.append(("wait", n)) or 0
h.write = lambda stream, word, n, flags: events.append(("release", n)) or 0
h.word = types.SimpleNamespace(data_ptr=lambda: 8)
h.side = types.SimpleNamespace(cuda_stream=2)
h.torch = types.SimpleNamespace(cuda=types.SimpleNamespace(current_stream=lambda: types.SimpleNamespace(cuda_stream=1)))
pace = klpeer._Pacer()
pace.ended()
t0 = time.perf_counter()
h.queued(lambda: events.append(("enqueue", 1)), pace)
assert events == [("wait", 1), ("enqueue", 1), ("release", 1)], events
assert time.perf_counter() - t0 >= klpeer._REP_GAP_S, "released before the gap"
klpeer._HOLD_TIMEOUT_S = 0.05
events.clear()
h.queued(lambda: time.sleep(1.0), None)  # far past the timeout, for a loaded machine
assert events == [("wait", 2), ("release", 2)], events
assert not h.available, "timed unheld after a timeout"
h.queued(lambda: events.append(("enqueue", 3)), None)
assert events[-1] == ("enqueue", 3) and len(events) == 3, events
print("ok")
`
	cmd := exec.Command("python3", "-c", script)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	assert.Contains(t, string(out), "ok")
	assert.Contains(t, string(out), "timed without the hold from now on")
}

// TestKlpeerMirrorsTheEnginesTiming: the constants klpeer.py copies from the engine are the
// engine's.
func TestKlpeerMirrorsTheEnginesTiming(t *testing.T) {
	src, err := os.ReadFile("../../labs/common/peers/klpeer.py")
	require.NoError(t, err)
	value := func(name string) float64 {
		m := regexp.MustCompile(`(?m)^` + name + ` = ([0-9.e-]+)`).FindSubmatch(src)
		require.NotNil(t, m, "klpeer.py has no %s", name)
		x, err := strconv.ParseFloat(string(m[1]), 64)
		require.NoError(t, err)
		return x
	}
	assert.Equal(t, repGap.Seconds(), value("_REP_GAP_S"))
	assert.Equal(t, (2 * time.Second).Seconds(), value("_HOLD_TIMEOUT_S"), "holdTimeout's default")
	assert.Equal(t, float64(maxHeldBatch), value("_MAX_HELD_BATCH"))
}
