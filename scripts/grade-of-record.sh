#!/usr/bin/env bash
# The instructor's grade of record: grades a student's repository with the grader, the lab.yaml
# files and the tests of this course as they stand at a commit of the instructor's repository
# (the tag the student edition was exported from), never with anything from the student's
# repository but its exercise files. The student's own workflow is feedback only.
#
#   scripts/grade-of-record.sh REF STUDENT [labrun grade flags]
#
#   REF      a tag or commit of this course, e.g. the one named in the student edition's
#            .student-edition file
#   STUDENT  the student's repository: a folder, or a git URL (cloned, shallow)
#   flags    as for `labrun grade`, e.g. --labs 02,03 --backend emu --out reports/alice
#            (default --labs all; --out defaults to ./grade-report)
#
# The course at REF is taken from git's objects (git archive) into an empty temporary folder, so
# no local change, untracked file or build output of this checkout takes part; labrun is built
# there and grades with --submission STUDENT. For the hidden tests give the secret seed with
# --secret-file PATH (or set LABRUN_SECRET_SEED).
# Exit status: that of labrun grade (0 passed, 1 below the pass mark, 2 bad input, 3 nothing
# gradable here or a missing tool, 4 the reports could not be written).
set -euo pipefail

usage() {
  sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}
[[ $# -ge 2 ]] || usage
ref=$1 student=$2
shift 2

here=$(pwd)
course=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
commit=$(git -C "$course" rev-parse --verify --quiet "$ref^{commit}") || {
  echo "grade-of-record: $ref is not a commit or tag of $course (git fetch --tags?)" >&2
  exit 2
}

work=$(mktemp -d "${TMPDIR:-/tmp}/kernellabs-record.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/course"
git -C "$course" archive --format=tar "$commit" | tar -x -C "$work/course"

case $student in
  *://* | git@*:*)
    git clone --quiet --depth 1 "$student" "$work/student"
    student=$work/student ;;
  *)
    [[ -d $student ]] || { echo "grade-of-record: $student is not a folder or a git URL" >&2; exit 2; }
    student=$(cd "$student" && pwd -P) ;;
esac

# Paths in the flags are the caller's: make them absolute, since labrun runs in the course copy.
args=() labs=0 out=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --out | -out)
      [[ $# -ge 2 ]] || usage
      args+=("--out" "$(cd "$here" && realpath -m -- "$2")"); out=1; shift 2 ;;
    --out=* | -out=*)
      args+=("--out" "$(cd "$here" && realpath -m -- "${1#*=}")"); out=1; shift ;;
    --secret-file | -secret-file)
      [[ $# -ge 2 ]] || usage
      f=$2; [[ $f == - ]] || f=$(cd "$here" && realpath -m -- "$f")
      args+=("--secret-file" "$f"); shift 2 ;;
    --labs | -labs | --labs=* | -labs=*)
      labs=1; args+=("$1"); shift ;;
    --submission* | -submission*)
      echo "grade-of-record: the submission is STUDENT ($student); do not pass --submission" >&2
      exit 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
[[ $labs == 1 ]] || args+=(--labs all)
[[ $out == 1 ]] || args+=(--out "$here/grade-report")

echo "grade of record: course $(git -C "$course" describe --tags --always "$commit") ($commit), submission $student" >&2
cd "$work/course"
GOFLAGS="${GOFLAGS:-} -buildvcs=false" go build -o bin/labrun ./cmd/labrun
status=0
bin/labrun grade --submission "$student" "${args[@]}" || status=$?
exit "$status"
