#!/usr/bin/env bash
# Installs the Debian packages some tests use, where this machine lets us (root + apt-get).
# Never fails the build: a test that needs a missing tool skips with a message naming it.
set -u
wanted=()
for pkg_bin in "espeak-ng:espeak-ng" "ffmpeg:ffmpeg" "chromium:chromium" "wrk:wrk"; do
  pkg=${pkg_bin%%:*}; bin=${pkg_bin##*:}
  command -v "$bin" >/dev/null 2>&1 || wanted+=("$pkg")
done
[ ${#wanted[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "[system-deps] installing ${wanted[*]}"
  (apt-get install -y -qq "${wanted[@]}" >/dev/null 2>&1 \
    || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq "${wanted[@]}" >/dev/null 2>&1; }) \
    || echo "[system-deps] could not install ${wanted[*]}; tests that need them will skip"
else
  echo "[system-deps] missing ${wanted[*]} (run: sudo apt-get install ${wanted[*]}); tests that need them will skip"
fi
exit 0
