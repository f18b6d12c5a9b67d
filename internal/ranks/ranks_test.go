package ranks

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestFromEnvReadsEveryLauncher(t *testing.T) {
	cases := []struct {
		name string
		env  map[string]string
		want World
	}{
		{"torchrun", map[string]string{"RANK": "3", "WORLD_SIZE": "8", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2",
			"MASTER_ADDR": "node0", "MASTER_PORT": "29500"},
			World{Rank: 3, Size: 8, LocalRank: 1, LocalSize: 2, Launcher: "torchrun", Rendezvous: "node0:29500"}},
		{"mpirun", map[string]string{"OMPI_COMM_WORLD_RANK": "5", "OMPI_COMM_WORLD_SIZE": "16", "OMPI_COMM_WORLD_LOCAL_RANK": "5",
			"OMPI_COMM_WORLD_LOCAL_SIZE": "8", "LABRUN_RENDEZVOUS": "file:/shared/rdv"},
			World{Rank: 5, Size: 16, LocalRank: 5, LocalSize: 8, Launcher: "mpirun", Rendezvous: "file:/shared/rdv"}},
		{"srun", map[string]string{"SLURM_PROCID": "6", "SLURM_NTASKS": "7", "SLURM_LOCALID": "2", "SLURM_NODEID": "1",
			"SLURM_TASKS_PER_NODE": "4,3", "MASTER_ADDR": "n0", "MASTER_PORT": "1"},
			World{Rank: 6, Size: 7, LocalRank: 2, LocalSize: 3, Launcher: "srun", Rendezvous: "n0:1"}},
		{"labrun", map[string]string{"RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "2",
			"LABRUN_LAUNCHER": "labrun", "LABRUN_RENDEZVOUS": "127.0.0.1:4000"},
			World{Rank: 0, Size: 2, LocalRank: 0, LocalSize: 2, Launcher: "labrun", Rendezvous: "127.0.0.1:4000"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, ok, err := FromEnv(envOf(c.env))
			require.NoError(t, err)
			assert.True(t, ok)
			assert.Equal(t, c.want, w)
		})
	}
	w, ok, err := FromEnv(envOf(nil))
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Equal(t, 1, w.Size)
}

func TestFromEnvErrors(t *testing.T) {
	for _, env := range []map[string]string{
		{"RANK": "1"},                               // no world size
		{"RANK": "2", "WORLD_SIZE": "2"},            // rank past the world
		{"RANK": "x", "WORLD_SIZE": "2"},            // not a number
		{"RANK": "1", "WORLD_SIZE": "2"},            // no rendezvous
		{"SLURM_PROCID": "0", "SLURM_NTASKS": "-1"}, // negative
	} {
		_, _, err := FromEnv(envOf(env))
		assert.Error(t, err, "%v", env)
	}
}

func TestSlurmLocalSize(t *testing.T) {
	assert.Equal(t, 2, slurmLocalSize("2(x3),1", "2"))
	assert.Equal(t, 1, slurmLocalSize("2(x3),1", "3"))
	assert.Equal(t, 4, slurmLocalSize("4", "0"))
	assert.Equal(t, 0, slurmLocalSize("", "0"))
}

// meetAll runs n ranks in goroutines and gathers each rank's id twice.
func meetAll(t *testing.T, n int, rendezvous string) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	got := make([][][]byte, n)
	errs := make([]error, n)
	for r := 0; r < n; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			g, err := Meet(ctx, World{Rank: r, Size: n, Rendezvous: rendezvous})
			if err != nil {
				errs[r] = err
				return
			}
			defer g.Close()
			if err := Barrier(ctx, g); err != nil {
				errs[r] = err
				return
			}
			got[r], errs[r] = g.AllGather(ctx, []byte(fmt.Sprintf("rank %d", r)))
		}(r)
	}
	wg.Wait()
	for r := 0; r < n; r++ {
		require.NoError(t, errs[r], "rank %d", r)
		require.Len(t, got[r], n)
		for q := 0; q < n; q++ {
			assert.Equal(t, fmt.Sprintf("rank %d", q), string(got[r][q]))
		}
	}
}

func TestRendezvousTCP(t *testing.T) {
	for _, n := range []int{2, 3, 4} {
		port, err := FreePort()
		require.NoError(t, err)
		meetAll(t, n, fmt.Sprintf("127.0.0.1:%d", port))
	}
}

func TestRendezvousFiles(t *testing.T) {
	meetAll(t, 3, "file:"+filepath.Join(t.TempDir(), "rdv"))
}

func TestRendezvousLostRank(t *testing.T) {
	port, err := FreePort()
	require.NoError(t, err)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		g, err := Meet(ctx, World{Rank: 0, Size: 2, Rendezvous: addr})
		if err == nil {
			_, err = g.AllGather(ctx, []byte("x"))
			g.Close()
		}
		done <- err
	}()
	g, err := Meet(ctx, World{Rank: 1, Size: 2, Rendezvous: addr})
	require.NoError(t, err)
	g.Close() // rank 1 dies before the first round
	err = <-done
	require.Error(t, err)
	assert.Contains(t, err.Error(), "lost rank 1")
}
