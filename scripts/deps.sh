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
	# the test tools hash their streams with libcrypto (tests/tools/mmpt_common.c)
	libssl-dev
	# run and test
	iproute2 util-linux procps psmisc coreutils libcap2-bin haproxy nginx-light libnginx-mod-stream
	python3 socat jq xdp-tools prometheus python3-prometheus-client ethtool
	# t57-t59: a capture on the uplink sees no packet of a client address
	tcpdump
	# t64: a real container on docker0; the test starts its own dockerd in a namespace
	# (pulls in containerd, runc, tini and iptables, which the test does not use)
	docker.io
	# make deb and t54 (dpkg-buildpackage, dh, lintian); no fakeroot: the
	# package says Rules-Requires-Root: no
	dpkg-dev debhelper lintian
	# benchmark
	go-mmproxy iperf3 gnuplot-nox hping3 wrk sockperf
	# bench/bridged.sh: go-mmproxy's recipe for a container upstream marks its packets
	iptables
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
# Debian starts nginx, haproxy and docker as services on install; the tests run their own instances,
# and a host dockerd would add docker0 and iptables rules to this host. A policy-rc.d that denies
# every start (honoured by invoke-rc.d and deb-systemd-invoke) keeps them down while apt runs; an
# existing one is left as it is.
policy=/usr/sbin/policy-rc.d
if [[ ! -e $policy ]]; then
	printf '#!/bin/sh\n# scripts/deps.sh (mmproxy-bpf): no service starts while it installs\nexit 101\n' >"$policy"
	chmod 755 "$policy"
	trap 'rm -f "$policy"' EXIT
fi
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# Nor at boot: only the services of packages installed just now (a docker the user had stays as it was),
# and their socket units (docker has one: it would start dockerd at the first client).
for pkg_svc in nginx-light:nginx haproxy:haproxy docker.io:docker; do
	if [[ " ${missing[*]} " != *" ${pkg_svc%%:*} "* ]] || ! command -v systemctl >/dev/null; then continue; fi
	for unit in "${pkg_svc#*:}".socket "${pkg_svc#*:}"; do
		systemctl stop "$unit" 2>/dev/null || true
		systemctl disable -q "$unit" 2>/dev/null || true
	done
done
echo "deps: done"
