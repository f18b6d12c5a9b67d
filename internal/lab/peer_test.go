package lab

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/bench"
	"github.com/kernel-labs/kernellabs/internal/labtest/coursedir"
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
	fake := fakeTorchless(t)
	helper, err := filepath.Abs("../../labs/common/peers")
	require.NoError(t, err)
	script := filepath.Join(t.TempDir(), "peer.py")
	require.NoError(t, os.WriteFile(script, []byte("import klpeer\nklpeer.main(lambda peer: None)\n"), 0o644))
	req, err := json.Marshal(PeerRequest{Params: map[string]any{"m": 1}, Seed: 1, Tolerance: 1e-5, Bench: peerBench(bench.Default)})
	require.NoError(t, err)
	for _, in := range []string{string(req), `{"params": {}}`} {
		cmd := exec.Command("python3", script)
		cmd.Env = append(os.Environ(), "PYTHONPATH="+fake+string(os.PathListSeparator)+helper)
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
      - {name: peer_crash, peer: peers/crash.py, needs: [torch]}
      - {name: peer_hang, peer: peers/hang.py, needs: [torch]}
    problems:
      gpu: [{name: small, n: 1000}]
`

// TestRunPeersThroughTheEngine runs peer variants of the scale lab (registered as 98_peer by
// scalelab_test.go) through the real worker with a fake interpreter (a shell that runs the
// "scripts"): the reply is recorded, rates come from the driver's work, and a crash or a hang is
// isolated like a kernel's.
func TestRunPeersThroughTheEngine(t *testing.T) {
	check := `"check":{"ok":%s,"method":"against float64","checked":1000,"rel_err":%s,"max_abs_err":0,"tolerance":1e-6}`
	scripts := map[string]string{
		// The request must arrive on stdin with the problem's description.
		"ok.py":    `grep -q '"params":{"n":1000}' || exit 9; echo '{"status":"ok",` + strings.Replace(strings.Replace(check, "%s", "true", 1), "%s", "1e-8", 1) + `,"samples_ms":[0.004,0.002,0.003]}'`,
		"wrong.py": `echo '{"status":"wrong",` + strings.Replace(strings.Replace(check, "%s", "false", 1), "%s", "0.5", 1) + `}'`,
		"crash.py": `echo 'Segmentation fault' >&2; exit 139`,
		"hang.py":  `sleep 60`,
	}
	files := map[string]string{"lab.yaml": peerManifest}
	for name, body := range scripts {
		files[filepath.Join("peers", name)] = body + "\n"
	}
	root := coursedir.Write(t, "98_peer", files)
	py := filepath.Join(root, "fakepython")
	require.NoError(t, os.WriteFile(py, []byte("#!/bin/sh\n[ \"$1\" = -c ] && exit 0\nexec sh \"$1\"\n"), 0o755))
	t.Setenv(PythonEnv, py)

	out, err := Run(context.Background(), Options{Root: root, Lab: "98", Backend: "fake", Seed: 7, SeedSet: true,
		Quick: true, Worker: testWorker})
	require.NoError(t, err)
	got := byVariant(out.Results.Entries)
	ok := got["peer_ok"]
	require.Equal(t, results.StatusOK, ok.Status, ok.Error)
	assert.Equal(t, 0.003, ok.Time.MedianMs)
	assert.InDelta(t, 8000/0.003e-3/1e9, ok.GBps, 1e-6, "the driver's work over the peer's median")
	assert.True(t, strings.HasPrefix(ok.Check.Method, PeerMethodPrefix), ok.Check.Method)
	assert.Greater(t, ok.Speedup, 0.0, "compared with the suite's baseline like any variant")
	assert.Equal(t, results.StatusWrong, got["peer_wrong"].Status)
	assert.Contains(t, got["peer_wrong"].Error, "relative error 0.5")
	assert.Equal(t, results.StatusCrashed, got["peer_crash"].Status)
	assert.Contains(t, got["peer_crash"].Error, "Segmentation fault")
	assert.Equal(t, results.StatusTimeout, got["peer_hang"].Status, got["peer_hang"].Error)
}
