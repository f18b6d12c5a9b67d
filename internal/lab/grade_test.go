package lab

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/results"
)

// gradeManifest is a lab with a grading section (the grader's tests run it too). It is read by
// the tests, not at init: the test binary also runs as the engine's worker, elsewhere.
func gradeManifest(t *testing.T) string {
	b, err := os.ReadFile(filepath.Join("testdata", "grade_lab.yaml"))
	require.NoError(t, err)
	return string(b)
}

func TestPlanErrors(t *testing.T) {
	root := newCourse(t, gradeManifest(t))
	for _, j := range []Job{
		{Suite: "nope", Variant: "good", Problem: "odd", Set: "grade"},
		{Suite: "scale", Variant: "nope", Problem: "odd", Set: "grade"},
		{Suite: "scale", Variant: "good", Problem: "nope", Set: "grade"},
		{Suite: "scale", Variant: "good", Problem: "odd", Set: "grade", Mode: "fast"},
	} {
		_, err := Run(context.Background(), Options{Root: root, Lab: "99", Backend: "fake", NoSave: true, Plan: []Job{j}})
		var ue *UsageError
		assert.ErrorAs(t, err, &ue, "%+v", j)
	}
}

func TestFilesReplaceKernelSources(t *testing.T) {
	root := newCourse(t, gradeManifest(t))
	man, err := LoadManifest(filepath.Join(root, "labs", "99_test"))
	require.NoError(t, err)
	be, info := fakeBackend(t)
	sub := filepath.Join(t.TempDir(), "mine.cu")
	r := &runner{o: Options{Root: root, Files: map[string]string{"k.cu": sub}, Variants: []string{"good"}, Progress: io.Discard},
		man: man, be: be, info: info, set: "grade", compileErr: map[*Variant]string{}}
	images, failed, _ := r.build(context.Background())
	assert.Empty(t, failed)
	// The fake toolchain's image is its source: the submission was built, not the lab's k.cu.
	assert.Equal(t, sub, images[imageKey("k.cu", "scale_good", nil)])
}

func TestGradingSection(t *testing.T) {
	root := newCourse(t, gradeManifest(t))
	m, err := LoadManifest(filepath.Join(root, "labs", "99_test"))
	require.NoError(t, err)
	g := m.Grading
	require.NotNil(t, g)
	assert.Equal(t, 0.5, g.PassMark)
	assert.Equal(t, DefaultGradeRounds, g.Rounds)
	assert.Equal(t, 3*time.Second, g.TimeLimit) // the lab's timeout
	ex := g.Exercises[0]
	assert.Equal(t, "good", ex.V.Name)
	assert.Equal(t, "lib", ex.Ref.Name)
	assert.Equal(t, []string{"one", "odd"}, ex.Tests[0].TestProblems())
	assert.True(t, ex.Tests[1].Hidden)
	assert.Equal(t, DefaultFullWithin, ex.Speed.FullWithin)
	assert.Equal(t, DefaultSpeedReps, ex.Speed.Reps)
	assert.Equal(t, "small", ex.Speed.ReferenceProblem("small"), "without against, the reference is timed on the same problem")
	ex.Speed.Against = map[string]string{"small": "aligned"}
	assert.Equal(t, "aligned", ex.Speed.ReferenceProblem("small"))
}

func TestGradingSectionErrorsCarryLines(t *testing.T) {
	base := strings.SplitN(gradeManifest(t), "grading:", 2)[0]
	baseLines := strings.Count(base, "\n")
	tests := []struct {
		name, grading, want string
		line                int // within the grading section (1 = "grading:")
	}{
		{"unknown variant", "grading:\n  exercises:\n    - variant: nope\n", `exercise nope: no variant "nope"`, 3},
		{"library exercise", "grading:\n  exercises:\n    - variant: lib\n", "is a library call", 3},
		{"unknown problem", "grading:\n  exercises:\n    - variant: good\n      tests:\n        - {problem: huge}\n",
			`problem "huge" is not in problems.grade`, 5},
		{"speed without reference", "grading:\n  exercises:\n    - variant: good\n      speed: {points: 1, problems: [small]}\n",
			"speed needs a reference", 4},
		{"speed problem not in gpu set", "grading:\n  exercises:\n    - variant: good\n      reference: lib\n      speed: {points: 1, problems: [one]}\n",
			`speed problem "one" is not in problems.gpu`, 5},
		{"against names no speed problem", "grading:\n  exercises:\n    - variant: good\n      reference: lib\n      speed: {points: 1, problems: [small], against: {big: small}}\n",
			`against: "big" is not one of the speed problems`, 5},
		{"against a problem not in gpu set", "grading:\n  exercises:\n    - variant: good\n      reference: lib\n      speed: {points: 1, problems: [small], against: {small: one}}\n",
			`reference problem "one" is not in problems.gpu`, 5},
		{"full_within below 1", "grading:\n  exercises:\n    - variant: good\n      reference: lib\n      speed: {points: 1, full_within: 0.5, problems: [small]}\n",
			"full_within 0.5", 5},
		{"reference is itself", "grading:\n  exercises:\n    - variant: good\n      reference: good\n", "must be another variant", 3},
		{"pass mark", "grading:\n  pass_mark: 60\n  exercises:\n    - variant: good\n", "pass_mark 60", 1},
		{"no exercises", "grading:\n  rounds: 2\n", "no exercises", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := newCourse(t, base+tc.grading)
			_, err := LoadManifest(filepath.Join(root, "labs", "99_test"))
			require.Error(t, err)
			assert.Contains(t, err.Error(), fmt.Sprintf("lab.yaml:%d: ", baseLines+tc.line))
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	// A graded suite's tolerance must fail an all-zeros output.
	loose := strings.Replace(gradeManifest(t), "tolerance: 1e-6", "tolerance: 1.5", 1)
	root := newCourse(t, loose)
	_, err := LoadManifest(filepath.Join(root, "labs", "99_test"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "an all-zeros output (relative error 1) could pass")
}

func TestJSONSafeEntry(t *testing.T) {
	e := jsonSafeEntry(results.Entry{Suite: "s"})
	assert.Nil(t, e.Check)
}

func TestImagesAreKeyedByFlags(t *testing.T) {
	// A debug build (-DKL_TIMELINE) of a file and entry is another image than the plain build.
	assert.NotEqual(t, imageKey("k.cu", "e", nil), imageKey("k.cu", "e", []string{"-DKL_TIMELINE"}))
	assert.Equal(t, imageKey("k.cu", "e", []string{"-DA", "-DB"}), imageKey("k.cu", "e", []string{"-DA", "-DB"}))
}
