#!/usr/bin/env bash
# t57: an upstream in a "container" on a Linux bridge (issue 25, docs/DESIGN.md §14):
# the backend ns hangs off bridge br-up in the proxy ns by a veth, with a private
# address and its default route through the bridge, as Docker's docker0 or a
# CNI bridge has it. Replies of the proxy's spoofed connections are steered at
# br-up's tc ingress by tuple; the container's own outbound connections are
# routed on untouched (upstream-lib.sh lists every check).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/upstream-lib.sh"
if ! is_bpf; then
	echo "SKIP t57 upstream on a bridge: mmproxy-bpf only (go-mmproxy needs an upstream on loopback)"
	exit 0
fi
t_require ub_setup t57

UB_UP_IF=br-up UB_BACK_IP4=10.99.0.2 UB_BACK_IP6=2001:db8:99::2

bridge_topology() {
	ip -n "$TOPO_PROXY" link add br-up type bridge || return 1
	ip -n "$TOPO_PROXY" addr add 10.99.0.1/24 dev br-up || return 1
	ip -n "$TOPO_PROXY" addr add 2001:db8:99::1/64 dev br-up nodad || return 1
	ub_veth_pair veth-b1 eth0 || return 1
	ip -n "$TOPO_PROXY" link set veth-b1 master br-up up || return 1
	ip -n "$TOPO_PROXY" link set br-up up || return 1
	ip -n "$UB_BACK_NS" addr add "$UB_BACK_IP4/24" dev eth0 || return 1
	ip -n "$UB_BACK_NS" addr add "$UB_BACK_IP6/64" dev eth0 nodad || return 1
	ip -n "$UB_BACK_NS" route add default via 10.99.0.1 || return 1
	ip -n "$UB_BACK_NS" -6 route add default via 2001:db8:99::1 || return 1
}
t_require bridge_topology

# While the suite's instance runs: a second one (-p tcp, its own pins) is taken over (docs/DESIGN.md §15) with
# a transfer in flight. The successor adopts the steering map, and its filter replaces the predecessor's on
# the bridge: the predecessor's transfer must end exact, and once the predecessor has exited (detaching
# nothing of the successor's) the successor's new connections must still be steered. (An established
# connection would survive unsteered: TCP's early demux delivers by its cached input route; it is the
# handshake, SYN-ACK first, that needs the mark.) The splice engine only: steering is the same under all.
ub_extra_checks() {
	local pin=/sys/fs/bpf/mmproxy-bpf-test-$$-tk lport=$((PROXY_PORT + 20)) a b cport bg bg_out=$T_TMP/tk-xfer.out
	local cmd mark done_line cs csh crn crsh un ush urn ursh n
	[[ $MMP_ENGINE == splice ]] || return 0
	case_begin "takeover with the upstream on the bridge: a transfer across it stays exact, the successor's is steered"
	cmd=("$MMP_BIN" run -l "$TOPO_PROXY_IP4:$lport" -4 "$UB_BACK_IP4:$UP_PORT" -6 "[$UB_BACK_IP6]:$UP_PORT"
		--pin-dir "$pin" --engine splice -v 1)
	cleanup_push "rm -rf '$pin'"
	proc_start a "$T_TMP/tk-a.log" "$TOPO_PROXY" "${cmd[@]}"
	if ! wait_port "$TOPO_PROXY" "$lport" 10 "$a"; then
		case_fail "the instance did not start: $(grep -v libbpf "$T_TMP/tk-a.log" | tail -n 2 | tr '\n' ' ')"
		case_end
		return
	fi
	next_port cport
	mark=$(log_mark "$UB_UP4_LOG")
	ns_exec "$TOPO_CLIENT" "$MMP_TOOLS/mmpt-client" -c "$TOPO_PROXY_IP4:$lport" --pp2 "$UB_CLIENT4:$cport" \
		"$TOPO_PROXY_IP4:443" --send 4G --timeout 60 >"$bg_out" 2>&1 &
	bg=$!
	sleep 0.3
	proc_start b "$T_TMP/tk-b.log" "$TOPO_PROXY" "${cmd[@]}" --takeover
	wait_grep "$T_TMP/tk-b.log" "took over from pid $a" 10 >/dev/null ||
		case_fail "no 'took over from pid $a' within 10 s: $(grep -v libbpf "$T_TMP/tk-b.log" | tail -n 2 | tr '\n' ' ')"
	# Else the case proves nothing: the transfer must still run on the predecessor once the successor steers.
	proc_alive "$bg" || case_fail "the transfer ended before the takeover was done: make it longer"
	n=$(tc -n "$TOPO_PROXY" filter show dev br-up ingress 2>/dev/null | grep -c mmp_steer_in)
	((n == 2)) || case_fail "$n steering filters on br-up, want 2 (the suite's instance's, and the successor's)"
	wait "$bg" || case_fail "the transfer in flight failed: $(grep -v '^local ' "$bg_out" | tr '\n' ' ')"
	# The predecessor's transfer, byte for byte both ways (mmpt-upstream's "done" line against the client's).
	read -r _ _ cs csh _ crn crsh _ <<<"$(grep '^xfer ' "$bg_out")"
	# The client is done once it sent its last byte and read the upstream's EOF: the proxy may still be
	# forwarding megabytes, so the upstream's "done" comes later (CI saw it missing when read at once).
	if done_line=$(wait_log_since "$UB_UP4_LOG" "$mark" "^done $UB_CLIENT4 $cport " 15); then
		read -r _ _ _ _ un ush _ urn ursh <<<"$done_line"
		[[ $urn == "$cs" && $ursh == "$csh" && $cs == $((4 << 30)) ]] ||
			case_fail "client->upstream: sent ${cs:-?} ${csh:0:12}, upstream got ${urn:-?} ${ursh:0:12}"
		[[ $crn == "$un" && $crsh == "$ush" ]] || case_fail "upstream->client: sent $un ${ush:0:12}, client got ${crn:-?} ${crsh:0:12}"
	else
		case_fail "the upstream never finished the transfer in flight"
	fi
	for ((n = 0; n < 100; n++)); do proc_alive "$a" || break; sleep 0.1; done
	if proc_alive "$a"; then
		case_fail "the predecessor still runs 10 s after its transfer ended"
	else
		wait "$a" 2>/dev/null || case_fail "the predecessor exited $?"
	fi
	n=$(tc -n "$TOPO_PROXY" filter show dev br-up ingress 2>/dev/null | grep -c mmp_steer_in)
	((n == 2)) || case_fail "$n steering filters on br-up once the predecessor exited, want 2 (the suite's, the successor's)"
	# The successor's own connection, its SYN-ACK steered by the successor's filter.
	next_port n
	client "$TOPO_CLIENT" -c "$TOPO_PROXY_IP4:$lport" --pp2 "$UB_CLIENT4:$n" "$TOPO_PROXY_IP4:443" --send "$UB_SIZE" \
		--timeout 10 || case_fail "a connection through the successor failed: $(client_result)"
	proc_stop "$b" 10
	((PROC_STATUS == 0)) || case_fail "the successor exited $PROC_STATUS on SIGTERM"
	[[ -z $(find "$pin" -mindepth 1 2>/dev/null) ]] || case_fail "pins left: $(find "$pin" -mindepth 1 | tr '\n' ' ')"
	n=$(tc -n "$TOPO_PROXY" filter show dev br-up ingress 2>/dev/null | grep -c mmp_steer_in)
	((n == 1)) || case_fail "$n steering filters on br-up after both exited, want 1 (the suite's instance's)"
	case_note "$(grep -m1 -o 'xfer sent [0-9]*' "$bg_out") bytes across the takeover"
	case_end
}
ub_suite
t_finish
