package lab

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/results"
)

// Runs that meet a fault lose nothing they measured and say what happened.

// A results folder that cannot be written (here its path is taken by a file, which stops root
// too) does not lose the run: the results go to the user's cache, and the error says where.
func TestRunWithAnUnwritableResultsFolderSavesElsewhere(t *testing.T) {
	root := newCourse(t, testManifest)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	path := results.PathFor(root, gpu.DeviceInfo{Name: "Fake Device"}, "99_test")
	require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Dir(path)), 0o755))
	require.NoError(t, os.WriteFile(filepath.Dir(path), []byte("not a folder"), 0o644))
	out, err := Run(context.Background(), Options{Root: root, Lab: "99", Backend: "fake", Variants: []string{"good"},
		Quick: true, Worker: testWorker})
	require.NoError(t, err)
	require.Error(t, out.SaveError)
	require.NotEmpty(t, out.SavedTo)
	assert.NotEqual(t, out.Path, out.SavedTo)
	assert.Contains(t, out.SaveError.Error(), "this run's results were saved to "+out.SavedTo)
	saved, err := results.Load(out.SavedTo)
	require.NoError(t, err)
	require.NotNil(t, saved.Find("scale", "good", "small"))
}

// A custom problem the suite cannot take is refused before anything runs: no entry is written.
func TestBadCustomProblemIsRefusedBeforeAnyEntry(t *testing.T) {
	root := newCourse(t, testManifest+"custom_flags:\n  - {name: n, help: {en: the size}, sets: [n]}\n")
	for _, v := range []string{"0", "-3", "lots"} {
		out, err := Run(context.Background(), Options{Root: root, Lab: "99", Backend: "fake", Variants: []string{"good"},
			Custom: map[string]string{"n": v}, Worker: testWorker})
		var ue *UsageError
		require.ErrorAs(t, err, &ue, v)
		assert.Nil(t, out)
		_, statErr := os.Stat(results.PathFor(root, gpu.DeviceInfo{Name: "Fake Device"}, "99_test"))
		assert.True(t, os.IsNotExist(statErr), "--n %s: no results file is written", v)
	}
}

// The job in flight when a run is interrupted is reported as interrupted, not as a crash or a
// failure of its variant, and is not saved as a result.
func TestInterruptedJobIsNotACrash(t *testing.T) {
	root := newCourse(t, testManifest)
	run := func(noSave bool) *Outcome {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(700*time.Millisecond, cancel)
		out, err := Run(ctx, Options{Root: root, Lab: "99", Backend: "fake", Variants: []string{"hang"}, Quick: true,
			NoSave: noSave, Worker: testWorker})
		require.NoError(t, err)
		return out
	}
	assert.Equal(t, 1, run(true).Unfinished, "counted without saving too")
	out := run(false)
	e := out.Results.Find("scale", "hang", "small")
	require.NotNil(t, e)
	assert.NotEqual(t, results.StatusCrashed, e.Status)
	assert.Contains(t, e.Error, "interrupted")
	assert.Equal(t, 1, out.Unfinished)
	assert.False(t, out.Finished(e), "the CLI leaves it out of the tables")
	assert.Zero(t, out.Failures, "an interrupted job is no failure of its variant")
	saved, err := results.Load(out.Path)
	require.NoError(t, err)
	if saved != nil {
		assert.Nil(t, saved.Find("scale", "hang", "small"), "an interrupted job is not a result")
	}
}
