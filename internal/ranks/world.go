// Package ranks is how labrun runs as one process per GPU, as NCCL, nccl-tests and every
// training framework do: it finds this process's place in a job (its rank, the world size, its
// rank on this node) from whichever launcher started it — labrun itself, Open MPI's mpirun,
// Slurm's srun or PyTorch's torchrun — and lets the ranks meet: rank 0 serves a small rendezvous
// (TCP at MASTER_ADDR:MASTER_PORT, or a folder on a shared filesystem) through which the ranks
// exchange bytes (the NCCL unique id, the handles of the buffers they share) and wait for each
// other.
package ranks

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// World is this process's place in a job of ranks.
type World struct {
	Rank      int    `json:"rank"`
	Size      int    `json:"size"`
	LocalRank int    `json:"local_rank"` // its rank among the ranks of its node: the GPU it takes
	LocalSize int    `json:"local_size"` // ranks on its node (0: unknown)
	Launcher  string `json:"launcher"`   // "labrun", "mpirun", "srun", "torchrun"
	// Rendezvous is where the ranks meet: "host:port" (rank 0 listens there) or "file:PATH", a
	// folder every rank can read and write.
	Rendezvous string `json:"rendezvous"`
}

// Environment variables labrun itself sets for the ranks it starts (torchrun's names, so that a
// rank cannot tell labrun from torchrun), and its own rendezvous override.
const (
	EnvRank       = "RANK"
	EnvWorldSize  = "WORLD_SIZE"
	EnvLocalRank  = "LOCAL_RANK"
	EnvLocalSize  = "LOCAL_WORLD_SIZE"
	EnvMasterAddr = "MASTER_ADDR"
	EnvMasterPort = "MASTER_PORT"
	// EnvRendezvous overrides where the ranks meet: host:port, or file:/shared/folder.
	EnvRendezvous = "LABRUN_RENDEZVOUS"
	// EnvLauncher is set by labrun for the ranks it starts.
	EnvLauncher = "LABRUN_LAUNCHER"
)

// FromEnv reads this process's World from the environment of the launcher that started it
// (getenv: os.Getenv in labrun, a map in tests). ok is false when no launcher started it: a
// plain process, world size 1. An incomplete or inconsistent set of variables is an error that
// names what is missing.
func FromEnv(getenv func(string) string) (w World, ok bool, err error) {
	num := func(name string) (int, bool, error) {
		v := getenv(name)
		if v == "" {
			return 0, false, nil
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 0 {
			return 0, true, fmt.Errorf("%s=%q is not a rank count or index", name, v)
		}
		return n, true, nil
	}
	type source struct {
		launcher                 string
		rank, size, local, lsize string
	}
	sources := []source{
		{"torchrun", EnvRank, EnvWorldSize, EnvLocalRank, EnvLocalSize},
		{"mpirun", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"},
		{"srun", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", ""},
	}
	for _, s := range sources {
		rank, hasRank, err := num(s.rank)
		if err != nil {
			return World{}, true, err
		}
		size, hasSize, err := num(s.size)
		if err != nil {
			return World{}, true, err
		}
		if !hasRank && !hasSize {
			continue
		}
		if !hasRank || !hasSize {
			return World{}, true, fmt.Errorf("%s is set without %s: set both (the rank and the world size)", pick(hasRank, s.rank, s.size), pick(hasRank, s.size, s.rank))
		}
		if size < 1 || rank >= size {
			return World{}, true, fmt.Errorf("%s=%d does not fit %s=%d", s.rank, rank, s.size, size)
		}
		w = World{Rank: rank, Size: size, LocalRank: rank, Launcher: s.launcher}
		if l, has, err := num(s.local); err != nil {
			return World{}, true, err
		} else if has {
			w.LocalRank = l
		}
		if s.lsize != "" {
			if l, has, err := num(s.lsize); err != nil {
				return World{}, true, err
			} else if has {
				w.LocalSize = l
			}
		} else if s.launcher == "srun" {
			w.LocalSize = slurmLocalSize(getenv("SLURM_TASKS_PER_NODE"), getenv("SLURM_NODEID"))
		}
		if l := getenv(EnvLauncher); l != "" {
			w.Launcher = l
		}
		w.Rendezvous = rendezvousFrom(getenv)
		if w.Rendezvous == "" && w.Size > 1 {
			return World{}, true, fmt.Errorf("rank %d of %d (started by %s) has no rendezvous: set %s and %s (rank 0's host and a free port), "+
				"or %s=host:port or %s=file:/a/shared/folder", w.Rank, w.Size, w.Launcher, EnvMasterAddr, EnvMasterPort, EnvRendezvous, EnvRendezvous)
		}
		return w, true, nil
	}
	return World{Size: 1, LocalSize: 1}, false, nil
}

func pick(cond bool, a, b string) string {
	if cond {
		return a
	}
	return b
}

func rendezvousFrom(getenv func(string) string) string {
	if r := getenv(EnvRendezvous); r != "" {
		return r
	}
	addr, port := getenv(EnvMasterAddr), getenv(EnvMasterPort)
	if addr != "" && port != "" {
		return addr + ":" + port
	}
	return ""
}

// slurmLocalSize reads this node's task count from SLURM_TASKS_PER_NODE ("4", "2(x3),1": counts
// per node in node order, "(xN)" repeating one N times); 0 when it cannot tell.
func slurmLocalSize(perNode, nodeID string) int {
	node, err := strconv.Atoi(nodeID)
	if err != nil || perNode == "" {
		return 0
	}
	i := 0
	for _, part := range strings.Split(perNode, ",") {
		count, repeat := part, 1
		if a, b, ok := strings.Cut(part, "(x"); ok {
			count = a
			r, err := strconv.Atoi(strings.TrimSuffix(b, ")"))
			if err != nil {
				return 0
			}
			repeat = r
		}
		n, err := strconv.Atoi(count)
		if err != nil {
			return 0
		}
		if node < i+repeat {
			return n
		}
		i += repeat
	}
	return 0
}

// Env is the environment that labrun gives rank r of n ranks it starts on one node, meeting at
// rendezvous: torchrun's variables, so that the ranks find their place as they would under it.
func Env(r, n int, rendezvous string) []string {
	host, port, _ := strings.Cut(rendezvous, ":")
	env := []string{
		fmt.Sprintf("%s=%d", EnvRank, r), fmt.Sprintf("%s=%d", EnvWorldSize, n),
		fmt.Sprintf("%s=%d", EnvLocalRank, r), fmt.Sprintf("%s=%d", EnvLocalSize, n),
		EnvRendezvous + "=" + rendezvous, EnvLauncher + "=labrun",
	}
	if !strings.HasPrefix(rendezvous, "file:") {
		env = append(env, EnvMasterAddr+"="+host, EnvMasterPort+"="+port)
	}
	return env
}

// Hostname names this node for grouping ranks by node (the ranks of one node can reach each
// other's memory; others cannot).
func Hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "unknown"
	}
	return h
}
