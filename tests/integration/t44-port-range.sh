#!/usr/bin/env bash
# t44: TCP port ranges (issue 11 point 2, docs/DESIGN.md §8): one instance
# serves -l 127.0.0.1:7000-7999 (1000 ports).
#
#   1. -4 as a range of the same size (1:1): 20 ports spread over the range
#      (first, last and between), each to its own upstream 9000+k, 256 KiB
#      each way sha256-checked, each upstream sees the client of the header;
#      through sk_lookup (one socket per listener thread, the mmp_sk_listeners
#      and link pins present). Under MMP_ENGINE=tc/auto, long flows on three
#      ports are spliced in the kernel.
#   2. 6999 and 8000, just outside, are refused.
#   3. IPv6: [::1]:7000-7999 -> [::1]:9000-9999.
#   4. -4 as one port: every listen port goes to it.
#   5. The fallback (MMP_NO_SK_LOOKUP=1): one socket per port, same mapping,
#      no sk_lookup pins.
#   6. Two instances with disjoint ranges side by side; an overlapping one is
#      refused naming the other; SIGKILL leaves the sk_lookup link attached
#      (pinned) and `cleanup` removes it; the other instance keeps serving.
#   7. The XDP gate drops SYNs from sources outside -a to every port of the
#      range, and judges none outside it.
# Would fail without ranges: -l LO-HI did not parse.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/tc-lib.sh"
if ! is_bpf; then
	echo "SKIP t44 port ranges: mmproxy-bpf only ($MMP_FLAVOR has no port ranges)"
	exit 0
fi
[[ $MMP_ENGINE == tc || $MMP_ENGINE == auto ]] && MMP_VERBOSITY=2 # the per-flow hand-off lines
t_setup t44

SIZE=$((256 << 10))
LO=7000
HI=7999
# 20 ports: the first, the last, and 18 spread between.
PORTS=(7000 7001 7053 7101 7199 7250 7333 7402 7499 7500 7501 7600 7666 7750 7801 7850 7900 7950 7998 7999)

# range_start NAME [ENV=VALUE...] -- ARGS...: start the proxy with ARGS (after
# run -v --pin-dir --engine), wait for its "listening on" line (printed once
# every listener is steered to). Sets MMP_PID, MMP_LOG, MMP_PINDIR.
range_start() {
	local envs=()
	while [[ $1 != -- ]]; do envs+=("$1") && shift; done
	shift
	MMP_STARTS=$((MMP_STARTS + 1))
	MMP_DEAD_STATUS=""
	MMP_PINDIR="/sys/fs/bpf/mmproxy-bpf-test-$$-$MMP_STARTS"
	MMP_LOG="$T_TMP/mmproxy-$MMP_STARTS.log"
	cleanup_push "rm -rf '$MMP_PINDIR'"
	proc_start MMP_PID "$MMP_LOG" "$TOPO_PROXY" env "${envs[@]}" "$MMP_BIN" run -v "$MMP_VERBOSITY" \
		--pin-dir "$MMP_PINDIR" --engine "$MMP_ENGINE" --tc-handoff-delay "${MMP_TC_HANDOFF_DELAY:-0}" "$@"
	if ! wait_grep "$MMP_LOG" 'listening on' 15; then
		MMP_START_ERR="proxy did not start: $(grep -v libbpf "$MMP_LOG" | tail -n 3 | tr '\n' ' ')"
		proc_stop "$MMP_PID" 2
		return 1
	fi
	MMP_RUNNING=1
}

# ups_start FAMILY PORT...: one xfer upstream per port (UPLOG[PORT]), on 127.0.0.1 or [::1].
declare -A UPLOG UPPID
ups_start() {
	local fam=$1 p addr
	shift
	for p in "$@"; do
		[[ $fam == 6 ]] && addr="[::1]:$p" || addr="127.0.0.1:$p"
		UPLOG[$p]="$T_TMP/up-$fam-$p-$MMP_STARTS.log"
		proc_start "UPPID[$p]" "${UPLOG[$p]}" "$TOPO_PROXY" "$MMP_TOOLS/mmpt-upstream" -l "$addr" -m xfer --send "$SIZE"
	done
	for p in "$@"; do wait_grep "${UPLOG[$p]}" '^listening' 5 || return 1; done
}
ups_stop() {
	local p
	for p in "$@"; do proc_stop "${UPPID[$p]}" 2; done
}

# xfer_via LISTEN_ADDR PORT UP_PORT CLIENT_IP [SIZE]: as the load balancer,
# a v2 header naming CLIENT_IP:(fresh port) to LISTEN_ADDR:PORT, SIZE bytes
# each way; the upstream on UP_PORT must have seen exactly that client and
# those bytes (its "done" lines after the mark taken here).
xfer_via() {
	local laddr=$1 port=$2 up=$3 cip=$4 size=${5:-$SIZE} cport mark done_line a p un ush urn ursh cs csh crn crsh
	local hp
	next_port cport
	mark=$(log_mark "${UPLOG[$up]}")
	hp=$(hostport "$laddr" "$port")
	if ! client "$TOPO_PROXY" -c "$hp" --pp2 "$(hostport "$cip" "$cport")" "$hp" --send "$size" --timeout 60; then
		case_fail "port $port: client: $(client_result)"
		return 1
	fi
	if ! done_line=$(wait_log_since "${UPLOG[$up]}" "$mark" "^done $cip $cport " 10); then
		case_fail "port $port: upstream $up never saw client $cip:$cport ($(log_since "${UPLOG[$up]}" "$mark" | grep -m1 '^done'))"
		return 1
	fi
	read -r _ a p _ un ush _ urn ursh <<<"$done_line"
	read -r _ _ cs csh _ crn crsh _ <<<"$(grep '^xfer ' <<<"$CLIENT_OUT")"
	[[ $urn == "$cs" && $ursh == "$csh" ]] ||
		case_fail "port $port: client->upstream sent $cs ${csh:0:12}, upstream got $urn ${ursh:0:12}"
	[[ $crn == "$un" && $crsh == "$ush" ]] ||
		case_fail "port $port: upstream->client sent $un ${ush:0:12}, client got $crn ${crsh:0:12}"
	LAST_CLIENT=$(hostport "$cip" "$cport")
	return 0
}

# refused PORT [ADDR]: a connection to ADDR:PORT is refused.
refused() {
	local hp
	hp=$(hostport "${2:-127.0.0.1}" "$1")
	if client "$TOPO_PROXY" -c "$hp" --pp2 "198.51.100.99:4444" "$hp" --msg 'x' --timeout 3; then
		case_fail "port $1 (outside the range) was served"
	elif ! grep -q 'Connection refused' <<<"$CLIENT_OUT"; then
		case_fail "port $1: expected 'Connection refused', got: $(client_result)"
	fi
}

UP_PORTS=()
for p in "${PORTS[@]}"; do UP_PORTS+=($((p + 2000))); done

# ---------------------------------------------------------------- 1, 2 --
case_begin "1 -l 127.0.0.1:$LO-$HI -4 127.0.0.1:9000-9999: 20 ports spread, 1:1, byte-exact, through sk_lookup"
if ! range_start -- -l "127.0.0.1:$LO-$HI" -4 127.0.0.1:9000-9999 -6 "[::1]:9000-9999" --listeners 2; then
	case_fail "$MMP_START_ERR"
	case_end
	t_finish
fi
grep -q "listening on 127.0.0.1:$LO-$HI (1000 ports, sk_lookup)" "$MMP_LOG" ||
	case_fail "start-up line does not say sk_lookup: $(grep 'listening on' "$MMP_LOG")"
for pin in mmp_sk_listeners mmp_sk_lookup_link; do
	[[ -e $MMP_PINDIR/$pin ]] || case_fail "$pin is not pinned in $MMP_PINDIR"
done
# One socket per listener thread: nothing is bound to a port of the range but the first.
nbound=$(ns_exec "$TOPO_PROXY" ss -Hltn 'sport >= :7001 and sport <= :7999' | wc -l)
((nbound == 0)) || case_fail "$nbound sockets bound to ports 7001-7999 (sk_lookup needs none)"
if ups_start 4 "${UP_PORTS[@]}"; then
	for p in "${PORTS[@]}"; do xfer_via 127.0.0.1 "$p" $((p + 2000)) 198.51.100.77 || true; done
else
	case_fail "upstreams did not start"
fi
case_note "20 ports x $((SIZE >> 10)) KiB each way, sha256 equal"
case_end

if [[ $MMP_ENGINE == tc || $MMP_ENGINE == auto ]]; then
	# Paced both ways (as t10), so each flow is mid-stream, not half-closed,
	# when its hand-off runs; mmpt-bidir plays the load balancer and the
	# upstream of that port (the 1:1 mapping) and checks every byte.
	case_begin "1b tc engine: long flows to ports of the range are spliced in the kernel"
	ups_stop "${UP_PORTS[@]}"
	for p in 7000 7499 7999; do
		mark=$(log_mark "$MMP_LOG")
		out="$T_TMP/bidir-$p.out"
		tc_run_bidir "$TOPO_PROXY" "$out" -c "127.0.0.1:$p" -l "127.0.0.1:$((p + 2000))" -n 2 --size 4M \
			--rate 16M --net 203.0.113. --port-base $((40000 + p - LO)) --dst "127.0.0.1:$p" --timeout 20
		ok=$(grep -c '^conn .* up [0-9]* ok down [0-9]* ok$' "$out")
		((ok == 2)) || case_fail "port $p: $ok of 2 connections byte-exact ($(tail -n 2 "$out" | tr '\n' ' '))"
		tc_outcomes "$MMP_LOG" "$mark"
		((OC_SPLICED == 2)) || case_fail "port $p: $OC_SPLICED of 2 flows spliced in the kernel (${OC_FIRST_OTHER:-no outcome})"
	done
	case_note "3 ports x 2 flows x 4 MiB each way at 16 MiB/s"
	case_end
	UP_STOPPED=1
fi

case_begin "2 ports just outside the range are refused"
refused 6999
refused 8000
case_end
((${UP_STOPPED:-0})) || ups_stop "${UP_PORTS[@]}"
mmp_stop

# ------------------------------------------------------------------- 3 --
case_begin "3 IPv6: -l [::1]:$LO-$HI -6 [::1]:9000-9999"
if range_start -- -l "[::1]:$LO-$HI" -4 127.0.0.1:9000-9999 -6 "[::1]:9000-9999" --listeners 1; then
	if ups_start 6 9000 9500 9999; then
		for p in 7000 7500 7999; do xfer_via ::1 "$p" $((p + 2000)) 2001:db8:44::7 || true; done
		ups_stop 9000 9500 9999
	else
		case_fail "upstreams did not start"
	fi
	refused 8000 ::1
	mmp_stop
else
	case_fail "$MMP_START_ERR"
fi
case_end

# ------------------------------------------------------------------- 4 --
case_begin "4 -4 as one port: all 20 ports to 127.0.0.1:9000"
if range_start -- -l "127.0.0.1:$LO-$HI" -4 127.0.0.1:9000 --listeners 2; then
	if ups_start 4 9000; then
		for p in "${PORTS[@]}"; do xfer_via 127.0.0.1 "$p" 9000 198.51.100.79 || true; done
		n=$(grep -c '^done ' "${UPLOG[9000]}")
		((n == 20)) || case_fail "the upstream finished $n transfers, want 20"
		ups_stop 9000
	else
		case_fail "upstream did not start"
	fi
	mmp_stop
else
	case_fail "$MMP_START_ERR"
fi
case_end

# ------------------------------------------------------------------- 5 --
FB_PORTS=(7000 7333 7666 7999)
case_begin "5 fallback without sk_lookup (MMP_NO_SK_LOOKUP=1): one socket per port, 1:1"
if range_start MMP_NO_SK_LOOKUP=1 -- -l "127.0.0.1:$LO-$HI" -4 127.0.0.1:9000-9999 --listeners 2; then
	grep -q "MMP_NO_SK_LOOKUP is set: one socket per port" "$MMP_LOG" || case_fail "no fallback log line"
	grep -q "(1000 ports, one socket per port)" "$MMP_LOG" || case_fail "start-up line does not say one socket per port"
	[[ -e $MMP_PINDIR/mmp_sk_listeners ]] && case_fail "mmp_sk_listeners pinned in fallback mode"
	nbound=$(ns_exec "$TOPO_PROXY" ss -Hltn 'sport >= :7000 and sport <= :7999' | wc -l)
	((nbound == 2000)) || case_fail "$nbound listening sockets on 7000-7999, want 2000 (2 listeners x 1000 ports)"
	if ups_start 4 9000 9333 9666 9999; then
		for p in "${FB_PORTS[@]}"; do xfer_via 127.0.0.1 "$p" $((p + 2000)) 198.51.100.80 || true; done
		ups_stop 9000 9333 9666 9999
	else
		case_fail "upstreams did not start"
	fi
	refused 8000
	mmp_stop
else
	case_fail "$MMP_START_ERR"
fi
case_end

# ------------------------------------------------------------------- 6 --
netns_ino=$(stat -L -c %i "/run/netns/$TOPO_PROXY")
sk_links() { bpftool link show 2>/dev/null | grep -c "netns_ino $netns_ino .*attach_type sk_lookup"; }

case_begin "6 disjoint ranges side by side, an overlapping one refused, SIGKILL + cleanup detaches"
if range_start -- -l "127.0.0.1:7000-7499" -4 127.0.0.1:9000-9499 --listeners 1; then
	A_PID=$MMP_PID A_LOG=$MMP_LOG A_PIN=$MMP_PINDIR
	if range_start -- -l "127.0.0.1:7500-7999" -4 127.0.0.1:9500-9999 --listeners 1; then
		B_PID=$MMP_PID B_PIN=$MMP_PINDIR
		out=$(ns_exec "$TOPO_PROXY" "$MMP_BIN" run -l 127.0.0.1:7400-7600 -4 127.0.0.1:9000 \
			--pin-dir "/sys/fs/bpf/mmproxy-bpf-test-$$-overlap" --engine "$MMP_ENGINE" 2>&1)
		rc=$?
		cleanup_push "rm -rf '/sys/fs/bpf/mmproxy-bpf-test-$$-overlap'"
		((rc != 0)) || case_fail "an overlapping range started (status 0)"
		grep -q "overlaps -l 127.0.0.1:7400-7600" <<<"$out" && grep -q "pid " <<<"$out" ||
			case_fail "the refusal does not name the overlap and the other instance: $(grep -v libbpf <<<"$out" | tail -1)"
		if ups_start 4 9100 9800; then
			xfer_via 127.0.0.1 7100 9100 198.51.100.81 || true
			xfer_via 127.0.0.1 7800 9800 198.51.100.81 || true
		else
			case_fail "upstreams did not start"
		fi
		before=$(sk_links)
		((before == 2)) || case_fail "$before sk_lookup links in the namespace with two instances, want 2"
		kill -KILL "$B_PID"
		wait "$B_PID" 2>/dev/null
		after_kill=$(sk_links)
		((after_kill == 2)) || case_fail "$after_kill sk_lookup links after SIGKILL, want 2 (the pinned link stays)"
		cl=$(nsenter --net="/run/netns/$TOPO_PROXY" "$MMP_BIN" cleanup --pin-dir "$B_PIN" 2>&1) ||
			case_fail "cleanup failed: $cl"
		after_cleanup=$(sk_links)
		((after_cleanup == 1)) || case_fail "$after_cleanup sk_lookup links after cleanup, want 1 (A's)"
		[[ -z $(find "$B_PIN" -mindepth 1 2>/dev/null) ]] || case_fail "cleanup left pins in $B_PIN"
		refused 7800
		xfer_via 127.0.0.1 7100 9100 198.51.100.82 || true # A still serves
		ups_stop 9100 9800
		case_note "sk_lookup links: $before with both, $after_kill after SIGKILL, $after_cleanup after cleanup"
	else
		case_fail "second instance: $MMP_START_ERR"
	fi
	MMP_PID=$A_PID MMP_LOG=$A_LOG MMP_PINDIR=$A_PIN MMP_RUNNING=1
	mmp_stop
	links=$(sk_links)
	((links == 0)) || case_fail "$links sk_lookup links left after both instances stopped"
else
	case_fail "$MMP_START_ERR"
fi
case_end

# ------------------------------------------------------------------- 7 --
# The XDP gate gates the whole range: from a source outside -a, a SYN to the
# last port of the range is dropped in XDP (a timeout: no accept, no RST),
# one just outside the range is not judged (refused by the stack with a RST).
case_begin "7 the XDP gate drops SYNs from sources outside -a on every port of the range"
BAD_IP4=198.51.100.3
ip -n "$TOPO_CLIENT" addr add "$BAD_IP4/24" dev veth-c 2>/dev/null
ALLOW=$T_TMP/allowed.txt
printf '%s/32\n' "$TOPO_CLIENT_IP4" >"$ALLOW"
xdp_stat() { ns_exec "$TOPO_PROXY" "$MMP_BIN" stats --pin-dir "$MMP_PINDIR" | awk -v n="$1" '$1 == n { print $2; exit }'; }
if range_start -- -l "0.0.0.0:$LO-$HI" -4 127.0.0.1:9000-9999 -a "$ALLOW" --xdp-iface veth-p --listeners 1; then
	if ups_start 4 9999; then
		next_port cp
		client "$TOPO_CLIENT" -c "$TOPO_PROXY_IP4:$HI" -b "$TOPO_CLIENT_IP4" --pp2 "203.0.113.44:$cp" "203.0.113.1:$HI" \
			--send "$SIZE" --timeout 10 || case_fail "allowed source to port $HI: $(client_result)"
		wait_log_since "${UPLOG[9999]}" 0 "^done 203.0.113.44 $cp " 5 >/dev/null ||
			case_fail "the upstream of port $HI never saw the allowed source's client"
		ups_stop 9999
	else
		case_fail "upstream did not start"
	fi
	drop0=$(xdp_stat dropped_not_allowed)
	for port in $LO 7500 $HI; do
		client "$TOPO_CLIENT" -c "$TOPO_PROXY_IP4:$port" -b "$BAD_IP4" --pp2 "203.0.113.45:4000" "203.0.113.1:$port" \
			--msg x --timeout 2 && case_fail "port $port: a source outside -a was served"
		grep -q 'timed out' <<<"$CLIENT_OUT" || case_fail "port $port: not dropped in XDP: $(client_result)"
	done
	client "$TOPO_CLIENT" -c "$TOPO_PROXY_IP4:8000" -b "$BAD_IP4" --msg x --timeout 2
	grep -q 'Connection refused' <<<"$CLIENT_OUT" || case_fail "port 8000 (outside the range) was judged: $(client_result)"
	drop1=$(xdp_stat dropped_not_allowed)
	((drop1 >= drop0 + 3)) || case_fail "dropped_not_allowed moved from $drop0 to $drop1 (want at least 3 SYNs)"
	case_note "dropped_not_allowed $drop0 -> $drop1"
	mmp_stop
else
	case_fail "$MMP_START_ERR"
fi
case_end

case_lifecycle
t_finish
