package labtest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/gpu/emu/emucc/emutest"
	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/labtest/launcher"
	"github.com/kernel-labs/kernellabs/internal/results"
)

// A lab of ranks started the way mpirun, srun or torchrun start a job: n separate processes of
// the test binary, each a labrun of one rank that reads its place from the launcher's variables.

// runEnv marks a test binary started as one labrun of such a job; its value is the run (JSON).
const runEnv = "KL_LABTEST_RANK_RUN"

// rankRun is what a rank's process runs and where it writes its entries.
type rankRun struct {
	Root, Lab, Set string
	Out            string
}

// runRank runs one rank's labrun (Main calls it in a process started with runEnv).
func runRank(spec string) int {
	var rr rankRun
	if err := json.Unmarshal([]byte(spec), &rr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	os.Unsetenv(runEnv) // its workers are workers
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	worker := func() *exec.Cmd {
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), workerEnv+"=1")
		return cmd
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	out, err := lab.Run(ctx, lab.Options{Root: rr.Root, Lab: rr.Lab, Backend: "emu", Set: rr.Set, Seed: 5, SeedSet: true, NoSave: true,
		Worker: worker, Timeout: 60 * time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	b, _ := json.Marshal(out.Results.Entries)
	if err := os.WriteFile(rr.Out, b, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	return 0
}

// Launchers whose environment RunAsRanks can give the ranks.
const (
	Torchrun = launcher.Torchrun
	OpenMPI  = launcher.OpenMPI
	Slurm    = launcher.Slurm
)

// RunAsRanks starts n processes of the test binary, each as one rank of a lab of ranks with the
// environment the launcher would give it, on the CPU emulator, and returns rank 0's entries
// (rank 0 alone records). The test package must use Main.
func RunAsRanks(t *testing.T, labDir, set string, n int, launcherName string) []results.Entry {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the emulator run builds and runs the kernels")
	}
	emutest.Need(t)
	root, err := lab.FindRoot(".")
	require.NoError(t, err)
	return launcher.Job(t, launcherName, n, func(r int, out string) *exec.Cmd {
		spec, _ := json.Marshal(rankRun{Root: root, Lab: labDir, Set: set, Out: out})
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), runEnv+"="+string(spec), "LABRUN_EMU_SMS=4", "LABRUN_EMU_DEVICES=1")
		if testing.Verbose() {
			cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		}
		return cmd
	})
}

// OutcomeOf wraps the entries of RunAsRanks as an Outcome, for CheckAllOK.
func OutcomeOf(t *testing.T, labDir string, es []results.Entry) *lab.Outcome {
	t.Helper()
	root, err := lab.FindRoot(".")
	require.NoError(t, err)
	m, err := lab.Load(root, labDir)
	require.NoError(t, err)
	return &lab.Outcome{Manifest: m, Results: &results.File{Lab: labDir, Entries: es}}
}
