#!/usr/bin/env bash
# bench/xdp-flood.sh: a SYN flood from sources outside -a, with the XDP gate
# (--xdp-iface) and without it (today's refusal: the kernel answers every SYN,
# userspace refuses what completes). Two namespaces joined by a veth; hping3
# floods from the client side with random source addresses. Per mode: SYNs
# sent per second, what the proxy side did with them, and CPU (the machine's
# busy share over the run, and the proxy process's own). Then a connect flood
# (mmpt-flood: full handshakes from one source outside -a), where today's
# refusal is an accept and a close per connection. docs/benchmarks.md records
# a run.
#
#   sudo bash bench/xdp-flood.sh [SECONDS]     (default 5; needs hping3, make integration-tools)
set -u
DUR=${1:-5}
BIN=${MMP_BIN:-build/mmproxy-bpf}
FLOOD=${MMP_TOOLS:-build/tests/tools}/mmpt-flood
P=mmxf-$$
PNS=$P-proxy CNS=$P-client PORT=7000
TMP=$(mktemp -d /tmp/mmxf.XXXXXX)
PIDS=()

cleanup() {
	local pid
	for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
	sleep 1
	for pid in "${PIDS[@]}"; do kill -KILL "$pid" 2>/dev/null; done
	ip netns del "$PNS" 2>/dev/null
	ip netns del "$CNS" 2>/dev/null
	rm -rf "$TMP" "/sys/fs/bpf/$P"
}
trap cleanup EXIT
command -v hping3 >/dev/null || { echo "xdp-flood: hping3 missing (apt-get install hping3)"; exit 1; }

ip netns add "$PNS" && ip netns add "$CNS" || exit 1
ip -n "$PNS" link set lo up
ip -n "$PNS" link add veth-p type veth peer name veth-c netns "$CNS"
ip -n "$PNS" addr add 198.51.100.1/24 dev veth-p
ip -n "$CNS" addr add 198.51.100.2/24 dev veth-c
ip -n "$PNS" link set veth-p up
ip -n "$CNS" link set veth-c up
# SYN-ACKs to the random sources go back over the veth (and die there), as on a real uplink.
ip -n "$PNS" route add default via 198.51.100.2
echo 203.0.113.0/24 >"$TMP/allowed.txt" # nothing the flood uses

busy_ticks() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8, $2 + $3 + $4 + $5 + $6 + $7 + $8 }' /proc/stat; }
proc_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
counter() { nsenter --net="/run/netns/$PNS" "$BIN" stats --pin-dir "/sys/fs/bpf/$P" | awk -v n="$1" '$1 == n { print $2 }'; }
# tx_packets of NS's IF: /proc/net/dev follows the reader's network namespace (/sys does not without a remount).
tx_packets() { nsenter --net="/run/netns/$1" cat /proc/net/dev | awk -v i="$2" '{ sub(":", " ") } $1 == i { print $11 }'; }

run_mode() {
	local mode=$1 extra=() pid b0 t0 b1 t1 c0 c1 tx0 tx1 ptx0 ptx1 d0 d1 r0 r1 hp
	[[ $mode == xdp ]] && extra=(--xdp-iface veth-p)
	nsenter --net="/run/netns/$PNS" "$BIN" run -l "198.51.100.1:$PORT" -a "$TMP/allowed.txt" --pin-dir "/sys/fs/bpf/$P" \
		--listeners 1 --engine splice "${extra[@]}" >"$TMP/proxy-$mode.log" 2>&1 &
	pid=$!
	PIDS+=("$pid")
	for _ in $(seq 100); do
		[[ -n $(nsenter --net="/run/netns/$PNS" ss -Hltn "sport = :$PORT") ]] && break
		sleep 0.1
	done
	sleep 1.5
	tx0=$(tx_packets "$CNS" veth-c) ptx0=$(tx_packets "$PNS" veth-p)
	d0=$(counter dropped_not_allowed) r0=$(counter refused_source)
	read -r b0 t0 <<<"$(busy_ticks)"
	c0=$(proc_ticks "$pid")
	nsenter --net="/run/netns/$CNS" timeout "$DUR" hping3 -q -S -p "$PORT" --flood --rand-source 198.51.100.1 >/dev/null 2>&1 &
	hp=$!
	wait "$hp"
	read -r b1 t1 <<<"$(busy_ticks)"
	c1=$(proc_ticks "$pid")
	tx1=$(tx_packets "$CNS" veth-c) ptx1=$(tx_packets "$PNS" veth-p)
	sleep 1.2 # tcp counters are published once a second
	d1=$(counter dropped_not_allowed) r1=$(counter refused_source)
	printf '%-7s syns_sent/s %8d  xdp_dropped/s %8d  synacks_sent/s %8d  refused/s %6d  machine_busy %3d%%  proxy_cpu %3d%%\n' \
		"$mode" $(((tx1 - tx0) / DUR)) $(((${d1:-0} - ${d0:-0}) / DUR)) $(((ptx1 - ptx0) / DUR)) \
		$(((${r1:-0} - ${r0:-0}) / DUR)) $((100 * (b1 - b0) / (t1 - t0))) $(((c1 - c0) * 100 / DUR / $(getconf CLK_TCK)))
	connect_flood "$mode" "$pid"
	kill -TERM "$pid"
	wait "$pid" 2>/dev/null
}

# connect_flood MODE PID: N full connects from 198.51.100.2 (not allowed), 256 at a time.
connect_flood() {
	local mode=$1 pid=$2 n=20000 c0 c1 r0 r1 t0 t1 out
	[[ -x $FLOOD ]] || return 0
	[[ $1 == xdp ]] && n=256 # none completes: one window shows it
	r0=$(counter refused_source) c0=$(proc_ticks "$pid") t0=$(date +%s%N)
	out=$(nsenter --net="/run/netns/$CNS" "$FLOOD" -c "198.51.100.1:$PORT" -n "$n" --dst 203.0.113.1:443 --close fin \
		--timeout 3 2>/dev/null | head -1)
	t1=$(date +%s%N) c1=$(proc_ticks "$pid")
	sleep 1.2
	r1=$(counter refused_source)
	printf '%-7s connect flood: %d connects in %d ms, refused by the proxy %d (%d/s), proxy_cpu %d%%  [%s]\n' "$mode" "$n" \
		$(((t1 - t0) / 1000000)) $((r1 - r0)) $(((r1 - r0) * 1000000000 / (t1 - t0))) \
		$(((c1 - c0) * 100 * 1000000000 / (t1 - t0) / $(getconf CLK_TCK))) "$out"
}

echo "# $(uname -r), $(nproc) CPUs, ${DUR} s per mode, hping3 -S --flood --rand-source to 198.51.100.1:$PORT over veth"
run_mode none
run_mode xdp
