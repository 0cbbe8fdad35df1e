#!/usr/bin/env bash
# t35-udp-fast: the in-kernel fast path (MMP_ENGINE=tc; SKIP otherwise).
#   - established flows are moved by the kernel, both families, for a remote
#     load balancer (veth, redirected into lo) and a local one (lo): PROXY v2
#     both ways; SPP forward, and its replies (the client's 38-byte header
#     inserted, byte for byte what the sender sent) for a local load
#     balancer, while a remote one's SPP replies stay in userspace; a flow
#     that mixes families (IPv4 client, IPv6 load balancer) stays in
#     userspace; a load balancer on the proxy's host sending to its veth
#     address is a local one (its datagrams come through lo: both ways in
#     the kernel, its replies used to be lost). Each flow: 10,000 sequenced
#     datagrams at 20,000/s, none lost or reordered across the hand-over,
#     the upstream sees the client's ip:port; after a pause that ends the
#     hand-over, every datagram and reply is counted exactly once, by the
#     kernel or by userspace as expected;
#   - none of those datagrams counted as on another interface than its
#     entry's (fast_wrong_ifindex);
#   - SPP: a new proxy address for a client reaches the kernel's replies;
#   - 4 flows sent flat out (never quiet) are taken over by the kernel anyway;
#   - an LB ip:port reused by another client (first): the new client's
#     header-less datagrams never reach the upstream as the old client;
#   - a flow the kernel alone keeps busy stays open; once quiet it closes
#     2 to 3 s later (-c 2), its entries gone; after SIGTERM the filters
#     and pins are gone too;
#   - flows whose entries went stale for good (v2 TLVs, an SPP proxy
#     address that keeps changing) leave no entry in any map once closed.
source "$(dirname "$0")/udp-lib.sh"
udp_setup t35-udp-fast

if ! udp_fast; then
	case_begin "fast path"
	case_skip "runs under MMP_ENGINE=tc (the userspace relay is tested under splice)"
	t_finish
fi

now_ms() { echo $(($(date +%s%N) / 1000000)); }
N=10000
W=300 # datagrams before the pause: the hand-over happens among them
PAUSE_MS=5000

# counter_delta NAME: its increase since the snapshot in counters.before.
counters_mark() { udp_totals_fresh; udp_counters >"$T_TMP/counters.before"; }
counter_delta() {
	local before
	before=$(awk -v n="$1" '$1 == n { print $2 }' "$T_TMP/counters.before")
	echo $(($(udp_counter "$1") - ${before:-0}))
}

# settled_mark: snapshot the counters once two refreshes in a row agree on
# the datagrams moved (the first W are through, however slowly the sender ran).
settled_mark() {
	local a b re='^(fwd_dgrams|sent_dgrams|fast_fwd_dgrams|fast_reply_dgrams) '
	udp_totals_fresh
	a=$(udp_counters | grep -E "$re")
	for _ in 1 2 3; do
		udp_totals_fresh
		udp_counters >"$T_TMP/counters.before"
		b=$(grep -E "$re" "$T_TMP/counters.before")
		[[ $a == "$b" ]] && return 0
		a=$b
	done
	case_fail "the counters kept moving during the sender's pause"
}

# by_check WHAT BY KERNEL USER [TOTAL]: after the pause, the TOTAL (default N)
# - W datagrams of one direction were moved by BY (kernel or user) alone.
by_check() {
	local what=$1 by=$2 k=$3 u=$4 rest=$((${5:-$N} - W))
	if [[ $by == kernel ]]; then
		((k == rest && u == 0)) || case_fail "$what: the kernel moved $k and userspace $u of the last $rest (want all in the kernel)"
	else
		((k == 0 && u == rest)) || case_fail "$what: the kernel moved $k and userspace $u of the last $rest (want all in userspace)"
	fi
}

# fast_case FORMAT FAMILY remote|local CLIENT_IP PORT FWD_BY REV_BY: one flow
# of N datagrams, W of them, a pause, the rest; FWD_BY and REV_BY (kernel or
# user) say who must move the datagrams and the replies after the pause.
fast_case() {
	local fmt=$1 fam=$2 where=$3 cip=$4 port=$5 fwd_by=$6 rev_by=$7 proxy ns client log seq0 kf kr uf ur
	case $fam/$where in
	4/remote) proxy=$PROXY4 ns=$TOPO_CLIENT ;;
	6/remote) proxy=$PROXY6 ns=$TOPO_CLIENT ;;
	4/local) proxy="127.0.0.1:$PROXY_PORT" ns=$TOPO_PROXY ;;
	6/local) proxy="[::1]:$PROXY_PORT" ns=$TOPO_PROXY ;;
	# A load balancer on the proxy's host sending to its veth address: IP_PKTINFO names the veth,
	# but the datagrams come through lo.
	4/own) proxy=$PROXY4 ns=$TOPO_PROXY ;;
	6/own) proxy=$PROXY6 ns=$TOPO_PROXY ;;
	esac
	if [[ $cip == *:* ]]; then
		client="[$cip]:$port" log=$UP6_LOG
	else
		client="$cip:$port" log=$UP4_LOG
	fi
	case_begin "$fmt, IPv$fam $where load balancer, client $client: $N datagrams in order both ways; forward by $fwd_by, replies by $rev_by"
	seq0=$(udp_seqerrs "$log")
	udp_send_bg "$ns" -c "$proxy" --format "$fmt" --client "$client" -n "$N" --rate 20000 --size 200 --echo \
		--timeout 20 --pause-after "$W" --pause-ms "$PAUSE_MS"
	# In the pause: the first W are through (the map is refreshed every second).
	wait_grep "$log" "^peer $cip $port\$" 5 || case_fail "the upstream never saw $client"
	settled_mark
	if udp_send_wait; then
		case_note "$(udp_result)"
	else
		case_fail "sender: $(udp_result)"
	fi
	(($(udp_seqerrs "$log") == seq0)) || case_fail "the upstream saw gaps or reordering: $(grep '^seqerr' "$log" | tail -2 | tr '\n' ' ')"
	udp_totals_fresh
	kf=$(counter_delta fast_fwd_dgrams) kr=$(counter_delta fast_reply_dgrams)
	uf=$(counter_delta fwd_dgrams) ur=$(counter_delta sent_dgrams)
	by_check "datagrams" "$fwd_by" "$kf" "$uf"
	by_check "replies" "$rev_by" "$kr" "$ur"
	case_note "after the pause: kernel $kf forwarded, $kr replies; userspace $uf forwarded, $ur replies"
	case_end
}

t_require udp_up_start
# -c 10: the flows outlive the pause.
t_require udp_mmp_start --udp-header auto -c 10

fast_case v2 4 remote 203.0.113.90 35001 kernel kernel
fast_case spp 4 remote 203.0.113.90 35002 kernel user
fast_case v2 4 local 203.0.113.90 35003 kernel kernel
fast_case spp 4 local 203.0.113.90 35004 kernel kernel
fast_case v2 6 remote 2001:db8:77::90 35005 kernel kernel
fast_case spp 6 remote 2001:db8:77::90 35006 kernel user
fast_case v2 6 local 2001:db8:77::90 35007 kernel kernel
fast_case spp 6 local 2001:db8:77::90 35008 kernel kernel
# An IPv4 client through an IPv6 load balancer: userspace translates.
fast_case v2 6 remote 203.0.113.90 35009 user user
fast_case v2 4 own 203.0.113.90 35010 kernel kernel
fast_case v2 6 own 2001:db8:77::90 35011 kernel kernel

# Each entry names the interface its datagrams arrive on (spoofs elsewhere: unit test_udp_fastpath):
# none of the flows above, local, remote or sent to our own veth address, may miss it.
case_begin "the flows above came in on the interfaces their entries name (fast_wrong_ifindex 0)"
v=$(udp_counter fast_wrong_ifindex)
[[ $v == 0 ]] || case_fail "fast_wrong_ifindex is ${v:-unreadable}, want 0"
case_end

# The load balancer names another proxy address for the same client: the
# kernel stops on it (stale), userspace takes the new header and re-arms,
# and from then on the kernel's replies carry the new header.
case_begin "spp, local load balancer: a new proxy address in the header; the kernel's replies carry it"
spp_args=(-c "127.0.0.1:$PROXY_PORT" --format spp --client 203.0.113.96:39000 --bind 127.0.0.1:46000 --echo --timeout 20)
udp_send "$TOPO_PROXY" "${spp_args[@]}" --dst 192.0.2.1:443 -n 300 --rate 20000 || case_fail "first header: $(udp_result)"
seq0=$(udp_seqerrs "$UP4_LOG")
udp_send_bg "$TOPO_PROXY" "${spp_args[@]}" --dst 192.0.2.2:443 -n 1000 --rate 20000 --pause-after "$W" \
	--pause-ms "$PAUSE_MS"
settled_mark
# The sender checks that every reply starts with the header it sent (192.0.2.2).
udp_send_wait || case_fail "second header: $(udp_result)"
# The second run starts its sequence again: one sequence error, no more.
(($(udp_seqerrs "$UP4_LOG") == seq0 + 1)) || case_fail "the upstream saw $(($(udp_seqerrs "$UP4_LOG") - seq0)) sequence errors, want 1"
udp_totals_fresh
by_check "datagrams" kernel "$(counter_delta fast_fwd_dgrams)" "$(counter_delta fwd_dgrams)" 1000
by_check "replies" kernel "$(counter_delta fast_reply_dgrams)" "$(counter_delta sent_dgrams)" 1000
case_note "$(udp_result)"
case_end

# Regression: hand-overs used to wait for userspace to have sent as many
# marked datagrams as the kernel passed, which a flow sent flat out (or one
# marked datagram dropped by a full socket) never allowed: no flow of the
# UDP stream benchmark ever reached the kernel.
case_begin "4 flows sent flat out, never quiet: the kernel takes them over anyway"
counters_mark
udp_send "$TOPO_PROXY" -c "127.0.0.1:$PROXY_PORT" --format v2 --client 203.0.113.95:38000 --clients 4 -n 50000 \
	--size 1200 --timeout 5 >/dev/null
udp_totals_fresh
kf=$(counter_delta fast_fwd_dgrams) uf=$(counter_delta fwd_dgrams) held=$(counter_delta fast_held)
((kf > 0 && kf * 2 > kf + uf)) || case_fail "the kernel forwarded $kf and userspace $uf: the hand-over did not complete"
case_note "kernel $kf, userspace $uf, dropped in hand-overs $held ($(udp_result))"
case_end

case_begin "first: an LB ip:port reused by another client; none of its datagrams reach the upstream as the old one"
seq0=$(udp_seqerrs "$UP4_LOG")
udp_send "$TOPO_CLIENT" -c "$PROXY4" --format first --client 203.0.113.91:36000 --bind "$TOPO_CLIENT_IP4:45000" \
	-n 200 --rate 20000 --echo --timeout 5 || case_fail "first client: $(udp_result)"
udp_send "$TOPO_CLIENT" -c "$PROXY4" --format first --client 203.0.113.92:36000 --bind "$TOPO_CLIENT_IP4:45000" \
	-n 200 --rate 20000 --echo --timeout 5 || case_fail "second client: $(udp_result)"
# A datagram of the second client delivered as the first would break the first one's sequence.
(($(udp_seqerrs "$UP4_LOG") == seq0)) ||
	case_fail "the upstream saw: $(grep '^seqerr' "$UP4_LOG" | tail -n +$((seq0 + 1)) | head -2 | tr '\n' ' ')"
wait_grep "$UP4_LOG" '^peer 203\.0\.113\.92 36000$' 2 || case_fail "the second client never reached the upstream"
case_end

mmp_stop
t_require udp_mmp_start --udp-header auto -c 2
case_begin "a flow only the kernel moves stays open while busy, then closes 2 to 3 s after it goes quiet (-c 2)"
# 3.5 s at 20/s: far longer than -c 2, every datagram after the first in the kernel.
udp_send "$TOPO_CLIENT" -c "$PROXY4" --format v2 --client 203.0.113.93:37000 -n 70 --rate 20 --echo --timeout 6 ||
	case_fail "sender: $(udp_result)"
t1=$(now_ms)
read -r cookie _ up down _ <<<"$(udp_flows_for 203.0.113.93 37000 | head -1)"
[[ -n $cookie ]] || case_fail "the flow closed while busy"
gone=""
while (($(now_ms) - t1 < 5000)); do
	if ! udp_has_port 37000; then
		gone=$(($(now_ms) - t1))
		break
	fi
	sleep 0.02
done
if [[ -z $gone ]]; then
	case_fail "still open 5 s after its last datagram"
elif ((gone > 3000)); then
	case_fail "closed $gone ms after its last datagram"
else
	case_note "one flow for 3.5 s ($up up, $down down), gone $gone ms after the last echo"
fi
left=$(bpftool -j map dump pinned "$MMP_PINDIR/mmp_udp_fwd" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
[[ $left == 0 ]] || case_fail "$left entries left in mmp_udp_fwd once every flow closed"
case_end

# fast_entries MAP: how many entries it holds, and how many of them are stale ("N S").
fast_entries() {
	bpftool -j map dump pinned "$MMP_PINDIR/$1" 2>/dev/null | python3 -c '
import json, sys
e = json.load(sys.stdin)
print(len(e), sum(1 for x in e if x.get("formatted", {}).get("value", {}).get("stale")))'
}

# Issue 26 (5): after MAX_STALE_REARMS stale marks userspace stops re-arming
# a flow's forward entry, and closing the flow used to skip that entry (and
# its mmp_udp_drain entry when the replies were not in the kernel): the maps
# filled up, and the fast path refused every new flow until a restart.
case_begin "headers the kernel leaves to userspace (v2 TLVs, SPP proxy address changes): no entry left once the flows close"
udp_send "$TOPO_CLIENT" -c "$PROXY4" --format v2 --tlv --client 203.0.113.94:37100 --bind "$TOPO_CLIENT_IP4:45100" \
	-n 40 --rate 200 --echo --timeout 5 || case_fail "v2 with a TLV: $(udp_result)"
# A remote SPP LB (its replies stay in userspace): a new proxy address at each run, 12 runs on one flow.
for i in $(seq 1 12); do
	udp_send "$TOPO_CLIENT" -c "$PROXY4" --format spp --client 203.0.113.94:37200 --bind "$TOPO_CLIENT_IP4:45200" \
		--dst "192.0.2.$((i % 2 + 1)):443" -n 3 --rate 200 --echo --timeout 5 || case_fail "spp run $i: $(udp_result)"
done
read -r n stale <<<"$(fast_entries mmp_udp_fwd)"
# Both flows' forward entries went stale for good: what used to leak.
((stale >= 2)) || case_fail "$n entries in mmp_udp_fwd, $stale stale: want both flows' entries stale (the trigger)"
t1=$(now_ms)
while (udp_has_port 37100 || udp_has_port 37200) && (($(now_ms) - t1 < 6000)); do
	sleep 0.1
done
if udp_has_port 37100 || udp_has_port 37200; then
	case_fail "a flow still open 6 s after its last datagram (-c 2)"
fi
for map in mmp_udp_fwd mmp_udp_rev mmp_udp_drain; do
	read -r n _ <<<"$(fast_entries "$map")"
	((n == 0)) || case_fail "$n entries left in $map once the flows closed"
done
case_note "fast_passed $(udp_counter fast_passed); both flows' entries stale, then gone with them"
case_end

mmp_stop
case_begin "after SIGTERM no TC filter of ours, and no clsact qdisc, is left on lo or the load balancer's interface"
for dev in lo veth-p; do
	left=$(ns_exec "$TOPO_PROXY" tc filter show dev "$dev" ingress 2>/dev/null | grep -c 'mmp_udp_ingress')
	((left == 0)) || case_fail "$left filters left on $dev"
	ns_exec "$TOPO_PROXY" tc qdisc show dev "$dev" 2>/dev/null | grep -q clsact &&
		case_fail "clsact qdisc left on $dev (no other tool uses it here)"
done
case_end

case_lifecycle
t_finish
