package results

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/bench"
	"github.com/kernel-labs/kernellabs/internal/gpu"
)

func sample() *File {
	return &File{
		Lab:    "01_device_props",
		Device: gpu.DeviceInfo{Backend: "cuda", Name: "NVIDIA H200", ComputeMajor: 9, SMs: 132},
		Time:   time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC),
		Entries: []Entry{
			{Suite: "hbm", Variant: "copy", Problem: "1GiB", Status: StatusOK, Time: &bench.Stats{N: 3, MedianMs: 0.5}, GBps: 4000},
			{Suite: "hbm", Variant: "memcpy", Problem: "1GiB", Status: StatusOK, Time: &bench.Stats{N: 3, MedianMs: 0.52}},
		},
		Extra: map[string]any{"ceilings": map[string]any{"hbm_gbps": 4000.0}},
	}
}

func TestSaveLoadRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "results", "nvidia-h200", "01_device_props.json")
	require.NoError(t, Save(path, sample()))
	got, err := Load(path)
	require.NoError(t, err)
	assert.Equal(t, Schema, got.Schema)
	assert.Equal(t, sample().Entries, got.Entries)
	// No temporary files are left behind.
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "*.tmp"))
	assert.Empty(t, left)
}

func TestLoadMissingIsNotAnError(t *testing.T) {
	f, err := Load(filepath.Join(t.TempDir(), "none.json"))
	require.NoError(t, err)
	assert.Nil(t, f)
}

func TestLoadRejectsCorruptFiles(t *testing.T) {
	tests := map[string]string{
		"truncated":       `{"schema": 1, "lab": "01_device_props", "entries": [`,
		"not json":        `hello`,
		"unknown field":   `{"schema": 1, "lab": "x", "entriez": []}`,
		"wrong schema":    `{"schema": 99, "lab": "x", "entries": []}`,
		"trailing data":   `{"schema": 1, "lab": "x", "entries": []} {}`,
		"entry lacks key": `{"schema": 1, "lab": "x", "entries": [{"suite": "s", "status": "ok"}]}`,
	}
	for name, body := range tests {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "r.json")
			require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
			_, err := Load(path)
			var ce *CorruptError
			require.ErrorAs(t, err, &ce)
			assert.Contains(t, err.Error(), "will not overwrite")
			assert.Contains(t, err.Error(), path)
		})
	}
}

func TestMergeKeepsOtherEntries(t *testing.T) {
	old := sample()
	newer := &File{Lab: old.Lab, Device: old.Device, Entries: []Entry{
		{Suite: "hbm", Variant: "copy", Problem: "1GiB", Status: StatusWrong},
		{Suite: "hbm", Variant: "copy", Problem: "2GiB", Status: StatusOK},
	}, Extra: map[string]any{"properties": 1}}
	m := Merge(old, newer)
	require.Len(t, m.Entries, 3)
	assert.Equal(t, StatusWrong, m.Find("hbm", "copy", "1GiB").Status)
	assert.NotNil(t, m.Find("hbm", "memcpy", "1GiB"))
	assert.NotNil(t, m.Find("hbm", "copy", "2GiB"))
	assert.Contains(t, m.Extra, "ceilings")
	assert.Contains(t, m.Extra, "properties")
	// old is not modified
	assert.Equal(t, StatusOK, old.Find("hbm", "copy", "1GiB").Status)
}

func TestSaveLeavesOldFileWhenDirIsReadOnly(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("running as root: permissions do not stop writes")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "r.json")
	require.NoError(t, Save(path, sample()))
	require.NoError(t, os.Chmod(dir, 0o555))
	defer os.Chmod(dir, 0o755)
	require.Error(t, Save(path, &File{Lab: "other"}))
	got, err := Load(path)
	require.NoError(t, err)
	assert.Equal(t, "01_device_props", got.Lab)
}

func TestDeviceSlug(t *testing.T) {
	assert.Equal(t, "nvidia-h200", DeviceSlug(gpu.DeviceInfo{Name: "NVIDIA H200"}))
	assert.Equal(t, "nvidia-h100-80gb-hbm3", DeviceSlug(gpu.DeviceInfo{Name: "NVIDIA H100 80GB HBM3"}))
	assert.Equal(t, "emulator", DeviceSlug(gpu.DeviceInfo{Name: "Kernel Labs CPU emulator", Emulated: true}))
	assert.Equal(t, "unknown-device", DeviceSlug(gpu.DeviceInfo{}))
}

func TestRanksSlugKeepsWorldSizesApart(t *testing.T) {
	h200 := gpu.DeviceInfo{Name: "NVIDIA H200"}
	assert.Equal(t, "nvidia-h200", RanksSlug(h200, 0), "a lab of one process")
	assert.Equal(t, "nvidia-h200", RanksSlug(h200, 1))
	assert.Equal(t, "nvidia-h200-x2", RanksSlug(h200, 2))
	assert.Equal(t, "nvidia-h200-x8", RanksSlug(h200, 8))
	assert.Equal(t, "emulator", RanksSlug(gpu.DeviceInfo{Emulated: true}, 4), "the emulator's runs check, they do not measure")
}

// Runs that update one results file at once all land: each reads the others' entries under the
// lock before it writes.
func TestUpdateFromConcurrentRunsKeepsEveryEntry(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results", "dev", "99_test.json")
	const runs = 8
	var wg sync.WaitGroup
	errs := make(chan error, runs)
	for i := 0; i < runs; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			errs <- Update(path, func(old *File) (*File, error) {
				time.Sleep(5 * time.Millisecond) // widen the window a lost update would need
				return Merge(old, &File{Lab: "99_test", Entries: []Entry{{Suite: "s", Variant: fmt.Sprintf("v%d", i),
					Problem: "p", Status: StatusOK}}}), nil
			})
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	f, err := Load(path)
	require.NoError(t, err)
	assert.Len(t, f.Entries, runs, "every run's entry is in the file")
}

func TestUpdateNeverOverwritesACorruptFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.json")
	require.NoError(t, os.WriteFile(path, []byte("{not json"), 0o644))
	called := false
	err := Update(path, func(*File) (*File, error) { called = true; return &File{Lab: "x"}, nil })
	var ce *CorruptError
	require.ErrorAs(t, err, &ce)
	assert.False(t, called)
	b, _ := os.ReadFile(path)
	assert.Equal(t, "{not json", string(b))
}

func TestWorldSize(t *testing.T) {
	h200 := gpu.DeviceInfo{Name: "NVIDIA H200"}
	for _, c := range []struct {
		name string
		file File
		slug string
		want int
	}{
		{"recorded ranks win", File{Device: h200, Ranks: 4}, "nvidia-h200-x2", 4},
		{"older file: the folder's -xN", File{Device: h200}, "nvidia-h200-x2", 2},
		{"lone process", File{Device: h200}, "nvidia-h200", 1},
		{"-x that is not a world size", File{Device: gpu.DeviceInfo{Name: "Box-x9"}}, "box-x9", 1},
		{"another device's folder", File{Device: h200}, "nvidia-h100-x2", 1},
	} {
		assert.Equal(t, c.want, WorldSize(&c.file, c.slug), c.name)
	}
}
