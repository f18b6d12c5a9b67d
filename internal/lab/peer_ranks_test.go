package lab

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/bench"
	"github.com/kernel-labs/kernellabs/internal/labtest/coursedir"
	"github.com/kernel-labs/kernellabs/internal/ranks"
	"github.com/kernel-labs/kernellabs/internal/results"
)

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
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed here: the peers' Python side cannot be tested")
	}
	fake, err := filepath.Abs("testdata/faketorch")
	require.NoError(t, err)
	helper, err := filepath.Abs("../../labs/common/peers")
	require.NoError(t, err)
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
			cmd.Env = append(os.Environ(), "PYTHONPATH="+fake+string(os.PathListSeparator)+helper, "PYTHONDONTWRITEBYTECODE=1", tc.env)
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
