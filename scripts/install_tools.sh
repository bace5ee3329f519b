#!/usr/bin/env bash
# The system tools some tests need: Chromium (the console and report pages in a real browser) and
# Prometheus with promtool (the alert rules and a real scrape). Installed from Debian's packages
# where this can (root with apt-get); elsewhere it says what is missing, and those tests skip with
# the reason. Never fails the build.
set -u
need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v promtool >/dev/null 2>&1 || need+=(prometheus)
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "lagless: installing ${need[*]} (Debian packages) for the browser and Prometheus tests"
  log=$(mktemp)
  if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"; } >"$log" 2>&1; then
    echo "lagless: could not install ${need[*]} (see $log): the tests that need them skip"
  fi
else
  echo "lagless: ${need[*]} missing and not installable here (needs root and apt-get): the tests that need them skip"
fi
exit 0
