#!/usr/bin/env bash
# t42-udp-policy: what a UDP header may name and move.
#   - the client policy (user/policy/client_policy.c), PROXY v2 and SPP: a load
#     balancer that is not on loopback naming 127.0.0.1:22, ::1,
#     ::ffff:127.0.0.1, 0.0.0.0, 224.0.0.1, 255.255.255.255, port 0 or the
#     proxy host's own address, and a loopback one naming the upstream's own
#     ip:port: dropped, counted
#     (drop_client_policy or drop_bad_client), no upstream sees them; a
#     loopback load balancer may still name 127.0.0.1;
#   - moves (user/udp/udp_flow_policy.c): without -a, a header from another
#     load-balancer address naming an existing client is dropped
#     (drop_move_refused) and its replies stay where they were, in the same
#     thread or across the two listener threads; a new port of the same
#     address still moves them; with -a listing both addresses, they move;
#   - without -a, UDP starts only with --udp-any-source.
source "$(dirname "$0")/udp-lib.sh"
udp_setup t42-udp-policy

if ! is_bpf; then
	case_begin "UDP client policy and moves"
	case_skip "the counters are mmproxy-bpf's"
	t_finish
fi

LB2=198.51.100.3 # a second load-balancer address in the client namespace
ip -n "$TOPO_CLIENT" addr add "$LB2/24" dev veth-c || exit 1

t_require udp_up_start
t_require udp_mmp_start --udp-header auto --listeners 1

# drop_count: datagrams refused for their client so far.
drop_count() { echo $(($(udp_counter drop_client_policy) + $(udp_counter drop_bad_client))); }

# refused NAME NS PROXY FORMAT CLIENT: one datagram, no echo, no upstream peer, one more drop.
refused() {
	local name=$1 ns=$2 proxy=$3 fmt=$4 client=$5 d0 m4 m6
	case_begin "$fmt $name: dropped"
	d0=$(drop_count) m4=$(log_mark "$UP4_LOG") m6=$(log_mark "$UP6_LOG")
	udp_send "$ns" -c "$proxy" --format "$fmt" --client "$client" -n 1 --echo --timeout 1 &&
		case_fail "it was answered: $(udp_result)"
	udp_totals_fresh
	[[ -n $(log_since "$UP4_LOG" "$m4"; log_since "$UP6_LOG" "$m6") ]] &&
		case_fail "an upstream saw it: $( (log_since "$UP4_LOG" "$m4"; log_since "$UP6_LOG" "$m6") | head -1)"
	(($(drop_count) == d0 + 1)) || case_fail "drops went from $d0 to $(drop_count), expected one more"
	case_end
}

for fmt in v2 spp; do
	refused "127.0.0.1:22 from a remote LB" "$TOPO_CLIENT" "$PROXY4" $fmt 127.0.0.1:22
	refused "[::1]:22 from a remote LB" "$TOPO_CLIENT" "$PROXY4" $fmt "[::1]:22"
	refused "[::ffff:127.0.0.1]:22 from a remote LB" "$TOPO_CLIENT" "$PROXY4" $fmt "[::ffff:127.0.0.1]:22"
	refused "0.0.0.0:1234" "$TOPO_CLIENT" "$PROXY4" $fmt 0.0.0.0:1234
	refused "224.0.0.1:1234" "$TOPO_CLIENT" "$PROXY4" $fmt 224.0.0.1:1234
	refused "255.255.255.255:1234" "$TOPO_CLIENT" "$PROXY4" $fmt 255.255.255.255:1234
	refused "203.0.113.5:0" "$TOPO_CLIENT" "$PROXY4" $fmt 203.0.113.5:0
	refused "the upstream's own 127.0.0.1:$UP_PORT from a loopback LB" "$TOPO_PROXY" "127.0.0.1:$PROXY_PORT" $fmt \
		"127.0.0.1:$UP_PORT"
	refused "the proxy host's own $TOPO_PROXY_IP4:31500 from a remote LB" "$TOPO_CLIENT" "$PROXY4" $fmt \
		"$TOPO_PROXY_IP4:31500"
done
case_begin "the drops are logged naming the rule"
n=$(grep -c 'rule loopback' "$MMP_LOG") u=$(grep -c 'rule upstream-address' "$MMP_LOG")
h=$(grep -c 'rule host-address' "$MMP_LOG")
((n == 6 && u == 2 && h == 2)) ||
	case_fail "$n lines name rule loopback (want 6), $u rule upstream-address (want 2), $h rule host-address (want 2)"
case_end

case_begin "a loopback LB may name 127.0.0.1"
m4=$(log_mark "$UP4_LOG")
udp_send "$TOPO_PROXY" -c "127.0.0.1:$PROXY_PORT" --format v2 --client 127.0.0.1:31000 -n 3 --echo --timeout 3 ||
	case_fail "not answered: $(udp_result)"
log_since "$UP4_LOG" "$m4" | grep -q '^peer 127.0.0.1 31000$' || case_fail "the upstream did not see 127.0.0.1:31000"
case_end
mmp_stop

# moves ROUND_NAME ARGS...: 20 clients, 2 datagrams each, through mmpt-udp send.
N=20
moves_setup() {
	t_require udp_mmp_start --udp-header every --listeners 2 "$@"
	udp_send "$TOPO_CLIENT" -c "$PROXY4" --format v2 --client 203.0.113.90:35000 --clients $N -n 2 --echo --timeout 3 ||
		case_fail "first round: $(udp_result)"
	udp_totals_fresh
	mv0=$(udp_counter flows_moved) ev0=$(udp_counter flows_evicted) rf0=$(udp_counter drop_move_refused)
}

case_begin "no -a: headers from another LB address cannot take $N clients' replies (2 listener threads)"
moves_setup
udp_send "$TOPO_CLIENT" -c "$PROXY4" --format v2 --client 203.0.113.90:35000 --clients $N -n 2 --bind "$LB2" \
	--echo --timeout 2 && case_fail "the other address got replies: $(udp_result)"
[[ $UDP_ECHOED == 0 ]] || case_fail "$UDP_ECHOED replies went to $LB2"
udp_totals_fresh
rf=$(($(udp_counter drop_move_refused) - rf0)) mv=$(($(udp_counter flows_moved) - mv0))
ev=$(($(udp_counter flows_evicted) - ev0))
((rf == 2 * N)) || case_fail "drop_move_refused +$rf, expected $((2 * N))"
((mv == 0 && ev == 0)) || case_fail "$mv moved and $ev taken over by the other thread, expected none"
grep -q "replies move between load-balancer addresses only with -a" "$MMP_LOG" || case_fail "no log line with the fix"
case_note "refused $rf"
case_end

case_begin "no -a: a new port of the same LB address still moves the replies"
udp_send "$TOPO_CLIENT" -c "$PROXY4" --format v2 --client 203.0.113.90:35000 --clients $N -n 2 --echo --timeout 3 ||
	case_fail "not answered: $(udp_result)"
udp_totals_fresh
mv=$(($(udp_counter flows_moved) - mv0)) ev=$(($(udp_counter flows_evicted) - ev0))
# A new socket may get its old ephemeral port back: that is the same flow, not a move.
((mv + ev >= N - 3 && mv + ev <= N)) || case_fail "$mv moved + $ev taken over, expected about $N"
grep -q "udp: replies of client 203.0.113.90" "$MMP_LOG" || case_fail "no log line for the moves"
case_note "$mv moved within a thread, $ev across"
case_end
mmp_stop

case_begin "-a with both addresses: replies of $N clients move to the other LB address"
echo "198.51.100.0/24" >"$T_TMP/allowed.txt"
moves_setup -a "$T_TMP/allowed.txt"
udp_send "$TOPO_CLIENT" -c "$PROXY4" --format v2 --client 203.0.113.90:35000 --clients $N -n 2 --bind "$LB2" \
	--echo --timeout 3 || case_fail "not answered at $LB2: $(udp_result)"
udp_totals_fresh
rf=$(($(udp_counter drop_move_refused) - rf0)) mv=$(($(udp_counter flows_moved) - mv0))
ev=$(($(udp_counter flows_evicted) - ev0))
((rf == 0)) || case_fail "drop_move_refused +$rf, expected 0"
((mv + ev == N)) || case_fail "$mv moved + $ev taken over, expected $N"
case_note "$mv moved within a thread, $ev across"
case_end
mmp_stop

# Issue 26 (7): without -a a spoofed datagram opens flows and has replies reflected anywhere.
case_begin "no -a and no --udp-any-source: refuses to start, naming both fixes, leaving nothing"
pin="/sys/fs/bpf/mmproxy-bpf-test-$$-noa"
out=$(ns_exec "$TOPO_PROXY" timeout 10 "$MMP_BIN" run -p udp -l "127.0.0.1:$PROXY_PORT" -4 "127.0.0.1:$UP_PORT" \
	--pin-dir "$pin" --engine "$MMP_ENGINE" 2>&1)
rc=$?
((rc != 0 && rc != 124)) || case_fail "exit status $rc, expected a refusal"
(($(wc -l <<<"$out") == 1)) || case_fail "expected one line, got: $out"
grep -q -- '-a FILE' <<<"$out" && grep -q -- '--udp-any-source' <<<"$out" ||
	case_fail "the line does not name -a and --udp-any-source: $out"
[[ -e $pin ]] && case_fail "it left its pin directory $pin"
[[ -n $(tc -n "$TOPO_PROXY" filter show dev lo ingress 2>/dev/null) ]] && case_fail "it left a filter on lo"
ss -N "$TOPO_PROXY" -uln | grep -q ":$PROXY_PORT " && case_fail "something still listens on udp $PROXY_PORT"
case_note "$out"
case_end

case_lifecycle
t_finish
