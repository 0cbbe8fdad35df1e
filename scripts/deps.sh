#!/usr/bin/env bash
# Install every Debian package mmproxy-bpf needs to build, test, demo and benchmark.
# Idempotent: apt-get skips what is already installed. Needs root (re-runs through sudo).
set -euo pipefail

if [[ $(id -u) -ne 0 ]]; then
	if command -v sudo >/dev/null; then exec sudo -E bash "$0" "$@"; fi
	echo "scripts/deps.sh: root is needed to install packages (run it as root)" >&2
	exit 1
fi

PACKAGES=(
	# build
	make gcc clang llvm pkg-config libbpf-dev libxdp-dev bpftool libelf-dev zlib1g-dev
	linux-libc-dev libcmocka-dev libclang-rt-14-dev libsystemd-dev libmicrohttpd-dev
	libcap-ng-dev
	# run and test
	iproute2 util-linux procps psmisc coreutils libcap2-bin haproxy nginx-light libnginx-mod-stream
	python3 socat jq xdp-tools prometheus python3-prometheus-client ethtool
	# t57-t59: a capture on the uplink sees no packet of a client address
	tcpdump
	# make deb and t54 (dpkg-buildpackage, dh, lintian); no fakeroot: the
	# package says Rules-Requires-Root: no
	dpkg-dev debhelper lintian
	# benchmark
	go-mmproxy iperf3 gnuplot-nox hping3 wrk sockperf
)

export DEBIAN_FRONTEND=noninteractive
missing=()
for p in "${PACKAGES[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
	echo "deps: all ${#PACKAGES[@]} packages present"
	exit 0
fi
echo "deps: installing ${missing[*]}"
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# Debian starts nginx and haproxy as services on install; the tests run their own instances.
for svc in nginx haproxy; do
	if command -v systemctl >/dev/null && systemctl is-active -q "$svc" 2>/dev/null; then
		systemctl stop "$svc" || true
		systemctl disable -q "$svc" 2>/dev/null || true
	fi
done
echo "deps: done"
