//go:build cgo

package emu

import (
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

func TestSharedMemoryStartsAsNaN(t *testing.T) {
	d := openDev(t, 0)
	k := kernelOf(t, d, "schedule.cu", "stale_shared")
	const blocks, threads = 8, 256
	out := alloc[uint32](t, d, blocks*threads)
	require.NoError(t, gpu.Launch(k, gpu.LaunchConfig{Grid: gpu.D1(blocks), Block: gpu.D1(threads)}, out))
	require.NoError(t, d.Synchronize())
	for i, v := range download(t, out) {
		require.Equal(t, uint32(0xFFFFFFFF), v, "element %d: shared memory read before any write must be NaN", i)
	}
}

// orders runs kernel name and returns the order its blocks (or threads) recorded.
func orders(t *testing.T, name string, grid, block int) []int32 {
	d := openDev(t, 0)
	k := kernelOf(t, d, "schedule.cu", name)
	n := max(grid, block)
	order := alloc[int32](t, d, n)
	counter := upload(t, d, []int32{0})
	require.NoError(t, gpu.Launch(k, gpu.LaunchConfig{Grid: gpu.D1(grid), Block: gpu.D1(block)}, order, counter))
	require.NoError(t, d.Synchronize())
	return download(t, order)
}

// The schedule is read once per process, so each schedule runs in a child test process.
func TestAdversarialSchedule(t *testing.T) {
	needEmu(t)
	if os.Getenv("KL_SCHED_CHILD") != "" {
		SetSMs(1)
		defer SetSMs(0)
		blocks := orders(t, "block_order", 64, 32)
		threads := orders(t, "thread_order", 1, 256)
		t.Logf("blocks %v", blocks)
		t.Logf("threads %v", threads)
		return
	}
	run := func(schedule string) (blocks, threads []int32) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestAdversarialSchedule$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), "KL_SCHED_CHILD=1", EnvSchedule+"="+schedule)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, string(out))
		parse := func(tag string) []int32 {
			for _, l := range strings.Split(string(out), "\n") {
				if i := strings.Index(l, tag+" ["); i >= 0 {
					var v []int32
					for _, f := range strings.Fields(strings.Trim(l[i+len(tag)+1:], "[] ")) {
						var x int32
						for _, c := range f {
							x = x*10 + int32(c-'0')
						}
						v = append(v, x)
					}
					return v
				}
			}
			t.Fatalf("no %s in %s", tag, out)
			return nil
		}
		return parse("blocks"), parse("threads")
	}
	sorted := func(v []int32) bool { return sort.SliceIsSorted(v, func(i, j int) bool { return v[i] < v[j] }) }
	b, th := run("")
	assert.True(t, sorted(b), "plain schedule, one SM: blocks in order")
	assert.True(t, sorted(th), "plain schedule: threads in order")
	b, th = run("adversarial:7")
	assert.False(t, sorted(b), "adversarial: blocks shuffled")
	assert.False(t, sorted(th), "adversarial: threads shuffled")
	for _, v := range [][]int32{b, th} {
		s := append([]int32(nil), v...)
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		for i, x := range s {
			require.Equal(t, int32(i), x, "every block and thread runs exactly once")
		}
	}
}

func TestPlainSpinHangsAsOnAGPU(t *testing.T) {
	d := openDev(t, 0)
	k := kernelOf(t, d, "schedule.cu", "plain_spin")
	SetTimeLimit(500 * time.Millisecond)
	defer SetTimeLimit(0)
	flag := upload(t, d, []uint32{0})
	out := upload(t, d, []uint32{0})
	err := gpu.Launch(k, gpu.LaunchConfig{Grid: gpu.D1(1), Block: gpu.D1(1)}, flag, out)
	if err == nil {
		err = d.Synchronize()
	}
	require.Error(t, err, "a spin on a plain load must not be optimised away")
	assert.Contains(t, err.Error(), "EMU_TIMEOUT")
}
