#!/usr/bin/env bash
# One call on a GPU machine that has no Go: run the prebuilt labrun and test binaries from bin/
# (make gpu-binaries), then labrun on each lab given. Logs and results go to $OUT (default
# /tmp/kl-out); the last lines printed are a short summary.
#
#   scripts/gpu-sweep.sh 01 02          # full runs
#   QUICK=1 scripts/gpu-sweep.sh 01     # --quick runs
#   PACK=1 scripts/gpu-sweep.sh 01      # everything in $OUT/sweep.tgz (plus summary.txt)
#   GRADE=1 scripts/gpu-sweep.sh        # also labrun grade all (the reference solutions), reports in $OUT/grade
#   scripts/gpu-sweep.sh "04 --ranks 4" "compare results/nvidia-h200/02_gemm.json 02"
#                                       # an argument with flags: labrun run with them; one that
#                                       # starts with a command name: that labrun command
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/kl-out}
mkdir -p "$out"
export LABRUN_CACHE=${LABRUN_CACHE:-/tmp/kl-cache}
# The copied tree has no .git: the commit the binaries were built from travels in bin/commit.
[ -f bin/commit ] && export LABRUN_COMMIT=$(cat bin/commit)
summary=()

{ nvidia-smi; nvcc --version; } >"$out/env.log" 2>&1

# Each test binary comes with bin/NAME.pkg, the package folder it runs in (for its testdata).
for p in bin/*.pkg; do
  [ -f "$p" ] || continue
  name=$(basename "$p" .pkg)
  t=bin/$name.test
  pkg=$(cat "$p")
  start=$SECONDS
  (cd "$pkg" && KERNELLABS_REQUIRE_GPU=1 "$OLDPWD/$t" -test.v -test.count=1) >"$out/test-$name.log" 2>&1
  rc=$?
  summary+=("tests $name: exit $rc in $((SECONDS - start))s ($(grep -c '^--- PASS' "$out/test-$name.log") passed, $(grep -c '^--- FAIL' "$out/test-$name.log") failed, $(grep -c '^--- SKIP' "$out/test-$name.log") skipped)")
done

bin/labrun doctor >"$out/doctor.log" 2>&1
summary+=("doctor: exit $?")

flags=()
[ -n "${QUICK:-}" ] && flags+=(--quick)
for arg in "$@"; do
  start=$SECONDS
  read -ra words <<<"$arg"
  [[ ${words[0]} =~ ^[0-9] ]] && words=(run "${words[@]}")
  name=$(printf '%s' "${words[*]}" | tr -c 'A-Za-z0-9._-' '_' | cut -c1-60)
  bin/labrun "${words[@]}" "${flags[@]}" >"$out/$name.txt" 2>"$out/$name.log"
  rc=$?
  summary+=("labrun ${words[*]}: exit $rc in $((SECONDS - start))s")
  cat "$out/$name.txt"
done

if [ -n "${GRADE:-}" ]; then
  start=$SECONDS
  bin/labrun grade all --out "$out/grade" >"$out/grade.txt" 2>"$out/grade.log"
  rc=$?
  summary+=("grade all: exit $rc in $((SECONDS - start))s")
  cat "$out/grade.txt"
fi

# The results of this machine (results/emulator is not its business).
for f in results/*/*.json; do
  d=$(basename "$(dirname "$f")")
  [ -f "$f" ] && [ "$d" != emulator ] && mkdir -p "$out/results/$d" && cp "$f" "$out/results/$d/"
done
printf '%s\n' "${summary[@]}" | tee "$out/summary.txt"
# PACK=1: one archive instead of loose files, for transports that bring back only a few files.
if [ -n "${PACK:-}" ]; then
  tmp=$(mktemp)
  tar -C "$out" -czf "$tmp" --exclude summary.txt . && (cd "$out" && find . -mindepth 1 ! -name summary.txt -delete) && mv "$tmp" "$out/sweep.tgz"
fi
