#!/usr/bin/env bash
# One call on a GPU machine without Go: optional full lab runs, then the profiles listed in
# scripts/profiles.txt, with the prebuilt bin/labrun (make gpu-binaries). Everything it wrote
# (results and profile files, logs) is packed into $OUT/profile.tgz; summary.txt says what ran.
#
#   RUN="01" scripts/gpu-profile.sh       # labrun 01 first, then the profiles
#   DEADLINE=480 scripts/gpu-profile.sh   # start no step after 480 s (default 500)
#   PROFILES=FILE scripts/gpu-profile.sh  # another list (default scripts/profiles.txt)
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/kl-out}
mkdir -p "$out"
export LABRUN_CACHE=${LABRUN_CACHE:-/tmp/kl-cache}
[ -f bin/commit ] && export LABRUN_COMMIT=$(cat bin/commit)
deadline=${DEADLINE:-500}
logs=$(mktemp -d)
summary=()
{ nvidia-smi; command -v ncu || ls /opt/nvidia/nsight-compute/; } >"$logs/env.log" 2>&1

for lab in ${RUN:-}; do
  start=$SECONDS
  timeout $((deadline - SECONDS)) bin/labrun run "$lab" --no-site >"$logs/lab-$lab.txt" 2>"$logs/lab-$lab.log"
  summary+=("lab $lab: exit $? in $((SECONDS - start))s")
done

n=0
while IFS='|' read -r lab variants problem extra; do
  lab=$(echo "$lab" | xargs)
  [ -z "$lab" ] || [ "${lab:0:1}" = "#" ] && continue
  variants=$(echo "$variants" | xargs); problem=$(echo "$problem" | sed 's/^ *//; s/ *$//')
  n=$((n + 1))
  if [ $SECONDS -ge $((deadline - 20)) ]; then
    summary+=("profile $n ($lab $variants): not started, past the deadline")
    continue
  fi
  start=$SECONDS
  # shellcheck disable=SC2086
  timeout $((deadline - SECONDS)) bin/labrun profile "$lab" --variant "$variants" --problem "$problem" $extra \
    --log-dir "$logs/ncu" >"$logs/profile-$n.txt" 2>"$logs/profile-$n.log"
  summary+=("profile $n ($lab $variants on $problem): exit $? in $((SECONDS - start))s")
done <"${PROFILES:-scripts/profiles.txt}"

printf '%s\n' "${summary[@]}" >"$logs/summary.txt"
mkdir -p "$logs/results" && cp -r results/nvidia-* "$logs/results/" 2>/dev/null
tar czf "$out/profile.tgz" -C "$logs" .
cp "$logs/summary.txt" "$out/summary.txt"
cat "$logs"/profile-*.txt 2>/dev/null | cut -c1-160 | tail -40
cat "$out/summary.txt"
