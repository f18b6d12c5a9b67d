#!/usr/bin/env bash
# Installs what labrun needs on a Debian/Ubuntu machine: a C++ compiler and Boost.Context for the
# CPU emulator, clang for its device-code check, and the Go modules. The CUDA driver and toolkit are not installed here: on a GPU
# machine they come with the system (see README.md). Says clearly what it could not do.
set -euo pipefail

pkgs=()
command -v g++ >/dev/null 2>&1 || pkgs+=(g++)
[ -f /usr/include/boost/context/fiber.hpp ] || pkgs+=(libboost-context-dev)
# clang: the emulator's device-code check (labrun grade compiles a submission as CUDA device code).
command -v clang++ >/dev/null 2>&1 || pkgs+=(clang)

if [ ${#pkgs[@]} -gt 0 ]; then
  cmd="apt-get update && apt-get install -y --no-install-recommends ${pkgs[*]}"
  if [ "$(id -u)" = 0 ]; then
    echo "setup: installing ${pkgs[*]}"
    sh -c "DEBIAN_FRONTEND=noninteractive $cmd" >/dev/null
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    echo "setup: installing ${pkgs[*]} with sudo"
    sudo sh -c "DEBIAN_FRONTEND=noninteractive $cmd" >/dev/null
  else
    echo "setup: the CPU emulator needs ${pkgs[*]}; run as root:" >&2
    echo "  sudo sh -c '$cmd'" >&2
    echo "setup: continuing; emulator tests will be skipped until then" >&2
  fi
fi

# Chromium, for the site's browser test (internal/site): optional, so it is installed on its own
# and a failure only skips that test.
if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1 &&
   ! command -v google-chrome >/dev/null 2>&1 && [ -z "${LABRUN_CHROMIUM:-}" ]; then
  cmd="apt-get update && apt-get install -y --no-install-recommends chromium"
  if [ "$(id -u)" = 0 ]; then
    echo "setup: installing chromium (for the site's browser test)"
    sh -c "DEBIAN_FRONTEND=noninteractive $cmd" >/dev/null 2>&1 ||
      echo "setup: could not install chromium; the site's browser test will be skipped" >&2
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    echo "setup: installing chromium with sudo (for the site's browser test)"
    sudo sh -c "DEBIAN_FRONTEND=noninteractive $cmd" >/dev/null 2>&1 ||
      echo "setup: could not install chromium; the site's browser test will be skipped" >&2
  else
    echo "setup: the site's browser test needs chromium; run as root:" >&2
    echo "  sudo sh -c '$cmd'" >&2
    echo "setup: continuing; the browser test will be skipped until then" >&2
  fi
fi

# A CJK font, so that the Chinese pages (and the browser test, which fails on missing-glyph
# boxes) draw Chinese characters: optional like chromium.
if ! { command -v fc-list >/dev/null 2>&1 && [ -n "$(fc-list :lang=zh 2>/dev/null)" ]; }; then
  cmd="apt-get update && apt-get install -y --no-install-recommends fonts-noto-cjk"
  if [ "$(id -u)" = 0 ]; then
    echo "setup: installing fonts-noto-cjk (Chinese pages and the site's browser test)"
    sh -c "DEBIAN_FRONTEND=noninteractive $cmd" >/dev/null 2>&1 ||
      echo "setup: could not install fonts-noto-cjk; the Chinese pages will show boxes and the browser test fails" >&2
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    echo "setup: installing fonts-noto-cjk with sudo"
    sudo sh -c "DEBIAN_FRONTEND=noninteractive $cmd" >/dev/null 2>&1 ||
      echo "setup: could not install fonts-noto-cjk; the Chinese pages will show boxes and the browser test fails" >&2
  else
    echo "setup: the Chinese pages need a CJK font; run as root:" >&2
    echo "  sudo sh -c '$cmd'" >&2
  fi
fi

go mod download
