package main

import (
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/kernel-labs/kernellabs/internal/grade"
	"github.com/kernel-labs/kernellabs/internal/lab"
)

func cmdGrade(fs *flags, args []string, stdout, stderr io.Writer) int {
	submission := fs.String("submission", "", "a folder (a student's repository, or a folder of exercise files) or one exercise file to grade (default: the exercise files of this course tree); exercises with no file in it score 0 (--exercise grades only some)")
	backend := fs.String("backend", "auto", "cuda, emu, or auto (a GPU when there is one, else the CPU emulator: correctness only)")
	device := fs.Int("device", 0, "device index")
	seed := fs.Uint64("seed", 0, "public seed of the random inputs (default: a new one, printed)")
	outDir := fs.String("out", "grade-report", "folder for the reports: results.json (Gradescope), junit.xml, summary.md, report.json")
	asJSON := fs.Bool("json", false, "write the Gradescope results.json to stdout instead of the summary")
	rounds := fs.Int("rounds", 0, "checked runs per correctness test, each on fresh inputs (default: the lab's grading.rounds)")
	timeLimit := fs.Duration("time-limit", 0, "time limit of one test (default: the lab's grading.time_limit)")
	totalLimit := fs.Duration("total-time-limit", 0, "time limit of the whole grade of a lab (default: the lab's grading.total_time_limit)")
	noSpeed := fs.Bool("no-speed", false, "do not grade speed, even on a GPU")
	noDeviceCheck := fs.Bool("no-device-check", false, "on the emulator, grade without the device-code check (clang++ in CUDA mode); the report says so")
	unsafeNoSandbox := fs.Bool("unsafe-no-sandbox", false, "on the emulator, grade even where the kernel lacks Landlock or seccomp: the submission's code then runs unconfined and could forge its grade (the reports say so)")
	secretFile := fs.String("secret-file", "", "read the secret seed of the hidden tests from this file (\"-\": standard input) instead of $"+lab.SecretSeedEnv)
	var exercises, problems, labsFlag listFlag
	fs.Var(&labsFlag, "labs", "the labs to grade (the assigned ones), e.g. 02,03, or all; the exit status covers these alone")
	fs.Var(&exercises, "exercise", "grade only these exercises (variant names; repeat or separate with commas)")
	fs.Var(&problems, "problem", "grade only the tests on these problems (names from problems.grade)")
	fs.intro = fmt.Sprintf(`Usage: labrun grade NN|all [flags]
       labrun grade --labs 02,03 [flags]

Grades the exercise files of lab NN (or of every lab with exercises): builds the submission in
place of the lab's exercise variants, runs each on the lab's grading problems %d times or more,
each run on fresh random inputs with poisoned outputs and checked against the reference, guarded
(NaN red zones around buffers, inputs verified unchanged, time limits, crashes and hangs
isolated), and awards the points of the lab's grading section in lab.yaml. On a GPU it also
grades speed against the lab's reference kernel timed in the same run.

Reports go to --out: results.json (Gradescope), junit.xml, summary.md (also appended to
$GITHUB_STEP_SUMMARY when set) and report.json. Hidden tests draw their inputs from the public
seed combined with the secret seed ($%s, or --secret-file), which the code under test cannot
read. On the emulator a submission runs only inside a sandbox (Landlock and seccomp): where the
kernel has neither, grading refuses with exit status 3 unless --unsafe-no-sandbox.

Tests this runner cannot grade (speed without a GPU; every test of a lab that needs more GPUs
than the runner has) are listed as "not graded here" and left out of the maximum. A lab of
which nothing can be graded here is listed with the reason and counts neither way.

The grade of record: run this in the instructor's copy of the course, checked out at the commit
the students were given, with --submission pointing at a student's repository: only the
student's exercise files are read, so points, tests and grader are the instructor's
(scripts/grade-of-record.sh does exactly that).

Exit codes: 0 every lab graded here reached its pass mark; 1 a lab is below its pass mark; 2 bad
input; 3 missing GPU, compiler or library, or nothing of the labs can be graded on this runner;
4 the reports could not be written.

Flags:
`, lab.DefaultGradeRounds, lab.SecretSeedEnv)
	name, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	switch {
	case name == "" && len(labsFlag) == 0:
		fmt.Fprintln(stderr, "labrun grade: which lab? e.g. labrun grade 02, labrun grade --labs 02,03, or labrun grade all")
		return exitUsage
	case name != "" && len(labsFlag) > 0:
		fmt.Fprintf(stderr, "labrun grade: give the labs once: either %s or --labs %s\n", name, labsFlag.String())
		return exitUsage
	case name != "":
		labsFlag = listFlag{name}
	}
	// The secret seed stays in this process: out of the environment of everything it starts
	// (compilers, workers), and this process is made non-dumpable so that they cannot read it
	// from /proc either.
	if err := checkGradeFlags(*rounds, *timeLimit, *totalLimit, *outDir); err != nil {
		fmt.Fprintf(stderr, "labrun grade: %v\n", err)
		return exitUsage
	}
	secret, err := readSecret(*secretFile, os.Stdin)
	if err != nil {
		fmt.Fprintf(stderr, "labrun grade: %v\n", err)
		return exitUsage
	}
	if secret != "" {
		if err := grade.ProtectProcess(); err != nil {
			fmt.Fprintf(stderr, "labrun grade: warning: could not protect the secret seed (prctl): %v\n", err)
		}
	}
	root, code := findRoot(stderr)
	if code != exitOK {
		return code
	}
	labs, code := gradeSelection(root, labsFlag, stderr)
	if code != exitOK {
		return code
	}
	seedSet := fs.Changed("seed")

	ctx, stop := interruptible()
	defer stop()
	sum := &grade.Grades{}
	for _, l := range labs {
		rep, err := grade.Grade(ctx, grade.Options{Root: root, Lab: l, Submission: *submission, Backend: *backend,
			Device: *device, Seed: *seed, SeedSet: seedSet, Secret: secret, Rounds: *rounds, TimeLimit: *timeLimit,
			TotalTimeLimit: *totalLimit, Exercises: exercises, Problems: problems, NoSpeed: *noSpeed, Progress: stderr,
			NoDeviceCheck: *noDeviceCheck, UnsafeNoSandbox: *unsafeNoSandbox})
		if err != nil {
			return exitFor(err, stderr)
		}
		sum.Labs = append(sum.Labs, rep)
		if ctx.Err() != nil {
			break
		}
	}
	written, werr := sum.WriteAll(*outDir)
	if *asJSON {
		if err := sum.WriteGradescope(stdout); err != nil {
			fmt.Fprintf(stderr, "labrun grade: %v\n", err)
		}
	} else {
		sum.WriteText(stdout)
	}
	if len(written) > 0 {
		fmt.Fprintf(stderr, "reports: %s\n", strings.Join(written, ", "))
	}
	if werr != nil {
		fmt.Fprintf(stderr, "labrun grade: the reports could not be written: %v\n", werr)
		return exitSave
	}
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "labrun grade: interrupted")
		return exitFailures
	}
	graded := sum.Graded()
	if len(graded) == 0 {
		for _, r := range sum.NotGraded() {
			fmt.Fprintf(stderr, "labrun grade: lab %s cannot be graded on this runner: %s\n", r.Lab, r.NotGraded)
		}
		return exitEnv
	}
	if !sum.Passed() {
		return exitFailures
	}
	return exitOK
}

// gradeSelection resolves the labs to grade: "all" is every lab with exercises that this labrun
// carries; names ("2", "02", "02_gemm") are checked and kept once each, in course order.
func gradeSelection(root string, names []string, stderr io.Writer) ([]string, int) {
	withExercises, err := grade.Labs(root)
	if err != nil {
		return nil, exitFor(err, stderr)
	}
	want := map[string]bool{}
	for _, n := range names {
		if n == "all" {
			for _, l := range withExercises {
				if _, ok := lab.DriverFor(l); ok {
					want[l] = true
				} else {
					fmt.Fprintf(stderr, "labrun grade all: skipping lab %s: this labrun does not carry its driver (cmd/labrun/imports.go)\n", l)
				}
			}
			continue
		}
		m, err := lab.Load(root, n)
		if err != nil {
			return nil, exitFor(err, stderr)
		}
		want[m.Name] = true
	}
	var labs []string
	for _, d := range append(withExercises, slices.Sorted(maps.Keys(want))...) {
		if want[d] {
			labs = append(labs, d)
			delete(want, d)
		}
	}
	if len(labs) == 0 {
		fmt.Fprintln(stderr, "labrun grade: no lab of this course has exercises that this labrun can grade")
		return nil, exitUsage
	}
	return labs, exitOK
}

// readSecret takes the secret seed from a file ("-": in) or else from the environment, and in
// both cases removes the variable from this process's environment, so that nothing it starts
// inherits it.
func readSecret(file string, in io.Reader) (string, error) {
	env := os.Getenv(lab.SecretSeedEnv)
	os.Unsetenv(lab.SecretSeedEnv)
	if file == "" {
		return env, nil
	}
	var b []byte
	var err error
	if file == "-" {
		b, err = io.ReadAll(io.LimitReader(in, 4096))
	} else {
		b, err = os.ReadFile(file)
	}
	if err != nil {
		return "", fmt.Errorf("--secret-file: %w", err)
	}
	secret := strings.TrimSpace(string(b))
	if secret == "" {
		return "", fmt.Errorf("--secret-file %s is empty: write the secret seed in it", file)
	}
	return secret, nil
}

// checkGradeFlags refuses values that make no sense before anything is built.
func checkGradeFlags(rounds int, limit, total time.Duration, out string) error {
	switch {
	case rounds < 0:
		return fmt.Errorf("--rounds %d: give a number of checked runs (1 or more), or leave it out for the lab's", rounds)
	case limit < 0:
		return fmt.Errorf("--time-limit %s: give a positive duration (e.g. 2m), or leave it out for the lab's", limit)
	case total < 0:
		return fmt.Errorf("--total-time-limit %s: give a positive duration (e.g. 30m), or leave it out for the lab's", total)
	}
	if st, err := os.Stat(out); err == nil && !st.IsDir() {
		return fmt.Errorf("--out %s is a file: give a folder for the reports", out)
	}
	return nil
}
