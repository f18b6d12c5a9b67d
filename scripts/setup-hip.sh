#!/usr/bin/env bash
# Installs the AMD compilers of `labrun hip-check` on a Debian machine (no AMD GPU needed):
# hipcc with the HIP headers and device libraries for gfx90a, clang-19 and lld-19 for gfx942.
# The package list comes from labrun (the targets of internal/gpu/hip), so it is kept in one place.
set -euo pipefail
cd "$(dirname "$0")/.."

mapfile -t pkgs < <(bin/labrun hip-check --packages)
[ ${#pkgs[@]} -eq 0 ] && exit 0

cmd="apt-get update && apt-get install -y --no-install-recommends ${pkgs[*]}"
if [ "$(id -u)" = 0 ]; then
  echo "setup-hip: installing ${pkgs[*]}"
  sh -c "DEBIAN_FRONTEND=noninteractive $cmd" >/dev/null
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  echo "setup-hip: installing ${pkgs[*]} with sudo"
  sudo sh -c "DEBIAN_FRONTEND=noninteractive $cmd" >/dev/null
else
  echo "setup-hip: labrun hip-check needs ${pkgs[*]}; run as root:" >&2
  echo "  sudo sh -c '$cmd'" >&2
  exit 3
fi
