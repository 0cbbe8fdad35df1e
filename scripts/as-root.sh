#!/usr/bin/env bash
# Run "$@" as root: directly when we are root, through sudo otherwise, or explain.
set -euo pipefail
if [[ $(id -u) -eq 0 ]]; then exec "$@"; fi
if command -v sudo >/dev/null 2>&1; then
	echo "mmproxy-bpf: root is needed (network namespaces, IP_TRANSPARENT, BPF); re-running through sudo" >&2
	exec sudo -E "$@"
fi
echo "mmproxy-bpf: root is needed (network namespaces, IP_TRANSPARENT, BPF) and sudo is not installed; run this as root" >&2
exit 1
