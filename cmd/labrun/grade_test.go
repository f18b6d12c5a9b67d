package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/kernel-labs/kernellabs/internal/gpu/emu/emucc/emutest"
	_ "github.com/kernel-labs/kernellabs/internal/gpu/fake" // a GPU backend with one device
	"github.com/kernel-labs/kernellabs/internal/grade"
	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/labtest"
	"github.com/kernel-labs/kernellabs/internal/solution"
)

// The test binary doubles as labrun's worker: the engine re-executes it with lab.WorkerArg.
func TestMain(m *testing.M) { labtest.Main(m) }

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := lab.FindRoot(".")
	require.NoError(t, err)
	return root
}

// gradedLabs lists the course's labs with exercises that labrun carries (imports.go).
func gradedLabs(t *testing.T, root string) []string {
	t.Helper()
	labs, err := grade.Labs(root)
	require.NoError(t, err)
	var out []string
	for _, l := range labs {
		if _, ok := lab.DriverFor(l); !ok {
			t.Logf("lab %s has exercises but cmd/labrun does not import its driver yet: not graded here", l)
			continue
		}
		out = append(out, l)
	}
	if len(out) == 0 {
		t.Skip("no lab with exercises is imported by cmd/labrun")
	}
	if solution.IsStudentEdition(root) {
		t.Skip("student edition: the exercise files hold the student's code, not the reference solutions to check the grader against")
	}
	return out
}

// gsResults is what the tests read of results.json. Gradescope's format has no top-level maximum:
// the report carries it in extra_data (see internal/grade's WriteGradescope), and readResults
// copies it into MaxScore.
type gsResults struct {
	Score     float64 `json:"score"`
	MaxScore  float64 `json:"-"`
	ExtraData struct {
		MaxScore float64 `json:"max_score"`
	} `json:"extra_data"`
	Tests []struct {
		Name     string  `json:"name"`
		Score    float64 `json:"score"`
		MaxScore float64 `json:"max_score"`
		Status   string  `json:"status"`
		Output   string  `json:"output"`
	} `json:"tests"`
}

func readResults(t *testing.T, path string) gsResults {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var r gsResults
	require.NoError(t, json.Unmarshal(raw, &r))
	r.MaxScore = r.ExtraData.MaxScore
	return r
}

// For every lab with exercises: the reference solutions score full marks, the exported stubs
// compile and score zero on correctness.
func TestGradeEveryLabWithExercises(t *testing.T) {
	emutest.Need(t)
	root := repoRoot(t)
	labs := gradedLabs(t, root)
	student := filepath.Join(t.TempDir(), "student")
	code, out, stderr := runCLI("export", student)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, out, "the stubs compile")
	for _, l := range labs {
		t.Run(l, func(t *testing.T) {
			started := time.Now()
			dir := t.TempDir()
			code, stdout, stderr := runCLI("grade", l, "--backend", "emu", "--out", dir)
			require.Equal(t, exitOK, code, "%s\n%s", stdout, stderr)
			ref := readResults(t, filepath.Join(dir, grade.FileGradescope))
			assert.Greater(t, ref.MaxScore, 0.0)
			assert.Equal(t, ref.MaxScore, ref.Score, stdout)
			assert.Contains(t, stdout, "PASSED")

			dir = t.TempDir()
			code, stdout, stderr = runCLI("grade", l, "--backend", "emu", "--submission", student, "--out", dir)
			require.Equal(t, exitFailures, code, "%s\n%s", stdout, stderr)
			stubs := readResults(t, filepath.Join(dir, grade.FileGradescope))
			assert.Zero(t, stubs.Score, stdout)
			for _, tc := range stubs.Tests {
				if tc.MaxScore > 0 {
					assert.Equal(t, "failed", tc.Status, tc.Name)
					assert.NotContains(t, tc.Output, "does not compile", "the stubs must compile")
				}
			}
			assert.Contains(t, stdout, "NOT PASSED")
			t.Logf("lab %s: reference %g/%g, stubs %g/%g, in %.1fs", l, ref.Score, ref.MaxScore, stubs.Score, stubs.MaxScore,
				time.Since(started).Seconds())
		})
	}
}

func TestGradeCLIErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "report.txt")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no lab", []string{"grade"}, exitUsage, "which lab?"},
		{"unknown lab", []string{"grade", "42"}, exitUsage, `unknown lab "42"`},
		{"lab without exercises", []string{"grade", "01", "--backend", "emu"}, exitUsage, "has no exercises to grade"},
		{"missing submission", []string{"grade", "02", "--backend", "emu", "--submission", "/nonexistent/x.cu"}, exitUsage, "--submission"},
		{"unknown exercise", []string{"grade", "02", "--backend", "emu", "--exercise", "ex9"}, exitUsage, "has no exercise ex9"},
		{"bad flag", []string{"grade", "02", "--frob"}, exitUsage, "unknown flag --frob"},
		{"export without folder", []string{"export"}, exitUsage, "where to?"},
		{"export into the course", []string{"export", "../.."}, exitUsage, "the course itself"},
		{"export inside the course", []string{"export", "student"}, exitUsage, "inside the course tree"},
		{"labs twice", []string{"grade", "02", "--labs", "03"}, exitUsage, "give the labs once"},
		// Values that make no sense are refused at once, before anything is built.
		{"negative rounds", []string{"grade", "02", "--rounds", "-1"}, exitUsage, "--rounds -1: give a number of checked runs"},
		{"negative time limit", []string{"grade", "02", "--time-limit", "-1s"}, exitUsage, "--time-limit -1s: give a positive duration"},
		{"negative total time limit", []string{"grade", "02", "--total-time-limit=-5m"}, exitUsage, "--total-time-limit -5m0s: give a positive duration"},
		{"reports into a file", []string{"grade", "02", "--out", file}, exitUsage, "--out " + file + " is a file: give a folder"},
		{"site into a file", []string{"site", "--out", file}, exitUsage, "--out " + file + " is a file: give a folder"},
		{"export into a file", []string{"export", file}, exitUsage, file + " is a file: give a folder"},
		{"negative regression threshold", []string{"compare", file, file, "--fail-on-regression", "-5"}, exitUsage, "--fail-on-regression -5: give a percentage of 0 or more"},
		{"unknown lab in --labs", []string{"grade", "--labs", "02,42"}, exitUsage, `unknown lab "42"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCLI(tc.args...)
			assert.Equal(t, tc.code, code, stderr)
			assert.Contains(t, stderr, tc.want)
		})
	}
	code, out, _ := runCLI("grade", "--help")
	assert.Equal(t, exitOK, code)
	assert.Contains(t, out, "--submission")
	assert.Contains(t, out, lab.SecretSeedEnv)
	code, out, _ = runCLI("help")
	assert.Equal(t, exitOK, code)
	assert.Contains(t, out, "labrun grade NN|all")
	assert.Contains(t, out, "labrun export DIR")
}

// `labrun export` and then the commands of the workflow it writes, run in a clean folder as the
// GitHub runner would: they build labrun and grade the stubs to zero.
func TestStudentWorkflowGradesStubsToZero(t *testing.T) {
	emutest.Need(t)
	root := repoRoot(t)
	gradedLabs(t, root)
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH")
	}
	student := filepath.Join(t.TempDir(), "student")
	code, _, stderr := runCLI("export", student)
	require.Equal(t, exitOK, code, stderr)

	raw, err := os.ReadFile(filepath.Join(student, filepath.FromSlash(grade.WorkflowPath)))
	require.NoError(t, err)
	var wf struct {
		Jobs map[string]struct {
			RunsOn string `yaml:"runs-on"`
			Steps  []struct {
				Name string            `yaml:"name"`
				Uses string            `yaml:"uses"`
				Run  string            `yaml:"run"`
				Env  map[string]string `yaml:"env"`
				With map[string]string `yaml:"with"`
				If   string            `yaml:"if"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	assert.Contains(t, string(raw), "feedback only")
	require.NoError(t, yaml.Unmarshal(raw, &wf))
	job, ok := wf.Jobs["grade"]
	require.True(t, ok)
	assert.Equal(t, "ubuntu-latest", job.RunsOn)

	env := []string{}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "LABRUN_ROOT=") && !strings.HasPrefix(kv, "GITHUB_STEP_SUMMARY=") {
			env = append(env, kv)
		}
	}
	summary := filepath.Join(t.TempDir(), "step-summary.md")
	env = append(env, "GITHUB_STEP_SUMMARY="+summary, "GOFLAGS=-buildvcs=false")
	var uploaded string
	graded := false
	for _, st := range job.Steps {
		switch {
		case strings.Contains(st.Uses, "upload-artifact"):
			uploaded = st.With["path"]
			assert.Equal(t, "always()", st.If, "the reports are uploaded even when the grade fails")
			continue
		case st.Uses != "":
			continue // checkout and setup-go: the folder and Go are already here
		case strings.Contains(st.Run, "apt-get"):
			t.Logf("skipping %q: the packages are installed here", st.Name)
			continue
		}
		started := time.Now()
		cmd := exec.Command("bash", "-eo", "pipefail", "-c", st.Run)
		cmd.Dir = student
		cmd.Env = append([]string{}, env...)
		for k, v := range st.Env {
			switch {
			case strings.Contains(v, "secrets."):
				v = "a secret for the test"
			case strings.Contains(v, "vars."): // a repository variable that is not set: its default
				m := regexp.MustCompile(`\|\|\s*'([^']*)'`).FindStringSubmatch(v)
				require.NotNil(t, m, "%s: a repository variable needs a default (|| 'value')", k)
				v = m[1]
			}
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		output, err := cmd.CombinedOutput()
		if strings.Contains(st.Run, "labrun grade") {
			graded = true
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee, "the stubs are below the pass mark: the step must fail\n%s", output)
			assert.Equal(t, exitFailures, ee.ExitCode(), string(output))
		} else {
			require.NoError(t, err, "step %q:\n%s", st.Name, output)
		}
		t.Logf("step %q: %.1fs", st.Name, time.Since(started).Seconds())
	}
	require.True(t, graded, "the workflow runs labrun grade")
	require.NotEmpty(t, uploaded)
	res := readResults(t, filepath.Join(student, filepath.FromSlash(strings.TrimSuffix(uploaded, "/")), grade.FileGradescope))
	assert.Zero(t, res.Score)
	assert.Greater(t, res.MaxScore, 0.0)
	md, err := os.ReadFile(summary)
	require.NoError(t, err)
	assert.Contains(t, string(md), "❌ not passed")
}

// The grade of record reads nothing of the student's repository but its exercise files: a
// repository whose lab.yaml, grader and workflow were edited gets exactly the grade of one that
// was not (both hold the reference solutions, so the grade is not vacuously zero).
func TestGradeOfRecordIgnoresTheStudentsGrader(t *testing.T) {
	emutest.Need(t)
	root := repoRoot(t)
	labs := gradedLabs(t, root)
	m, err := lab.LoadManifest(filepath.Join(root, "labs", labs[0]))
	require.NoError(t, err)
	g, _ := grade.GradingOf(m)
	ex := g.Exercises[0]
	problem := ex.V.Suite.Problems.Grade[0].Name
	for _, tc := range ex.Tests {
		if !tc.Hidden && len(tc.TestProblems()) > 0 {
			problem = tc.TestProblems()[0]
			break
		}
	}
	repo := func(tamper bool) string {
		dir := t.TempDir()
		put := func(rel string, data []byte) {
			p := filepath.Join(dir, filepath.FromSlash(rel))
			require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			require.NoError(t, os.WriteFile(p, data, 0o644))
		}
		for _, e := range g.Exercises {
			b, err := os.ReadFile(filepath.Join(m.Dir, e.V.File))
			require.NoError(t, err)
			put(filepath.ToSlash(filepath.Join("labs", m.Name, e.V.File)), b)
		}
		if tamper {
			y, err := os.ReadFile(filepath.Join(m.Dir, "lab.yaml"))
			require.NoError(t, err)
			y = regexp.MustCompile(`points: [0-9.]+`).ReplaceAll(y, []byte("points: 100"))
			y = regexp.MustCompile(`pass_mark: [0-9.]+`).ReplaceAll(y, []byte("pass_mark: 0"))
			put(filepath.ToSlash(filepath.Join("labs", m.Name, "lab.yaml")), y)
			put("internal/grade/grade.go", []byte("package grade\n\n// Every test passes.\n"))
			put("internal/grade/report.go", []byte("package grade\n"))
			put(grade.WorkflowPath, []byte("name: grade\non: push\njobs: {}\n"))
		}
		return dir
	}
	gradeOf := func(sub string) gsResults {
		out := t.TempDir()
		code, stdout, stderr := runCLI("grade", "--labs", m.ID, "--backend", "emu", "--submission", sub, "--exercise", ex.V.Name,
			"--problem", problem, "--rounds", "1", "--seed", "7", "--out", out)
		require.Equal(t, exitOK, code, "%s\n%s", stdout, stderr)
		return readResults(t, filepath.Join(out, grade.FileGradescope))
	}
	plain, tampered := gradeOf(repo(false)), gradeOf(repo(true))
	assert.Positive(t, plain.Score)
	t.Logf("%s / %s: %g points of %d test(s), with or without the edits", ex.V.Name, problem, plain.Score, len(plain.Tests))
	assert.Equal(t, plain, tampered, "the student's lab.yaml, grader and workflow change nothing")
}
