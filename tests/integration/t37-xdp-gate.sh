#!/usr/bin/env bash
# t37: the XDP gate (--xdp-iface, issue 12 point 1). The proxy listens on
# [::]:7000 (both families) with -a allowing only the client namespace's
# first addresses; its veth runs the gate. Checked:
#   a  an allowed source is served byte-exact (IPv4 and IPv6);
#   b  a source outside the list: connect times out (the SYN is dropped in
#      XDP: no accept, no RST, nothing half-open at the proxy), the proxy's
#      accepted counter does not move, the gate's dropped counter does;
#   c  SIGTERM: nothing left attached, no pins;
#   d  another tool's XDP program (xdp-filter) attached first is not
#      replaced: the start is refused, naming that program;
#   e  SIGKILL leaves the gate attached; `mmproxy-bpf cleanup` removes it.
source "$(dirname "$0")/lib.sh"
t_setup t37
is_bpf || { echo "SKIP t37: --xdp-iface is mmproxy-bpf's"; exit 0; }

SIZE=$((1 << 20))
BAD_IP4=198.51.100.3 BAD_IP6=2001:db8:1::3
ip -n "$TOPO_CLIENT" addr add "$BAD_IP4/24" dev veth-c || exit 1
ip -n "$TOPO_CLIENT" addr add "$BAD_IP6/64" dev veth-c nodad || exit 1
ALLOW=$T_TMP/allowed.txt
printf '%s/32\n%s/128\n' "$TOPO_CLIENT_IP4" "$TOPO_CLIENT_IP6" >"$ALLOW"
GATE=(-l "[::]:$PROXY_PORT" -a "$ALLOW" --xdp-iface veth-p)
p="" # next_port sets it
# shellcheck disable=SC2034 # CLIENT_LOCAL_PORT and MMP_RUNNING are lib.sh's

# xdp_on_veth: "id NAME" of the XDP program on the proxy's veth, or nothing.
xdp_on_veth() {
	ip -n "$TOPO_PROXY" -d link show veth-p | awk '/prog\/xdp/ { for (i = 1; i < NF; i++) if ($i == "id") print $(i + 1), $(i + 3) }'
}
# stat_of NAME: a counter from `mmproxy-bpf stats` (tcp or xdp gate).
stat_of() {
	ns_exec "$TOPO_PROXY" "$MMP_BIN" stats --pin-dir "$MMP_PINDIR" | awk -v n="$1" '$1 == n { print $2; exit }'
}

t_require up_start -m xfer --send "$SIZE"
t_require mmp_start "${GATE[@]}"

case_begin "a: allowed sources served byte-exact through the gate (IPv4, IPv6)"
[[ $(xdp_on_veth) == *mmp_xdp_gate* ]] || case_fail "no mmp_xdp_gate on veth-p: '$(xdp_on_veth)'"
for fam in 4 6; do
	up_marks
	next_port p
	if [[ $fam == 4 ]]; then
		src=$TOPO_CLIENT_IP4 dst=$TOPO_PROXY_IP4 hdr_src="203.0.113.7:$p" hdr_dst=203.0.113.1:443 log=$UP4_LOG mark=$UP4_MARK
	else
		src=$TOPO_CLIENT_IP6 dst="[$TOPO_PROXY_IP6]" hdr_src="[2001:db8:7::7]:$p" hdr_dst="[2001:db8:7::1]:443" log=$UP6_LOG mark=$UP6_MARK
	fi
	client "$TOPO_CLIENT" -c "$dst:$PROXY_PORT" -b "$src" --pp2 "$hdr_src" "$hdr_dst" --send "$SIZE" --timeout 20 ||
		case_fail "IPv$fam client: $(client_result)"
	if done_line=$(wait_log_since "$log" "$mark" '^done ' 10); then
		# The upstream sees the header's client, not the load balancer's socket.
		a=${hdr_src%:*} a=${a#[} a=${a%]} CLIENT_LOCAL_PORT=$p
		check_xfer_exact "$done_line" "$a"
	else
		case_fail "IPv$fam: the upstream never finished"
	fi
done
case_note "$((SIZE >> 10)) KiB each way per family, sha256 equal"
case_end

case_begin "b: sources outside -a time out (dropped in XDP: no accept, no RST)"
sleep 1.2 # stats' tcp counters are published once a second
acc0=$(stat_of accepted) drop0=$(stat_of dropped_not_allowed)
for bad in "$BAD_IP4 $TOPO_PROXY_IP4" "$BAD_IP6 [$TOPO_PROXY_IP6]"; do
	read -r src dst <<<"$bad"
	next_port p
	if client "$TOPO_CLIENT" -c "$dst:$PROXY_PORT" -b "$src" --pp2 "203.0.113.8:$p" 203.0.113.1:443 --msg 'x' --timeout 2; then
		case_fail "$src was served"
	fi
	grep -q 'timed out' <<<"$CLIENT_OUT" || case_fail "$src: not a timeout (a RST or close?): $(client_result)"
done
[[ -z $(ns_exec "$TOPO_PROXY" ss -Htn state syn-recv "sport = :$PROXY_PORT") ]] || case_fail "half-open connections at the proxy"
sleep 1.2
acc1=$(stat_of accepted) drop1=$(stat_of dropped_not_allowed)
((acc1 == acc0)) || case_fail "accepted moved from $acc0 to $acc1"
((drop1 >= drop0 + 2)) || case_fail "dropped_not_allowed moved from $drop0 to $drop1 (want at least 2 SYNs)"
case_note "accepted stayed $acc0; dropped_not_allowed $drop0 -> $drop1 (SYNs and their retransmits)"
case_end

case_begin "c: SIGTERM detaches the gate and removes its pins"
mmp_stop
[[ -z $(xdp_on_veth) ]] || case_fail "still attached after exit: $(xdp_on_veth)"
[[ ! -e $MMP_PINDIR ]] || case_fail "pins left: $(ls "$MMP_PINDIR")"
case_end

case_begin "d: another tool's XDP program is never replaced: the start is refused, naming it"
if ! command -v xdp-filter >/dev/null; then
	case_skip "xdp-filter missing (apt-get install xdp-tools)"
else
	cleanup_push "ns_exec '$TOPO_PROXY' xdp-filter unload veth-p"
	ns_exec "$TOPO_PROXY" xdp-filter load -m skb veth-p || case_fail "xdp-filter load failed"
	before=$(xdp_on_veth)
	if mmp_start "${GATE[@]}"; then
		case_fail "the proxy started next to $before"
		mmp_stop
	fi
	id=${before%% *} name=${before#* }
	grep -q "XDP program id $id \"$name\"" "$MMP_LOG" || case_fail "no line naming program $id \"$name\": $(tail -n 2 "$MMP_LOG")"
	[[ $(xdp_on_veth) == "$before" ]] || case_fail "xdp-filter's program $before became '$(xdp_on_veth)'"
	case_note "refused: $(grep -o 'already runs XDP program id [0-9]* "[^"]*"' "$MMP_LOG")"
	ns_exec "$TOPO_PROXY" xdp-filter unload veth-p
	[[ -z $(xdp_on_veth) ]] || case_fail "xdp-filter did not unload"
fi
case_end

case_begin "e: SIGKILL leaves the gate attached; cleanup detaches it"
if t_require mmp_start "${GATE[@]}"; then
	kill -KILL "$MMP_PID"
	wait "$MMP_PID" 2>/dev/null
	MMP_RUNNING=0
	[[ $(xdp_on_veth) == *mmp_xdp_gate* ]] || case_fail "not attached after SIGKILL: '$(xdp_on_veth)'"
	out=$(ns_exec "$TOPO_PROXY" "$MMP_BIN" cleanup --pin-dir "$MMP_PINDIR" 2>&1)
	grep -q 'detached: XDP gate' <<<"$out" || case_fail "cleanup said: $out"
	[[ -z $(xdp_on_veth) ]] || case_fail "still attached after cleanup: $(xdp_on_veth)"
	[[ ! -e $MMP_PINDIR ]] || case_fail "pins left after cleanup: $(ls "$MMP_PINDIR")"
fi
case_end

up_stop
case_lifecycle
t_finish
