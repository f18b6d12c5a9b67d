package profile

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/lab"
)

// fakeNCU is a stand-in for ncu: it answers --version, copies $FAKE_NCU_LOG to the --log-file it
// is given, then runs the target program, and exits with the target's status.
const fakeNCU = `#!/bin/sh
if [ "$1" = "--version" ]; then
  echo "NVIDIA (R) Nsight Compute Command Line Profiler"
  echo "Version 2025.3.1.0 (build 36398880) (public-release)"
  exit 0
fi
echo "$@" >> "$FAKE_NCU_ARGS"
log=""
while [ $# -gt 0 ]; do
  case "$1" in
    --log-file) log="$2"; shift 2;;
    --launch-count) shift 2; break;;
    *) shift;;
  esac
done
cp "$FAKE_NCU_LOG" "$log"
exec "$@"
`

// course makes a course tree whose labs are the repository's and whose results folder is its own.
func course(t *testing.T) (root, bin string) {
	t.Helper()
	root = t.TempDir()
	labs, err := filepath.Abs("../../labs")
	require.NoError(t, err)
	require.NoError(t, os.Symlink(labs, filepath.Join(root, "labs")))
	bin = t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(bin, "ncu"), []byte(fakeNCU), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(bin, "labrun"), []byte("#!/bin/sh\nexit ${FAKE_RC:-0}\n"), 0o755))
	t.Setenv("FAKE_NCU_ARGS", filepath.Join(bin, "args"))
	return root, bin
}

// fakeLog makes the fake ncu copy testdata/NAME as the log it writes.
func fakeLog(t *testing.T, name string) {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", name))
	require.NoError(t, err)
	t.Setenv("FAKE_NCU_LOG", p)
}

var h200 = gpu.DeviceInfo{Backend: "cuda", Name: "NVIDIA H200", ComputeMajor: 9, SMs: 132}

func opts(root, bin string, variants ...string) Options {
	return Options{Root: root, Lab: "02", Suites: []string{"fp32"}, Variants: variants, NCU: filepath.Join(bin, "ncu"),
		Self: filepath.Join(bin, "labrun"), Info: &h200, Seed: 7}
}

func TestRunRecordsAndMerges(t *testing.T) {
	root, bin := course(t)
	fakeLog(t, "ncu_two_kernels.log")
	out, err := Run(context.Background(), opts(root, bin, "smem"))
	require.NoError(t, err)
	require.Empty(t, out.Failed)
	require.Len(t, out.Recorded, 2)
	path := filepath.Join(root, "results", "nvidia-h200", "02_gemm.profile.json")
	assert.Equal(t, path, out.SavedTo)

	f, err := Load(path)
	require.NoError(t, err)
	require.Len(t, f.Profiles, 2)
	p := f.Profiles[0]
	assert.Equal(t, "fp32", p.Suite)
	assert.Equal(t, "smem", p.Variant)
	assert.Equal(t, "4096³", p.Problem, "the suite's first --quick problem")
	assert.Equal(t, KindCompute, p.Kind, "a TFLOP/s suite")
	assert.Contains(t, f.Tool, "2025.3.1")
	assert.Contains(t, p.Command, "ncu --csv --page raw")
	assert.Contains(t, p.Command, "'regex:^sgemm_smem$'")
	assert.NotContains(t, p.Command, bin, "no paths of this machine in the record")

	args, err := os.ReadFile(filepath.Join(bin, "args"))
	require.NoError(t, err)
	assert.Contains(t, string(args), "--in-process")
	assert.Contains(t, string(args), "--suite fp32 ")
	assert.Contains(t, string(args), "--clock-control none")
	assert.NotContains(t, string(args), "--ranks", "a lab of one process")

	// A second profile of another variant keeps the first; profiling smem again replaces it.
	_, err = Run(context.Background(), opts(root, bin, "vectorized"))
	require.NoError(t, err)
	_, err = Run(context.Background(), opts(root, bin, "smem"))
	require.NoError(t, err)
	f, err = Load(path)
	require.NoError(t, err)
	assert.Len(t, f.Profiles, 4)
	assert.Equal(t, "vectorized", f.Profiles[0].Variant)
}

// A lab of ranks is profiled in-process as a world of one rank: ncu does not see the rank
// processes labrun starts.
func TestRunLabOfRanksAsOneRank(t *testing.T) {
	root, bin := course(t)
	fakeLog(t, "ncu_two_kernels.log")
	o := opts(root, bin, "fused_signal")
	o.Lab, o.Suites = "05", nil
	_, err := Run(context.Background(), o)
	require.NoError(t, err)
	args, err := os.ReadFile(filepath.Join(bin, "args"))
	require.NoError(t, err)
	assert.Contains(t, string(args), "--in-process")
	assert.Contains(t, string(args), "--ranks 1")
	assert.Contains(t, string(args), "--variant fused_signal ")
}

func TestRunErrorsKeepWhatWasRecorded(t *testing.T) {
	root, bin := course(t)
	fakeLog(t, "ncu_two_kernels.log")
	_, err := Run(context.Background(), opts(root, bin, "smem"))
	require.NoError(t, err)
	path := filepath.Join(root, "results", "nvidia-h200", "02_gemm.profile.json")
	before, err := os.ReadFile(path)
	require.NoError(t, err)

	for _, tc := range []struct {
		log  string
		rc   string
		kind error
	}{
		{"ncu_permission.log", "0", ErrPermission},
		{"ncu_replay.log", "1", ErrReplay},
		{"ncu_nokernel.log", "0", ErrNoKernel},
	} {
		t.Run(tc.log, func(t *testing.T) {
			fakeLog(t, tc.log)
			t.Setenv("FAKE_RC", tc.rc)
			out, err := Run(context.Background(), opts(root, bin, "smem", "vectorized"))
			require.NoError(t, err)
			require.NotEmpty(t, out.Failed)
			assert.True(t, errors.Is(out.Failed[0].Err, tc.kind), "%v", out.Failed[0].Err)
			if tc.kind == ErrPermission {
				assert.Len(t, out.Failed, 1, "a permission error stops the run")
			} else {
				assert.Len(t, out.Failed, 2)
			}
			after, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, string(before), string(after), "nothing recorded is lost or changed")
		})
	}

	// A variant that fails its check under ncu records nothing, and the reason names the exit.
	fakeLog(t, "ncu_two_kernels.log")
	t.Setenv("FAKE_RC", "1")
	out, err := Run(context.Background(), opts(root, bin, "vectorized"))
	require.NoError(t, err)
	require.Len(t, out.Failed, 1)
	assert.Contains(t, out.Failed[0].Err.Error(), "did not pass under ncu")
}

func TestRunCorruptFileIsKept(t *testing.T) {
	root, bin := course(t)
	fakeLog(t, "ncu_two_kernels.log")
	path := filepath.Join(root, "results", "nvidia-h200", "02_gemm.profile.json")
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte("{not json"), 0o644))
	out, err := Run(context.Background(), opts(root, bin, "smem"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "corrupt")
	b, _ := os.ReadFile(path)
	assert.Equal(t, "{not json", string(b))
	var side File
	data, rerr := os.ReadFile(out.SavedTo)
	require.NoError(t, rerr)
	require.NoError(t, json.Unmarshal(data, &side))
	assert.Len(t, side.Profiles, 2)
}

func TestRunNeedsAGPU(t *testing.T) {
	root, bin := course(t)
	o := opts(root, bin, "smem")
	o.Info = &gpu.DeviceInfo{Name: "CPU emulator", Emulated: true}
	_, err := Run(context.Background(), o)
	var ee *lab.EnvError
	require.ErrorAs(t, err, &ee)
	assert.Contains(t, err.Error(), "needs an NVIDIA GPU")
}

func TestPlan(t *testing.T) {
	man, err := lab.Load("../..", "02")
	require.NoError(t, err)
	jobs, err := Plan(man, nil, nil, nil, "")
	require.NoError(t, err)
	for _, j := range jobs {
		assert.True(t, j.Variant.IsKernel(), "library variants need --kernel: %s", j.Variant.Name)
	}
	jobs, err = Plan(man, []string{"fp32"}, []string{"smem", "bank_conflict_free"}, []string{"4096³", "1024³"}, "")
	require.NoError(t, err)
	assert.Len(t, jobs, 4)

	for _, tc := range []struct {
		variants, problems []string
		says               string
	}{
		{[]string{"nope"}, nil, "no variant \"nope\""},
		{[]string{"smem"}, []string{"7³"}, "no selected variant of lab 02_gemm has a GPU problem \"7³\""},
		{[]string{"cublas_sgemm"}, nil, "--kernel REGEX"},
	} {
		_, err := Plan(man, nil, tc.variants, tc.problems, "")
		var ue *lab.UsageError
		require.ErrorAs(t, err, &ue)
		assert.Contains(t, err.Error(), tc.says)
	}
	// A variant in two suites is profiled in the one asked for, on a problem whose name has commas.
	jobs, err = Plan(man, []string{"bf16_epilogue"}, []string{"wgmma_persistent"}, nil, "")
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	assert.Equal(t, "bf16_epilogue", jobs[0].Suite.Name)
	_, err = Plan(man, []string{"nope"}, nil, nil, "")
	assert.ErrorContains(t, err, "no suite \"nope\"")
	man3, err := lab.Load("../..", "03")
	require.NoError(t, err)
	jobs, err = Plan(man3, nil, []string{"dynamic"}, []string{"64 experts × 128 rows, 2048→1408"}, "")
	require.NoError(t, err)
	assert.Len(t, jobs, 1)

	jobs, err = Plan(man, nil, []string{"cublas_sgemm"}, nil, "regex:sgemm")
	require.NoError(t, err)
	require.NotEmpty(t, jobs, "a library variant with a kernel filter")
	for _, j := range jobs {
		assert.Equal(t, "cublas_sgemm", j.Variant.Name)
	}
}
