#!/usr/bin/env bash
# t41: state left by an instance killed in the middle of a hand-off (issue 10,
# "Crash-left state"; docs/DESIGN.md §3c).
#
# A hand-off holds a flow in HOLD (the proxy's segments advertise window 0)
# until both sockets are quiet, then FREEZE for about 100 us, then SPLICE. An
# instance killed in HOLD or FREEZE leaves the flow's entries in the pinned
# maps; the client's ip:port then looks claimed by a live spliced flow
# (EADDRINUSE for every new connection from it) and FREEZE drops its segments.
# The next instance (same --pin-dir: it adopts the maps) must collect them.
#
#   1 SIGKILL during HOLD. The upstream stops reading after its first bytes
#     (mmpt-upstream --pause-after), so the proxy's send queue never empties
#     and the hand-off sits in HOLD (300 ms per attempt, retried with
#     backoff). The test polls mmp_tc_flows with bpftool until the flow is in
#     HOLD (mode 1), then SIGKILLs the proxy and checks the entries are still
#     there. Restart with the same --pin-dir: the new instance logs what it
#     collected and the maps are empty; a new connection from the same client
#     ip:port is then spliced in the kernel and transfers SIZE bytes each way
#     byte-exact; once it ended and the collector had time (entries linger
#     2 s), mmp_tc_flows and mmp_tc_tuples are empty
#     (bpftool map dump), and after SIGTERM no pin is left.
#   2 SIGKILL during FREEZE. FREEZE lasts about 100 us, too short to be hit
#     by a signal on purpose, so the test makes the state a kill there
#     leaves: SIGKILL in HOLD as in 1, then the flow entry's mode is set to
#     FREEZE (2) with bpftool map update (entries are otherwise identical).
#     Then as in 1: restart, collected, the tuple reused, nothing leaked.
#   3 an unspoofed flow's local port is claimed like a client's. The proxy's
#     namespace gets one ephemeral port (ip_local_port_range 45000 45000);
#     flow A, a PROXY v2 LOCAL connection (connected unspoofed, from
#     127.0.0.1:45000) from the client namespace over veth-p, is spliced in
#     the kernel and pauses in its middle; then flow B, another LOCAL one,
#     needs a port: the only one is A's, whose sockets are gone since the
#     hand-off. B must fail at once (bind: no port that no spliced flow
#     holds), never sending a SYN on A's tuple (the upstream would answer it
#     with a challenge ACK, translated into A: TcpExtTCPSYNChallenge in the
#     proxy's namespace must not move), and A must complete byte-exact.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/tc-lib.sh"
tc_only t41 "crash-left hand-off state"
MMP_VERBOSITY=2
t_setup t41

SIZE=$((4 << 20))
LISTEN="127.0.0.1:$PROXY_PORT"
CLIENT_IP=203.0.113.9

# flow_modes PINDIR: the modes of mmp_tc_flows' entries, space-separated (1 HOLD, 2 FREEZE, 3 SPLICE).
flow_modes() {
	bpftool -j map dump pinned "$1/mmp_tc_flows" 2>/dev/null | jq -r '[.[].formatted.value.mode] | join(" ")' 2>/dev/null
}

# counts PINDIR: "flows F tuples T".
counts() {
	echo "flows $(tc_map_count "$1" mmp_tc_flows) tuples $(tc_map_count "$1" mmp_tc_tuples)"
}

# set_mode_freeze PINDIR: every flow entry's mode becomes FREEZE, the rest of the value kept.
set_mode_freeze() {
	local entry key val
	while read -r entry; do
		key=$(jq -r '.key | map(ltrimstr("0x")) | join(" ")' <<<"$entry")
		val=$(jq -r '.value | map(ltrimstr("0x")) | .[0] = "02" | .[1] = "00" | .[2] = "00" | .[3] = "00" | join(" ")' <<<"$entry")
		# shellcheck disable=SC2086 # the hex bytes are separate words
		bpftool map update pinned "$1/mmp_tc_flows" key hex $key value hex $val || return 1
	done < <(bpftool -j map dump pinned "$1/mmp_tc_flows" | jq -c '.[]')
}

# crash_case NAME FREEZE(0|1) CLIENT_PORT
crash_case() {
	local name=$1 freeze=$2 port=$3 pin i modes="" cpid done_line mark left
	case_begin "$name"
	pin=$(tc_pindir "crash$port")
	if ! up_start -m xfer --send 1 --after-eof --pause-after 1 --pause-ms 60000; then
		case_fail "upstream did not start"
		case_end
		return
	fi
	# The hand-off starts once the client's bytes fill the queues (the upstream reads none), so it cannot get quiet.
	if ! MMP_TC_HANDOFF_DELAY=300 tc_mmp_start "$pin" "$LISTEN" --detach; then
		case_fail "$MMP_START_ERR"
		up_stop
		case_end
		return
	fi
	proc_start cpid "$T_TMP/hold-$port.out" "$TOPO_PROXY" "$MMP_TOOLS/mmpt-client" -c "$LISTEN" \
		--pp2 "$CLIENT_IP:$port" 203.0.113.1:443 --send $((64 << 20)) --timeout 30
	# Seen in HOLD, the proxy is stopped (SIGSTOP) before the maps are read
	# again: an attempt gives up after 40 ms (the first) or 300 ms without
	# progress (docs/DESIGN.md §3b, "staged HOLD"), so a plain poll-then-kill
	# could land between two attempts. Still in HOLD: killed; else resumed.
	left=""
	for ((i = 0; i < 300; i++)); do
		modes=$(flow_modes "$pin")
		if [[ " $modes " == *" 1 "* ]]; then
			kill -STOP "$MMP_PID"
			left=$(counts "$pin")
			modes=$(flow_modes "$pin")
			[[ $modes == 1 && $left == "flows 1 tuples "[34] ]] && break
			kill -CONT "$MMP_PID"
		fi
		sleep 0.02
	done
	if [[ $modes != 1 ]]; then
		case_fail "the hand-off was never seen in HOLD (flow modes: '${modes}'; $(grep -m1 'tc engine: ' "$MMP_LOG"))"
		mmp_stop
		up_stop
		case_end
		return
	fi
	kill -KILL "$MMP_PID"
	wait "$MMP_PID" 2>/dev/null
	MMP_RUNNING=0
	left=$(counts "$pin")
	# 4 tuples with both peers held, 3 in a staged hold's first stage.
	[[ $left == "flows 1 tuples "[34] ]] || case_fail "after SIGKILL in HOLD the maps hold $left, want flows 1 tuples 3 or 4"
	if ((freeze)); then
		set_mode_freeze "$pin" || case_fail "bpftool map update (mode FREEZE) failed"
		modes=$(flow_modes "$pin")
		[[ $modes == 2 ]] || case_fail "the flow entry's mode is '$modes' after the update, want 2 (FREEZE)"
	fi
	# The killed proxy's sockets died with it; the stalled upstream and client go too.
	up_stop
	proc_stop "$cpid" 2
	if ! up_start -m xfer --send "$SIZE"; then
		case_fail "upstream did not restart"
		case_end
		return
	fi
	if ! tc_mmp_start "$pin" "$LISTEN"; then
		case_fail "restart: $MMP_START_ERR"
		up_stop
		case_end
		return
	fi
	grep -q 'collected 1 flow entries left by the previous instance' "$MMP_LOG" ||
		case_fail "the new instance did not log the collection: $(grep 'tc engine' "$MMP_LOG" | head -n 3 | tr '\n' ' ')"
	left=$(counts "$pin")
	[[ $left == "flows 0 tuples 0" ]] || case_fail "after the restart the maps hold $left, want none"
	# The same client ip:port again: claimed by nobody now.
	mark=$(log_mark "$MMP_LOG")
	client "$TOPO_PROXY" -c "$LISTEN" --pp2 "$CLIENT_IP:$port" 203.0.113.1:443 --send "$SIZE" --timeout 20 ||
		case_fail "a new connection from $CLIENT_IP:$port: $(client_result); proxy: $(log_since "$MMP_LOG" "$mark" | grep -v 'tc engine: client' | tail -n 2 | tr '\n' ' ')"
	if ! done_line=$(wait_log_since "$UP4_LOG" 0 '^done ' 10); then
		case_fail "upstream never finished its side"
	else
		CLIENT_LOCAL_PORT=$port check_xfer_exact "$done_line" "$CLIENT_IP"
	fi
	tc_wait_spliced "$MMP_LOG" "$mark" "$CLIENT_IP:$port" 2 || case_fail "the reused tuple was not spliced in the kernel: $TC_OUTCOME"
	# FIN both ways: removed about 2 s after the last packet.
	for ((i = 0; i < 50; i++)); do
		left=$(counts "$pin")
		[[ $left == "flows 0 tuples 0" ]] && break
		sleep 0.2
	done
	[[ $left == "flows 0 tuples 0" ]] || case_fail "10 s after the reused flow ended the maps hold $left (leaked)"
	mmp_stop
	[[ -z $(tc_pins "$pin") ]] || case_fail "pins left after SIGTERM: $(tc_pins "$pin" | tr '\n' ' ')"
	case_note "after SIGKILL in $( ((freeze)) && echo FREEZE || echo HOLD): collected at restart, $CLIENT_IP:$port reused and spliced, maps empty"
	up_stop
	case_end
}

crash_case "1 SIGKILL during HOLD: the next instance collects the entries, the tuple is reused, nothing leaks" 0 31001
crash_case "2 SIGKILL during FREEZE (entry set to FREEZE after a kill in HOLD): collected, reused, nothing leaks" 1 31002

SLOW_CLIENT="$(cd "$(dirname "$0")/../tools" && pwd)/mmpt-slow-client.py"

# syn_challenges: TcpExtTCPSYNChallenge of the proxy's namespace.
syn_challenges() {
	ns_exec "$TOPO_PROXY" nstat -asz 2>/dev/null | awk '$1 == "TcpExtTCPSYNChallenge" {print $2; f = 1} END {if (!f) print 0}'
}

unspoofed_case() {
	local pin range cout cpid mark c0 c1 done_line t0 ms
	case_begin "3 an unspoofed (LOCAL) flow's port is claimed: a later LOCAL connection does not reuse it"
	pin=$(tc_pindir unspoofed)
	range=$(ns_exec "$TOPO_PROXY" sysctl -n net.ipv4.ip_local_port_range | tr -s '\t ' ' ')
	cleanup_push "ns_exec '$TOPO_PROXY' sysctl -qw net.ipv4.ip_local_port_range='$range'"
	ns_exec "$TOPO_PROXY" sysctl -qw net.ipv4.ip_local_port_range="45000 45000" net.ipv4.conf.lo.route_localnet=1 \
		net.ipv4.conf.lo.accept_local=1
	# The upstream answers after the client's EOF: sent at once, its SIZE bytes
	# and FIN could all go through splice before A's hand-off (a FIN aborts a
	# hand-off for good), which a slow host made happen (CI on 2026-12-04).
	if ! up_start -m xfer --send "$SIZE" --after-eof; then
		case_fail "upstream did not start"
		case_end
		return
	fi
	if ! tc_mmp_start "$pin" "$TOPO_PROXY_IP4:$PROXY_PORT" --iface veth-p; then
		case_fail "$MMP_START_ERR"
		up_stop
		case_end
		return
	fi
	mark=$(log_mark "$MMP_LOG")
	cout="$T_TMP/local-a.out"
	proc_start cpid "$cout" "$TOPO_CLIENT" python3 "$SLOW_CLIENT" "$TOPO_PROXY_IP4" "$PROXY_PORT" "$SIZE" 4 --pp2-local
	wait_grep "$cout" '^paused' 10 || case_fail "flow A did not get to its pause: $(tr '\n' ' ' <"$cout")"
	wait_grep "$UP4_LOG" '^peer 127.0.0.1 45000$' 3 || case_fail "flow A's upstream connection is not from 127.0.0.1:45000: $(grep '^peer' "$UP4_LOG" | tr '\n' ' ')"
	tc_wait_spliced "$MMP_LOG" "$mark" "$TOPO_CLIENT_IP4:$(awk '/^local/ {print $3; exit}' "$cout")" 3 ||
		case_fail "flow A was not spliced in the kernel: $TC_OUTCOME"
	c0=$(syn_challenges)
	mark=$(log_mark "$MMP_LOG")
	t0=$(date +%s%N)
	client "$TOPO_CLIENT" -c "$TOPO_PROXY_IP4:$PROXY_PORT" --pp2-local --msg 'hello\n' --timeout 8 &&
		case_fail "flow B worked, from the only port, A's: $(client_result)"
	ms=$((($(date +%s%N) - t0) / 1000000))
	c1=$(syn_challenges)
	((c1 == c0)) || case_fail "flow B's SYN reached A's tuple: the upstream sent $((c1 - c0)) challenge ACKs"
	log_since "$MMP_LOG" "$mark" | grep -q 'choosing a local port that no spliced flow holds failed: Address already in use' ||
		case_fail "no bind error for flow B: $(log_since "$MMP_LOG" "$mark" | tail -n 2 | tr '\n' ' ')"
	while proc_alive "$cpid"; do sleep 0.2; done
	wait "$cpid" 2>/dev/null
	CLIENT_OUT=$(cat "$cout")
	read -r _ CLIENT_LOCAL_ADDR CLIENT_LOCAL_PORT <<<"$(grep -m1 '^local ' <<<"$CLIENT_OUT")"
	# The upstream saw the proxy's own address: compare its port with flow A's.
	if ! done_line=$(wait_log_since "$UP4_LOG" 0 '^done 127.0.0.1 45000 ' 10); then
		case_fail "upstream never finished flow A; client: $(grep '^xfer' <<<"$CLIENT_OUT")"
	else
		CLIENT_LOCAL_PORT=45000 check_xfer_exact "$done_line" 127.0.0.1
	fi
	case_note "flow B refused in $ms ms; SYN challenges $((c1 - c0))"
	mmp_stop
	up_stop
	ns_exec "$TOPO_PROXY" sysctl -qw net.ipv4.ip_local_port_range="$range"
	case_end
}
unspoofed_case

case_lifecycle
t_finish
