// Package launcher starts a job of ranks the way mpirun, srun or torchrun start one: n separate
// processes on one node, each with the environment its launcher gives a rank, and reads the
// entries rank 0 wrote. It imports nothing of the engine, so the engine's own tests (package
// lab) use it as well as internal/labtest. Only test files import it.
package launcher

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/ranks"
	"github.com/kernel-labs/kernellabs/internal/results"
)

// The launchers whose environment Env gives.
const (
	Torchrun = "torchrun" // RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT
	OpenMPI  = "mpirun"   // OMPI_COMM_WORLD_{RANK,SIZE,LOCAL_RANK,LOCAL_SIZE}, and a rendezvous
	Slurm    = "srun"     // SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_TASKS_PER_NODE
)

// Env is the environment launcher gives rank r of n ranks on one node. torchrun and srun meet
// at 127.0.0.1:port (MASTER_ADDR, MASTER_PORT); mpirun gives no rendezvous, so the job names
// one, a file in dir, as a user's job script would.
func Env(t testing.TB, launcher string, r, n, port int, dir string) []string {
	t.Helper()
	master := []string{"MASTER_ADDR=127.0.0.1", "MASTER_PORT=" + strconv.Itoa(port)}
	switch launcher {
	case Torchrun:
		return append(master, fmt.Sprintf("RANK=%d", r), fmt.Sprintf("WORLD_SIZE=%d", n), fmt.Sprintf("LOCAL_RANK=%d", r),
			fmt.Sprintf("LOCAL_WORLD_SIZE=%d", n))
	case OpenMPI:
		return []string{fmt.Sprintf("OMPI_COMM_WORLD_RANK=%d", r), fmt.Sprintf("OMPI_COMM_WORLD_SIZE=%d", n),
			fmt.Sprintf("OMPI_COMM_WORLD_LOCAL_RANK=%d", r), fmt.Sprintf("OMPI_COMM_WORLD_LOCAL_SIZE=%d", n),
			ranks.EnvRendezvous + "=file:" + filepath.Join(dir, "rendezvous")}
	case Slurm:
		return append(master, fmt.Sprintf("SLURM_PROCID=%d", r), fmt.Sprintf("SLURM_NTASKS=%d", n), fmt.Sprintf("SLURM_LOCALID=%d", r),
			"SLURM_NODEID=0", fmt.Sprintf("SLURM_TASKS_PER_NODE=%d", n))
	}
	t.Fatalf("unknown launcher %q (want %s, %s or %s)", launcher, Torchrun, OpenMPI, Slurm)
	return nil
}

// Job starts n processes as launcher would, rank r's from command(r, out) with the launcher's
// environment added to its own (the process's when command sets none), where out is the file
// rank r writes its entries to (JSON), waits for all of them and returns rank 0's entries.
func Job(t testing.TB, launcher string, n int, command func(r int, out string) *exec.Cmd) []results.Entry {
	t.Helper()
	port, err := ranks.FreePort()
	require.NoError(t, err)
	dir := t.TempDir()
	var cmds []*exec.Cmd
	for r := range n {
		cmd := command(r, filepath.Join(dir, fmt.Sprintf("rank%d.json", r)))
		if cmd.Env == nil {
			cmd.Env = os.Environ()
		}
		cmd.Env = append(cmd.Env, Env(t, launcher, r, n, port, dir)...)
		require.NoError(t, cmd.Start())
		cmds = append(cmds, cmd)
	}
	for r, c := range cmds {
		require.NoError(t, c.Wait(), "rank %d (started as %s would)", r, launcher)
	}
	b, err := os.ReadFile(filepath.Join(dir, "rank0.json"))
	require.NoError(t, err)
	var es []results.Entry
	require.NoError(t, json.Unmarshal(b, &es))
	return es
}
