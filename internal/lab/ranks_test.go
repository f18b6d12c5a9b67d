package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/check"
	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/labtest/coursedir"
	"github.com/kernel-labs/kernellabs/internal/labtest/launcher"
	"github.com/kernel-labs/kernellabs/internal/results"
)

// A lab of ranks on the fake backend: every rank a process, the ranks kept in step, their checks
// merged, a rank that dies or hangs ending the variant on every rank while the run goes on.

const ranksManifest = `id: "98"
title: {en: Ranks, zh: 进程}
timeout: 4s
ranks: {emu: 2}
suites:
  - name: r
    metric: us
    baseline: good
    variants:
      - {name: good, library: good}
      - {name: die, library: die}
      - {name: hang, library: hang}
      - {name: wrong, library: wrong}
      - {name: refuse, library: refuse}
      - {name: after, library: good}
    problems:
      gpu: [{name: one, n: 1}]
`

// ranksDriver misbehaves on purpose on one rank (the last), by variant.
type ranksDriver struct{}

type ranksCase struct {
	env *Env
	out *gpu.Buffer[uint32]
}

func (ranksDriver) Prepare(env *Env, s *Suite, p Problem) (Case, error) {
	out, err := Output[uint32](env, "out", 1, PoisonBytes(0xFF))
	if err != nil {
		return nil, err
	}
	return &ranksCase{env: env, out: out}, nil
}

func (c *ranksCase) last() bool { w := c.env.World(); return w.Rank == w.Size-1 }

func (c *ranksCase) Run(v *Variant) error {
	w := c.env.World()
	if c.last() {
		switch v.Library {
		case "die":
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		case "hang":
			time.Sleep(time.Hour)
		case "refuse":
			return Skip("rank %d refuses", w.Rank)
		}
	}
	return c.out.Fill32(uint32(w.Rank), c.env.Stream)
}

func (c *ranksCase) Check(v *Variant, out *Outputs) (check.Report, error) {
	got, err := Raw(out, c.out)
	if err != nil {
		return check.Report{}, err
	}
	w := c.env.World()
	ok := got[0] == uint32(w.Rank) && !(v.Library == "wrong" && c.last())
	return check.Report{OK: ok, Method: "the rank's number", Note: fmt.Sprintf("saw %d", got[0])}, nil
}

func (c *ranksCase) Work() Work { return Work{} }

func init() { RegisterDriver("98_ranks", ranksDriver{}) }

// The test binary also runs as one labrun of a job another launcher started: with
// LABRUN_TEST_RANKS_RUN set (a JSON Options), it runs the lab and writes its entries there.
func init() {
	spec := os.Getenv("LABRUN_TEST_RANKS_RUN")
	if spec == "" {
		return
	}
	var o struct {
		Options
		Out string
	}
	if err := json.Unmarshal([]byte(spec), &o); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Unsetenv("LABRUN_TEST_RANKS_RUN") // its workers are workers
	o.Worker = testWorker
	out, err := Run(context.Background(), o.Options)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	b, _ := json.Marshal(out.Results.Entries)
	os.WriteFile(o.Out, b, 0o644)
	os.Exit(0)
}

func ranksCourse(t *testing.T) string {
	return coursedir.Write(t, "98_ranks", map[string]string{"lab.yaml": ranksManifest})
}

func TestRanksAsProcesses(t *testing.T) {
	root := ranksCourse(t)
	out, err := Run(context.Background(), Options{Root: root, Lab: "98", Backend: "fake", Seed: 3, SeedSet: true, Quick: true,
		NoSave: true, Worker: testWorker, Ranks: 3})
	require.NoError(t, err)
	assert.True(t, out.Local, "ranks sharing a GPU are not recorded as performance results")
	got := byVariant(out.Results.Entries)
	good := got["good"]
	assert.Equal(t, results.StatusOK, good.Status, good.Error)
	assert.EqualValues(t, 3, good.Data["ranks"])
	assert.Equal(t, true, good.Data["shared_gpu"], "three ranks on the fake backend's one device")
	assert.Equal(t, SharedGPULabel, good.Data["note"])
	assert.Contains(t, good.Check.Note, "all 3 ranks correct")
	require.NotNil(t, good.Time, "timed after the check")

	assert.Equal(t, results.StatusCrashed, got["die"].Status)
	assert.Contains(t, got["die"].Error, "rank 2:", "the rank that died is named")
	assert.Contains(t, got["die"].Error, "signal")

	assert.Equal(t, results.StatusTimeout, got["hang"].Status)
	assert.Contains(t, got["hang"].Error, "rank 2 never reached", got["hang"].Error)

	assert.Equal(t, results.StatusWrong, got["wrong"].Status)
	assert.Contains(t, got["wrong"].Check.Note, "rank 2", "the worst rank's check")

	assert.Equal(t, results.StatusSkipped, got["refuse"].Status)
	assert.Contains(t, got["refuse"].Error, "rank 2 refuses")

	assert.Equal(t, results.StatusOK, got["after"].Status, "the run goes on with fresh processes: %s", got["after"].Error)
}

// Separate labrun processes, as mpirun, srun or torchrun start them: each reads its rank from
// the launcher's environment, they meet at the rendezvous, rank 0 alone records.
func TestRanksStartedByALauncher(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	// Separate processes start slowly on a loaded 2-core machine, and no variant here hangs: a
	// longer limit than ranksManifest's 4 s, which TestRanksAsProcesses needs for its hang.
	root := coursedir.Write(t, "98_ranks", map[string]string{"lab.yaml": strings.Replace(ranksManifest, "timeout: 4s", "timeout: 60s", 1)})
	for _, style := range []string{launcher.Torchrun, launcher.OpenMPI, launcher.Slurm} {
		t.Run(style, func(t *testing.T) {
			n := 2
			es := launcher.Job(t, style, n, func(r int, out string) *exec.Cmd {
				spec, _ := json.Marshal(map[string]any{"Root": root, "Lab": "98", "Backend": "fake", "Seed": 3, "SeedSet": true,
					"Quick": true, "NoSave": true, "Variants": []string{"good", "wrong"}, "Out": out})
				cmd := exec.Command(os.Args[0], "-test.run=^$")
				cmd.Env = append(os.Environ(), "LABRUN_TEST_RANKS_RUN="+string(spec))
				cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
				return cmd
			})
			got := byVariant(es)
			assert.Equal(t, results.StatusOK, got["good"].Status, got["good"].Error)
			assert.EqualValues(t, n, got["good"].Data["ranks"])
			if assert.Equal(t, results.StatusWrong, got["wrong"].Status, got["wrong"].Error) {
				assert.Contains(t, got["wrong"].Check.Note, "rank 1")
			}
		})
	}
}

func TestRankDeclaration(t *testing.T) {
	m := &Manifest{Ranks: &RankSpec{}}
	assert.Equal(t, 2, m.DefaultRanks(true, 8), "the emulator: 2")
	assert.Equal(t, 8, m.DefaultRanks(false, 8), "a GPU machine: one rank per GPU")
	assert.Equal(t, 2, m.GradeRanks())
	assert.Zero(t, (&Manifest{}).DefaultRanks(false, 8), "a lab of one process")
	assert.Error(t, (&RankSpec{Emu: maxRanks + 1}).validate())
	env := withoutEnv([]string{"A=1", "RANK=3"}, "RANK")
	assert.Equal(t, []string{"A=1"}, env)
}

// The ranks agree on the first rank's error, except that a time-out (a rank waiting in a device
// barrier for one whose kernel faulted) gives way to any other failure.
func TestCauseOfPrefersAFaultToTheTimeOutsItCaused(t *testing.T) {
	timeout := "emu: kernel kl_rank_barrier failed: EMU_TIMEOUT (…)"
	fault := "emu: kernel ex2 failed: EMU_MISALIGNED_ADDRESS (…)"
	assert.Equal(t, -1, causeOf([]rankMsg{{}, {}}))
	assert.Equal(t, 1, causeOf([]rankMsg{{}, {Err: "wrong"}, {Err: "also wrong"}}))
	assert.Equal(t, 1, causeOf([]rankMsg{{Err: timeout}, {Err: fault}, {Err: timeout}}))
	assert.Equal(t, 0, causeOf([]rankMsg{{Err: timeout}, {}, {Err: timeout}}), "only time-outs: the first")
	assert.Equal(t, 0, causeOf([]rankMsg{{Err: fault}, {Err: timeout}}))
}
