#!/usr/bin/env bash
# t11: the tc engine's eligibility rules (issue 5): a flow whose two
# connections negotiated different TCP options goes to the next engine
# (splice) and still passes byte-exact; it is never spliced at the packet
# level, where the options could not be translated.
#
# Topology: which connection lacks an option. Sysctls such as
# net.ipv4.tcp_timestamps are per network namespace and apply to a
# connection when its SYN / SYN-ACK is built; Linux has no per-socket switch
# for timestamps. A local load balancer (HAProxy, or mmpt-client in the
# proxy namespace) would share the proxy namespace's sysctls with the
# upstream connection, so both connections would change together. So the
# load balancer here is remote: mmpt-client in the client namespace writes a
# hand-made v2 header to mmproxy on 198.51.100.1:7000 over the veth
# (mmproxy runs with --iface veth-p, so the remote path is eligible as
# such). A sysctl set in the client namespace then changes exactly one of
# the two connections: conn1 (load balancer <-> proxy), because the client
# namespace's SYN (or SYN-ACK) decides what conn1 negotiates, while conn2
# (proxy <-> upstream on 127.0.0.1, both ends in the proxy namespace) keeps
# the defaults. The upstream is mmpt-upstream -m xfer in the proxy namespace.
#
# Cases (each SIZE bytes both ways with half-close, sha256 compared):
#   0 control: nothing changed -> spliced in the kernel (so the remote path
#     works and the cases below fall back because of the option alone);
#   1 timestamps off in the client namespace (conn1 without, conn2 with);
#   2 SACK off in the client namespace;
#   3 ECN requested by the client namespace (tcp_ecn=1; the proxy namespace
#     accepts it on conn1 by default, tcp_ecn=2, but does not ask for it on
#     conn2);
#   4 the load balancer's window scale (14, from a 1 GiB tcp_rmem) above
#     conn2's (10): "conn2's window scale is >= conn1's" fails;
#   5 lo's route_localnet off in the proxy namespace (setup-routing not
#     run): the load balancer's packets would be redirected into lo without
#     a route, and are dropped as martians as soon as the upstream socket's
#     cached route is invalidated (any routing change): the flow must stay
#     on splice, with a reason naming the fix;
#   6 timestamps off in the proxy namespace with a local load balancer: both
#     connections lack them, the options match, and the flow must be
#     spliced in the kernel without timestamps (mmpt-bidir, both ends in the
#     proxy namespace).
# 1-5 expect the -v 2 line "stays on splice: REASON" with a matching reason.
# The proxy namespace starts as `mmproxy-bpf setup-routing` leaves a host:
# lo's route_localnet and accept_local on.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/tc-lib.sh"
tc_only t11 "eligibility fallback"
MMP_VERBOSITY=2
t_setup t11

SIZE=$((4 << 20))
LISTEN="0.0.0.0:$PROXY_PORT" # the veth address (remote LB) and 127.0.0.1 (case 5)
CLIENT_PORT=21000

t_require up_start -m xfer --send "$SIZE"
t_require ns_exec "$TOPO_PROXY" sysctl -qw net.ipv4.conf.lo.route_localnet=1 net.ipv4.conf.lo.accept_local=1
t_require tc_mmp_start "$(tc_pindir 1)" "$LISTEN" --iface veth-p

# set_sysctl NS KEY VALUE: set it, and put the default back at the end of
# the case (restore_sysctls).
RESTORE=()
set_sysctl() {
	local old
	old=$(ns_exec "$1" sysctl -n "$2") || return 1
	RESTORE+=("$1 $2 $old")
	ns_exec "$1" sysctl -qw "$2=$3"
}
restore_sysctls() {
	local r ns key val
	for r in "${RESTORE[@]}"; do
		read -r ns key val <<<"$r"
		ns_exec "$ns" sysctl -qw "$key=$val"
	done
	RESTORE=()
}

# remote_case NAME EXPECT(spliced|stays) REASON_REGEX [NS KEY VALUE]...
remote_case() {
	local name=$1 expect=$2 reason=$3 src mark done_line
	shift 3
	case_begin "$name"
	while (($# >= 3)); do
		set_sysctl "$1" "$2" "$3" || case_fail "cannot set $2=$3 in $1"
		shift 3
	done
	CLIENT_PORT=$((CLIENT_PORT + 1))
	src="203.0.113.7:$CLIENT_PORT"
	mark=$(log_mark "$MMP_LOG")
	up_marks
	client "$TOPO_CLIENT" -c "$TOPO_PROXY_IP4:$PROXY_PORT" --pp2 "$src" "203.0.113.1:443" --send "$SIZE" \
		--timeout 30 || case_fail "client: $(client_result)"
	if ! done_line=$(wait_log_since "$UP4_LOG" "$UP4_MARK" "^done 203.0.113.7 $CLIENT_PORT " 10); then
		case_fail "the upstream never finished (or never saw 203.0.113.7:$CLIENT_PORT: $(log_since "$UP4_LOG" "$UP4_MARK" | grep '^peer' | tr '\n' ','))"
	else
		local un ush urn ursh cs csh crn crsh
		read -r _ _ _ _ un ush _ urn ursh <<<"$done_line"
		read -r _ _ cs csh _ crn crsh _ <<<"$(grep '^xfer ' <<<"$CLIENT_OUT")"
		[[ $urn == "$cs" && $ursh == "$csh" && $cs == "$SIZE" ]] ||
			case_fail "client->upstream: sent $cs bytes ${csh:0:12}, upstream got $urn ${ursh:0:12}"
		[[ $crn == "$un" && $crsh == "$ush" && $un == "$SIZE" ]] ||
			case_fail "upstream->client: sent $un bytes ${ush:0:12}, client got $crn ${crsh:0:12}"
	fi
	if tc_wait_spliced "$MMP_LOG" "$mark" "$src" 3; then
		[[ $expect == spliced ]] || case_fail "spliced in the kernel although the options differ: $TC_OUTCOME"
	elif [[ $expect == spliced ]]; then
		case_fail "not spliced in the kernel: $TC_OUTCOME"
	elif [[ $TC_OUTCOME != *"stays on splice"* ]]; then
		case_fail "expected 'stays on splice', got: $TC_OUTCOME"
	elif ! grep -Eiq -- "$reason" <<<"$TC_OUTCOME"; then
		case_fail "the reason does not match /$reason/: $TC_OUTCOME"
	fi
	case_note "$((2 * SIZE >> 20)) MiB sha256-exact; ${TC_OUTCOME/client $src /}"
	restore_sysctls
	case_end
}

remote_case "0 control: remote load balancer, same options -> spliced in the kernel" spliced ""
remote_case "1 timestamps off on conn1 only -> stays on splice, byte-exact" stays "timestamp|options" \
	"$TOPO_CLIENT" net.ipv4.tcp_timestamps 0
remote_case "2 SACK off on conn1 only -> stays on splice, byte-exact" stays "SACK|options" \
	"$TOPO_CLIENT" net.ipv4.tcp_sack 0
remote_case "3 ECN on conn1 only -> stays on splice, byte-exact" stays "ECN|options" \
	"$TOPO_CLIENT" net.ipv4.tcp_ecn 1
remote_case "4 load balancer's window scale 14 > upstream connection's 10 -> stays on splice" stays "window scal" \
	"$TOPO_CLIENT" net.ipv4.tcp_rmem "4096 131072 1073741824"
remote_case "5 lo's route_localnet off -> a remote load balancer's flow stays on splice, byte-exact" stays \
	"route_localnet.*setup-routing" "$TOPO_PROXY" net.ipv4.conf.lo.route_localnet 0

# 6: both connections without timestamps: eligible, translated without them.
case_begin "6 timestamps off on both connections -> spliced in the kernel, byte-exact"
set_sysctl "$TOPO_PROXY" net.ipv4.tcp_timestamps 0
up_stop # mmpt-bidir is the upstream for this case
mark=$(log_mark "$MMP_LOG")
out="$T_TMP/bidir-6.out"
tc_run_bidir "$TOPO_PROXY" "$out" -c "127.0.0.1:$PROXY_PORT" -l "127.0.0.1:$UP_PORT" -n 3 --size "$SIZE" \
	--rate 128M --net 203.0.113. --port-base 22000 --timeout 10
ok=$(grep -c '^conn .* up [0-9]* ok down [0-9]* ok$' "$out")
((ok == 3)) || case_fail "$ok of 3 connections byte-exact both ways: $(grep -v ' ok down [0-9]* ok$' "$out" | head -2 | tr '\n' ';')"
((TC_STALLS == 0)) || case_fail "$TC_STALLS connections stalled (first: $TC_STALL_DIAG)"
tc_outcomes "$MMP_LOG" "$mark"
((OC_SPLICED == 3)) || case_fail "$OC_SPLICED of 3 flows spliced in the kernel (first other: $OC_FIRST_OTHER)"
case_note "3 x $((2 * SIZE >> 20)) MiB exact, $OC_SPLICED spliced in the kernel without timestamps"
restore_sysctls
case_end

mmp_stop
case_lifecycle
t_finish
