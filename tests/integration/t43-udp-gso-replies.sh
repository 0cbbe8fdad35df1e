#!/usr/bin/env bash
# t43-udp-gso-replies: an upstream that answers with GSO trains of 65 to 128
# segments (UDP_SEGMENT). The proxy's upstream socket has UDP_GRO on, so each
# train arrives as one read of up to 128 replies; 64 such reads in one batch
# are over 4096 replies, more than the reply path's pieces[] holds
# (UDP_STAGE_MAX, user/udp/udp_reply.c). The proxy is stopped (SIGSTOP) while
# the upstream sends 100 trains, so that they are all queued before its next
# read. Then every reply is counted, relayed, and the proxy still serves.
# Under `make SANITIZE=1` UBSan reports the out-of-bounds index at once.
# The relay under test is userspace's: the file runs the proxy with
# --engine splice whatever MMP_ENGINE says (replies the kernel moves never
# reach pieces[]).
source "$(dirname "$0")/udp-lib.sh"
udp_setup t43-udp-gso-replies
MMP_ENGINE=splice

if ! is_bpf; then
	case_begin "GSO trains of 65-128 segments"
	case_skip "the counters are mmproxy-bpf's"
	t_finish
fi

GSO_TOOL=$REPO_ROOT/tests/tools/gso-trains.py
TRAINS=100 MIN=65 MAX=128 SEG=16
GO_FILE=$T_TMP/go
GSO_LOG=$T_TMP/gso-up.log

t_require udp_mmp_start --udp-header auto --listeners 1
proc_start GSO_PID "$GSO_LOG" "$TOPO_PROXY" python3 "$GSO_TOOL" -l "127.0.0.1:$UP_PORT" --trains "$TRAINS" \
	--min-segs "$MIN" --max-segs "$MAX" --seg-size "$SEG" --go-file "$GO_FILE"
wait_grep "$GSO_LOG" '^listening' 5 || echo "# the GSO upstream did not start: $(cat "$GSO_LOG")"

case_begin "$TRAINS GSO trains of $MIN-$MAX segments queued at once: every reply relayed, the proxy still serves"
want=0
for ((k = 0; k < TRAINS; k++)); do want=$((want + MIN + k % (MAX - MIN + 1))); done
r0=$(udp_counter reply_dgrams) s0=$(udp_counter sent_dgrams)
# One datagram opens the flow; the load balancer's socket stays open for the replies.
udp_send_bg "$TOPO_CLIENT" -c "$PROXY4" --format v2 --client 203.0.113.80:34000 -n 1 --hold-ms 4000 --timeout 6
if wait_grep "$GSO_LOG" '^peer 203.0.113.80 34000$' 5; then
	kill -STOP "$MMP_PID"
	touch "$GO_FILE"
	wait_grep "$GSO_LOG" '^(sent|error)' 10 || case_fail "the upstream did not finish sending"
	sleep 0.2
	kill -CONT "$MMP_PID"
	grep -q "^sent $TRAINS $want\$" "$GSO_LOG" || case_fail "upstream: $(tail -1 "$GSO_LOG")"
else
	case_fail "the upstream never saw the client: $(tail -2 "$GSO_LOG")"
fi
udp_send_wait >/dev/null
udp_counters_fresh
if proc_alive "$MMP_PID"; then
	got=$(($(udp_counter reply_dgrams) - r0)) sent=$(($(udp_counter sent_dgrams) - s0))
	((got == want)) || case_fail "the proxy read $got replies, the upstream sent $want"
	((sent == want)) || case_fail "the proxy relayed $sent replies to the load balancer, expected $want"
	case_note "$want replies in $TRAINS trains: $got read, $sent relayed"
else
	case_fail "the proxy died: $(grep -m3 -e 'runtime error' -e 'ERROR' -e 'Sanitizer' "$MMP_LOG" | tr '\n' ' ')"
fi
case_end

case_begin "after the trains, a fresh flow is still served"
proc_stop "$GSO_PID" 2
t_require udp_up_start
udp_send "$TOPO_CLIENT" -c "$PROXY4" --format v2 --client 203.0.113.81:34001 -n 5 --echo --timeout 3 ||
	case_fail "a good flow failed: $(udp_result)"
case_end

mmp_stop
case_lifecycle
t_finish
