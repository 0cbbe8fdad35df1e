#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make bench-tests: correctness of the benchmark tools, never their speed.
#  - the histogram unit test (cmocka, one check per test case);
#  - loadgen hold, 200 connections held and ended by SIGTERM;
#  - loadgen pingpong for 2 s against upstream echo, directly and through
#    mmproxy-bpf (splice engine) with PROXY v1/IPv4 and v2/IPv6 clients:
#    the JSON line parses, every echoed byte matches, no errors.
# Ends with "N passed, M failed"; exits non-zero on any failure.
set -uo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$BENCH_DIR/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
TOOLS=$BUILD/bench
BIN=${MMPROXY_BPF:-$BUILD/mmproxy-bpf}
NS=mmpb-$$-test
PIN_DIR=/sys/fs/bpf/mmproxy-bpf-benchtest-$$
TMP=$(mktemp -d /tmp/mmpb-tests.XXXXXX)
PASSED=0
FAILED=0
PIDS=()

pass() { PASSED=$((PASSED + 1)); echo "ok - $1"; }
fail() { FAILED=$((FAILED + 1)); echo "not ok - $1${2:+: $2}"; }

finish() {
	local pid
	for pid in "${PIDS[@]}"; do
		kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	done
	# Safety net: anything still running inside our namespace is ours.
	for pid in $(ip netns pids "$NS" 2>/dev/null); do
		kill -KILL "$pid" 2>/dev/null
	done
	ip netns del "$NS" 2>/dev/null
	[[ -d $PIN_DIR ]] && rm -rf "$PIN_DIR"
	rm -rf "$TMP"
}
trap finish EXIT

in_ns() { nsenter --net="/run/netns/$NS" "$@"; }

wait_listen() { # PORT PID
	local i
	for ((i = 0; i < 250; i++)); do
		[[ -n $(in_ns ss -Hltn "sport = :$1" 2>/dev/null) ]] && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.02
	done
	return 1
}

# check_run NAME OUTPUT-FILE: the assertions on one loadgen result.
check_run() {
	local name=$1 out=$2 json verdict
	json=$(sed -n 's/^JSON //p' "$out" | tail -n 1)
	if [[ -z $json ]]; then
		fail "$name: JSON line" "none printed"
		sed 's/^/    /' "$out"
		return
	fi
	if python3 -m json.tool <<<"$json" >/dev/null 2>&1; then
		pass "$name: JSON line parses"
	else
		fail "$name: JSON line parses" "$json"
		return
	fi
	verdict=$(python3 -c '
import json, sys
r = json.loads(sys.argv[1])
bad = []
if r["msgs"] <= 0: bad.append("no message was echoed")
if r["rx_bytes"] <= 0 or r["verified_bytes"] != r["rx_bytes"]:
    bad.append("verified %d of %d bytes" % (r["verified_bytes"], r["rx_bytes"]))
if r["verify_errors"]: bad.append("%d echoed bytes differ" % r["verify_errors"])
if r["errors"]: bad.append("%d errors (connect %d, I/O %d)" % (r["errors"], r["connect_errors"], r["io_errors"]))
if r["conns_open"] != r["connections"]: bad.append("%d of %d connections open" % (r["conns_open"], r["connections"]))
print("; ".join(bad))' "$json")
	if [[ -z $verdict ]]; then
		pass "$name: echoed bytes match, no errors"
	else
		fail "$name: echoed bytes match, no errors" "$verdict"
	fi
}

# ---- histogram unit test ------------------------------------------------

if [[ -x $TOOLS/test_histogram ]]; then
	CMOCKA_MESSAGE_OUTPUT=TAP "$TOOLS/test_histogram" >"$TMP/hist.tap" 2>&1
	rc=$?
	while read -r line; do
		case $line in
		"ok "*) pass "histogram: ${line#ok * - }" ;;
		"not ok "*) fail "histogram: ${line#not ok * - }" ;;
		esac
	done <"$TMP/hist.tap"
	grep -q '^ok ' "$TMP/hist.tap" || fail "histogram unit test" "exit $rc, no result"
else
	fail "histogram unit test" "$TOOLS/test_histogram not built (make bench-tests)"
fi

# ---- loadgen through nothing and through mmproxy-bpf -------------------

if [[ $(id -u) -ne 0 ]]; then
	fail "loadgen tests" "need root for network namespaces"
	echo "$PASSED passed, $FAILED failed"
	exit 1
fi
for t in loadgen upstream; do
	[[ -x $TOOLS/$t ]] || fail "$t" "$TOOLS/$t not built"
done

ip netns add "$NS"
in_ns ip link set lo up
in_ns ip rule add from 127.0.0.1/8 iif lo table 123
in_ns ip route add local 0.0.0.0/0 dev lo table 123
in_ns ip -6 rule add from ::1/128 iif lo table 123
in_ns ip -6 route add local ::/0 dev lo table 123

# Background jobs use nsenter directly (it execs), so $! is the server's PID.
nsenter --net="/run/netns/$NS" "$TOOLS/upstream" -m echo --threads 2 -l 127.0.0.1:9000 -l '[::1]:9000' \
	>"$TMP/upstream.log" 2>&1 &
PIDS+=($!)
if ! wait_listen 9000 $!; then
	fail "upstream echo starts" "$(cat "$TMP/upstream.log")"
	echo "$PASSED passed, $FAILED failed"
	exit 1
fi

LG=("$TOOLS/loadgen" -m pingpong -c 20 -s 100 --pipeline 2 -T 2 --warmup 0.5 --threads 2 -q)

in_ns "${LG[@]}" --proxy none 127.0.0.1:9000 >"$TMP/direct.out" 2>&1
check_run "direct" "$TMP/direct.out"

# Bad input: hold keeps one message in flight, a deeper pipeline is refused
# with one line naming the option.
if out=$("$TOOLS/loadgen" -m hold --pipeline 2 127.0.0.1:9000 2>&1); then
	fail "hold --pipeline 2 refused" "exit 0: $out"
elif [[ $(grep -c . <<<"$out") == 1 && $out == *--pipeline* ]]; then
	pass "hold --pipeline 2 refused"
else
	fail "hold --pipeline 2 refused" "$out"
fi

# hold (bench/scale.sh): -T is only a bound, SIGTERM ends the measurement and
# the report follows; every held connection pinged in 1.5 s at --interval 0.5.
nsenter --net="/run/netns/$NS" "$TOOLS/loadgen" -m hold -c 200 --interval 0.5 --connect-rate 2000 -T 100 \
	--warmup 0 --threads 2 -q 127.0.0.1:9000 >"$TMP/hold.out" 2>&1 &
hold_pid=$!
for ((i = 0; i < 50; i++)); do grep -q '^READY' "$TMP/hold.out" && break; sleep 0.1; done
sleep 1.5
kill -TERM "$hold_pid"
wait "$hold_pid"
check_run "hold, ended by SIGTERM" "$TMP/hold.out"
alive=$(sed -n 's/^JSON //p' "$TMP/hold.out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["alive"])' 2>/dev/null)
if [[ $alive == 200 ]] && grep -q '^READY 200$' "$TMP/hold.out"; then
	pass "hold: READY 200, and all 200 echoed while measured"
else
	fail "hold: READY 200, and all 200 echoed while measured" "alive ${alive:-?}: $(head -n 2 "$TMP/hold.out" | tr '\n' ' ')"
fi

if [[ ! -x $BIN ]]; then
	fail "through mmproxy-bpf" "$BIN not built"
else
	mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf 2>/dev/null
	nsenter --net="/run/netns/$NS" "$BIN" run -l 127.0.0.1:8443 -4 127.0.0.1:9000 -6 '[::1]:9000' --listeners 2 \
		--engine splice --pin-dir "$PIN_DIR" -v 0 >"$TMP/proxy.log" 2>&1 &
	PIDS+=($!)
	if ! wait_listen 8443 $!; then
		fail "mmproxy-bpf starts" "$(tail -n 5 "$TMP/proxy.log")"
	else
		in_ns "${LG[@]}" --proxy v1 --client-range 203.0.113.0/24 127.0.0.1:8443 \
			>"$TMP/v1.out" 2>&1
		check_run "mmproxy-bpf splice, PROXY v1, IPv4 clients" "$TMP/v1.out"
		in_ns "${LG[@]}" --proxy v2 --client-range 2001:db8::/64 127.0.0.1:8443 \
			>"$TMP/v2.out" 2>&1
		check_run "mmproxy-bpf splice, PROXY v2, IPv6 clients" "$TMP/v2.out"
	fi
fi

# ---- bench/bridged.sh: the upstream on a bridge -----------------------

# One short round of pp50 (none, mmproxy-bpf splice, go-mmproxy): every run
# has a result with no errors, mmproxy-bpf's connections were steered (the
# script drops a run that was not), nothing is left behind.
bash "$BENCH_DIR/bridged.sh" --smoke --scenarios pp50 --engines splice --out "$TMP/bridged" \
	>"$TMP/bridged.log" 2>&1 &
bridged_pid=$!
wait "$bridged_pid"
rc=$?
if ((rc == 0)); then
	pass "bridged.sh --smoke exits 0"
else
	fail "bridged.sh --smoke exits 0" "exit $rc: $(tail -n 3 "$TMP/bridged.log" | tr '\n' ' ')"
fi
verdict=$(python3 -c '
import glob, json, sys
files = glob.glob(sys.argv[1] + "/*-bridged.json")
if not files: sys.exit("no results file")
d = json.load(open(files[0]))
rows = {r["config"]: r for r in d["summary"]}
want = ["none", "mmproxy-bpf/splice"] + (["go-mmproxy"] if sys.argv[2] else [])
bad = ["%s missing" % c for c in want if c not in rows]
bad += ["%s: %d of %d runs, %d errors, median %s" % (c, r["ok_runs"], r["runs"], r["errors"], r["median"])
        for c, r in rows.items() if r["ok_runs"] != r["runs"] or r["errors"] or not r["median"]]
print("; ".join(bad))' "$TMP/bridged" "$(command -v go-mmproxy)" 2>&1)
if [[ -z $verdict ]]; then
	pass "bridged.sh --smoke: a result per configuration, steered, no errors"
else
	fail "bridged.sh --smoke: a result per configuration, steered, no errors" "$verdict"
fi
left=$(ip netns list | grep -o "^mmpb-$bridged_pid-[a-z]*"; ls -d /sys/fs/bpf/mmproxy-bpf-bridged-"$bridged_pid" 2>/dev/null)
if [[ -z $left ]]; then
	pass "bridged.sh --smoke: its namespaces and pins are gone"
else
	fail "bridged.sh --smoke: its namespaces and pins are gone" "$(tr '\n' ' ' <<<"$left")"
fi

# One UDP request/response run through tc (about 5 s): its exit totals show
# datagrams moved in the kernel both ways (the script drops a run that shows
# none, so a result is the proof), and nothing is left behind.
bash "$BENCH_DIR/bridged.sh" --smoke --scenarios udp-rr --engines tc --configs mmproxy-bpf/tc \
	--out "$TMP/bridged-udp" >"$TMP/bridged-udp.log" 2>&1 &
bridged_pid=$!
wait "$bridged_pid"
rc=$?
verdict=$(python3 -c '
import glob, json, sys
files = glob.glob(sys.argv[1] + "/*-bridged.json")
if not files: sys.exit("no results file")
runs = json.load(open(files[0]))["runs"]
ok = [r for r in runs if r.get("ok") and r["result"]["rx_pkts"] > 0 and r["kernel"]["fast_fwd_dgrams"] > 0
      and r["kernel"]["fast_reply_dgrams"] > 0]
print("" if len(ok) == len(runs) == 1 else json.dumps(runs)[:300])' "$TMP/bridged-udp" 2>&1)
if ((rc == 0)) && [[ -z $verdict ]]; then
	pass "bridged.sh --smoke udp-rr: tc moved the datagrams in the kernel both ways"
else
	fail "bridged.sh --smoke udp-rr: tc moved the datagrams in the kernel both ways" \
		"exit $rc: ${verdict:-$(tail -n 3 "$TMP/bridged-udp.log" | tr '\n' ' ')}"
fi
left=$(ip netns list | grep -o "^mmpb-$bridged_pid-[a-z]*"; ls -d /sys/fs/bpf/mmproxy-bpf-bridged-"$bridged_pid" 2>/dev/null)
if [[ -z $left ]]; then
	pass "bridged.sh --smoke udp-rr: its namespaces and pins are gone"
else
	fail "bridged.sh --smoke udp-rr: its namespaces and pins are gone" "$(tr '\n' ' ' <<<"$left")"
fi

echo "$PASSED passed, $FAILED failed"
((FAILED == 0))
