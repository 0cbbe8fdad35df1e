#!/usr/bin/env bash
# t40: a blind attacker against a flow spliced in the kernel (issue 10, "tc
# engine, as robust as kernel TCP"; docs/DESIGN.md §3c).
#
#   PREFIX-client               PREFIX-lb (HAProxy, send-proxy-v2)         PREFIX-proxy
#   veth-cl 198.51.100.66/26 -- veth-lc .65/26
#                                veth-lp 203.0.113.2/24  --  veth-pl 203.0.113.1/24
#                                                            mmproxy-bpf --iface veth-pl
#                                                            mmpt-upstream 127.0.0.1:9000
#
# A client sends SIZE/2 bytes through HAProxy, pauses PAUSE_S seconds, sends
# the rest and half-closes; the upstream (mmpt-upstream -m xfer) sends SIZE
# bytes at once. While the client pauses, from the load balancer's namespace,
# mmpt-inject writes on the veth, with the flow's exact 4-tuple (HAProxy's
# address and port -> the proxy's) and guessed sequence numbers:
#   64 RSTs and 64 SYNs,
#   and, claiming the upstream's side (src 127.0.0.1:9000 -> the client), an
#   RST and a data segment: on the veth, not on lo, where that side lives.
# The pause outlasts the collector's linger (2 s after the last packet of a
# flow marked reset), so a flow wrongly marked reset is removed before the
# client resumes. The flow must survive byte-exact (sha256 both ways), the
# counters must show what happened to each packet, and the flow must not be
# marked reset. Case 2 runs the same attack against the same flow on the
# splice engine, where the proxy's own socket (kernel TCP, RFC 5961) meets it:
# the reference behaviour.
# Case 3 (issue 26 finding 4) gives the attacker the load balancer's seq, read
# from the flow entry (snd_nxt), but not the ACK: a 100-byte segment at that
# seq with an ACK of nothing the upstream sent, then an RST at the seq that
# segment would have moved snd_nxt to. Neither may move the flow's state: it
# must not be marked reset (the collector would remove it during the pause)
# and must complete byte-exact.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/tc-lib.sh"
tc_only t40 "blind attacks on a spliced flow"
MMP_VERBOSITY=2
t_setup t40

SIZE=$((2 << 20))
PAUSE_S=5
LB_NS="mmpt-$$-lb"
LB_IP4=198.51.100.65 CL_IP4=198.51.100.66
LB_IP6=2001:db8:4::1 CL_IP6=2001:db8:4::2
LBP_IP4=203.0.113.2 P_IP4=203.0.113.1
LBP_IP6=2001:db8:3::2 P_IP6=2001:db8:3::1
HAP_PORT=8001

# The topology of t13: HAProxy in its own namespace between client and proxy.
lb_topology() {
	cleanup_push "ip netns del '$LB_NS'"
	ip netns add "$LB_NS" || return 1
	ip -n "$LB_NS" link set lo up || return 1
	ip -n "$TOPO_CLIENT" link add veth-cl type veth peer name veth-lc netns "$LB_NS" || return 1
	ip -n "$TOPO_CLIENT" addr add "$CL_IP4/26" dev veth-cl || return 1
	ip -n "$TOPO_CLIENT" addr add "$CL_IP6/64" dev veth-cl nodad || return 1
	ip -n "$LB_NS" addr add "$LB_IP4/26" dev veth-lc || return 1
	ip -n "$LB_NS" addr add "$LB_IP6/64" dev veth-lc nodad || return 1
	ip -n "$LB_NS" link add veth-lp type veth peer name veth-pl netns "$TOPO_PROXY" || return 1
	ip -n "$LB_NS" addr add "$LBP_IP4/24" dev veth-lp || return 1
	ip -n "$LB_NS" addr add "$LBP_IP6/64" dev veth-lp nodad || return 1
	ip -n "$TOPO_PROXY" addr add "$P_IP4/24" dev veth-pl || return 1
	ip -n "$TOPO_PROXY" addr add "$P_IP6/64" dev veth-pl nodad || return 1
	local l
	for l in "$TOPO_CLIENT veth-cl" "$LB_NS veth-lc" "$LB_NS veth-lp" "$TOPO_PROXY veth-pl"; do
		# shellcheck disable=SC2086
		ip -n ${l% *} link set ${l#* } up || return 1
	done
	ns_exec "$TOPO_PROXY" sysctl -qw net.ipv4.conf.lo.route_localnet=1 net.ipv4.conf.lo.accept_local=1 || return 1
}

# The client: mmpt-slow-client.py (tests/tools), "local ADDR PORT" ... "xfer sent N SHA recv N SHA".
SLOW_CLIENT="$(cd "$(dirname "$0")/../tools" && pwd)/mmpt-slow-client.py"

t_require lb_topology
t_require hap_lb_start

# inject ARGS...: mmpt-inject on the load balancer's veth, toward the proxy's veth.
inject() {
	local mac
	mac=$(ip -n "$TOPO_PROXY" -j link show veth-pl | jq -r '.[0].address')
	ns_exec "$LB_NS" "$MMP_TOOLS/mmpt-inject" -i veth-lp --dst-mac "$mac" "$@" >/dev/null
}

# attack_case NAME ENGINE
attack_case() {
	local name=$1 engine=$2 cout cpid lbport cport mark done_line before after n
	case_begin "$name"
	if ! up_start -m xfer --send "$SIZE"; then
		case_fail "upstream did not start"
		case_end
		return
	fi
	if ! MMP_ENGINE=$engine tc_mmp_start "$(tc_pindir "$MMP_STARTS")" "$P_IP4:$PROXY_PORT" --iface veth-pl; then
		case_fail "$MMP_START_ERR"
		up_stop
		case_end
		return
	fi
	mark=$(log_mark "$MMP_LOG")
	cout="$T_TMP/client-$MMP_STARTS.out"
	proc_start cpid "$cout" "$TOPO_CLIENT" python3 "$SLOW_CLIENT" "$LB_IP4" "$HAP_PORT" "$SIZE" "$PAUSE_S"
	if ! wait_grep "$cout" '^paused' 10; then
		case_fail "the client did not get to its pause: $(tr '\n' ' ' <"$cout")"
	fi
	read -r _ _ cport <<<"$(grep -m1 '^local ' "$cout")"
	if [[ $engine == tc ]] && ! tc_wait_spliced "$MMP_LOG" "$mark" "$CL_IP4:$cport" 3; then
		case_fail "not spliced in the kernel before the attack: $TC_OUTCOME"
	fi
	# HAProxy's side of conn1: the attacker knows these ports, not the sequence numbers.
	lbport=$(log_since "$MMP_LOG" "$mark" | sed -n "s/.*accepted ${LBP_IP4//./\\.}:\([0-9]*\)\$/\1/p" | tail -n 1)
	before=$("$MMP_BIN" stats --pin-dir "$MMP_PINDIR" 2>/dev/null | awk '$1 ~ /^(rsts|syns|packets_on)/ {printf "%s=%s ", $1, $2}')
	if [[ -z $lbport || -z $cport ]]; then
		case_fail "no tuple to attack (load balancer port '$lbport', client port '$cport')"
	else
		inject --src "$LBP_IP4:$lbport" --dst "$P_IP4:$PROXY_PORT" --flags R --random-seq --seed 1 --count 64 ||
			case_fail "mmpt-inject (RSTs) failed"
		inject --src "$LBP_IP4:$lbport" --dst "$P_IP4:$PROXY_PORT" --flags S --random-seq --seed 2 --count 64 ||
			case_fail "mmpt-inject (SYNs) failed"
		inject --src "127.0.0.1:$UP_PORT" --dst "$CL_IP4:$cport" --flags RA --random-seq --seed 3 --count 1 ||
			case_fail "mmpt-inject (RST from 127.0.0.1) failed"
		inject --src "127.0.0.1:$UP_PORT" --dst "$CL_IP4:$cport" --flags PA --random-seq --seed 4 --count 1 \
			--payload 100 || case_fail "mmpt-inject (data from 127.0.0.1) failed"
	fi
	if [[ $engine == tc ]]; then
		after=$("$MMP_BIN" stats --pin-dir "$MMP_PINDIR" 2>/dev/null)
		n=$(awk '$1 == "syns_on_live_flows_passed" {print $2}' <<<"$after")
		((${n:-0} == 64)) || case_fail "SYNs on the live flow passed to the endpoint: ${n:-none}, want 64 (before: $before)"
		n=$(awk '$1 ~ /^rsts_(out_of_window_dropped|in_window_passed)$/ {s += $2} END {print s + 0}' <<<"$after")
		((n == 64)) || case_fail "RSTs judged (dropped + passed): $n, want 64"
		n=$(awk '$1 == "packets_on_another_interface" {print $2}' <<<"$after")
		((${n:-0} >= 2)) || case_fail "packets from 127.0.0.1 on the veth refused: ${n:-none}, want 2"
		grep -q 'state: .*RST' <<<"$after" && case_fail "the flow was marked reset: $(grep 'state:' <<<"$after" | tr -s ' ')"
		case_note "after the attack: $(awk '$1 ~ /^(rsts|syns|packets_on)/ {printf "%s %s, ", $1, $2}' <<<"$after")flow $(grep -m1 'state:' <<<"$after" | tr -s ' ')"
	fi
	while proc_alive "$cpid"; do sleep 0.2; done
	wait "$cpid" 2>/dev/null
	CLIENT_OUT=$(cat "$cout")
	read -r _ CLIENT_LOCAL_ADDR CLIENT_LOCAL_PORT <<<"$(grep -m1 '^local ' <<<"$CLIENT_OUT")"
	if ! done_line=$(wait_log_since "$UP4_LOG" 0 '^done ' 10); then
		case_fail "upstream never finished its side; client: $(grep '^xfer' <<<"$CLIENT_OUT")"
	else
		check_xfer_exact "$done_line" "$CL_IP4"
	fi
	mmp_stop
	up_stop
	case_end
}

# desync_case: the attacker knows the load balancer's seq, not the ACK (case 3 above).
desync_case() {
	local cout cpid lbport cport mark done_line nxt after
	case_begin "3 tc: a segment at the known seq with a bogus ACK, then an RST where it ends: the flow is not reset"
	if ! up_start -m xfer --send "$SIZE"; then
		case_fail "upstream did not start"
		case_end
		return
	fi
	if ! tc_mmp_start "$(tc_pindir "$MMP_STARTS")" "$P_IP4:$PROXY_PORT" --iface veth-pl; then
		case_fail "$MMP_START_ERR"
		up_stop
		case_end
		return
	fi
	mark=$(log_mark "$MMP_LOG")
	cout="$T_TMP/client-$MMP_STARTS.out"
	proc_start cpid "$cout" "$TOPO_CLIENT" python3 "$SLOW_CLIENT" "$LB_IP4" "$HAP_PORT" "$SIZE" "$PAUSE_S"
	wait_grep "$cout" '^paused' 10 || case_fail "the client did not get to its pause: $(tr '\n' ' ' <"$cout")"
	read -r _ _ cport <<<"$(grep -m1 '^local ' "$cout")"
	tc_wait_spliced "$MMP_LOG" "$mark" "$CL_IP4:$cport" 3 || case_fail "not spliced in the kernel before the attack: $TC_OUTCOME"
	lbport=$(log_since "$MMP_LOG" "$mark" | sed -n "s/.*accepted ${LBP_IP4//./\\.}:\([0-9]*\)\$/\1/p" | tail -n 1)
	# The next seq the load balancer sends: the client pauses, so it stays put.
	nxt=$(bpftool -j map dump pinned "$MMP_PINDIR/mmp_tc_flows" 2>/dev/null | jq -r '.[0].formatted.value.st.snd_nxt[0]' 2>/dev/null)
	if [[ -z $lbport || ! $nxt =~ ^[0-9]+$ ]]; then
		case_fail "no tuple or seq to attack (load balancer port '$lbport', snd_nxt '$nxt')"
	else
		inject --src "$LBP_IP4:$lbport" --dst "$P_IP4:$PROXY_PORT" --flags PA --seq "$nxt" \
			--ack $(((nxt + 0x80000000) % 0x100000000)) --payload 100 || case_fail "mmpt-inject (data) failed"
		inject --src "$LBP_IP4:$lbport" --dst "$P_IP4:$PROXY_PORT" --flags R --seq $(((nxt + 100) % 0x100000000)) ||
			case_fail "mmpt-inject (RST) failed"
		after=$("$MMP_BIN" stats --pin-dir "$MMP_PINDIR" 2>/dev/null)
		grep -q 'state: .*RST' <<<"$after" && case_fail "the flow was marked reset: $(grep 'state:' <<<"$after" | tr -s ' ')"
		case_note "snd_nxt $nxt; after the attack: flow $(grep -m1 'state:' <<<"$after" | tr -s ' ')"
	fi
	while proc_alive "$cpid"; do sleep 0.2; done
	wait "$cpid" 2>/dev/null
	CLIENT_OUT=$(cat "$cout")
	read -r _ CLIENT_LOCAL_ADDR CLIENT_LOCAL_PORT <<<"$(grep -m1 '^local ' <<<"$CLIENT_OUT")"
	if ! done_line=$(wait_log_since "$UP4_LOG" 0 '^done ' 10); then
		case_fail "upstream never finished its side; client: $(grep '^xfer' <<<"$CLIENT_OUT")"
	else
		check_xfer_exact "$done_line" "$CL_IP4"
	fi
	mmp_stop
	up_stop
	case_end
}

attack_case "1 tc: 64 RSTs, 64 SYNs with guessed seqs, and src 127.0.0.1 on the veth: the flow survives byte-exact" tc
attack_case "2 control, splice engine: the same attack meets the proxy's own socket and the flow survives" splice
desync_case

case_lifecycle
t_finish
