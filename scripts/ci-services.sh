#!/usr/bin/env bash
# Starts and stops the real services the test suite needs, on loopback only.
# Packages that need none leave this a no-op; each service exports the
# environment its tests read.
set -euo pipefail
case "${1:-}" in
  start) : ;;
  stop) : ;;
  *) echo "usage: ci-services.sh start|stop" >&2; exit 2 ;;
esac
