#!/usr/bin/env bash
# t50: established TCP flows held in userspace are reaped (issue 26, finding
# 8; docs/DESIGN.md §7c): --idle-timeout closes a flow that moves no data
# either way, and TCP keepalive on both sockets notices a load balancer
# that vanished. Under the tc engine the flows are kept on splice (a
# hand-off delay of 60 s): spliced flows have --tc-idle-timeout instead.
#   1 --idle-timeout 2: a flow that echoes one line and then stays silent is
#     closed (EOF at the client) between 2 and 4.5 s later; logged, counted
#     (totals: closed idle);
#   2 a flow that sends a line every 0.5 s for 5 s stays open, every echo back;
#   3 --idle-timeout 0 --keepalive 1,1,2: the load balancer then stops
#     answering (a blackhole route to the proxy): the proxy's probes go
#     unanswered and it closes the flow, upstream side included, within 8 s;
#     the control flow on another proxy with --keepalive 0 stays open.
source "$(dirname "$0")/lib.sh"
t_setup t50

if ! is_bpf; then
	case_begin "idle timeout and keepalive"
	case_skip "--idle-timeout and --keepalive are mmproxy-bpf's"
	t_finish
fi
MMP_TC_HANDOFF_DELAY=60000 # tc: the flows stay on splice, where these apply

FLOW_PY="$T_TMP/mmpt-idle-flow.py"
cat >"$FLOW_PY" <<'EOF'
# FLOW_PY DST PORT CLIENT_PORT MODE SECONDS
#   idle:    one echoed line, then wait up to SECONDS for the proxy to close;
#            prints "closed AFTER_S" or "open"
#   trickle: a line every 0.5 s for SECONDS; prints "echoes N closed 0|1"
#   hold:    one echoed line, then hold SECONDS and print "held"
import socket, sys, time
dst, port, cport, mode, secs = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], float(sys.argv[5])
s = socket.create_connection((dst, port), timeout=5)
s.sendall(b"PROXY TCP4 203.0.113.50 198.51.100.1 %s 443\r\n" % cport.encode())
def echo(line):
    s.sendall(line)
    got = b""
    while len(got) < len(line):
        b = s.recv(4096)
        if not b:
            return False
        got += b
    return got == line
if not echo(b"ping\n"):
    print("no echo"); sys.exit(1)
t0 = time.time()
if mode == "idle":
    s.settimeout(secs)
    try:
        b = s.recv(1)
        print("closed %.2f" % (time.time() - t0) if not b else "data")
    except socket.timeout:
        print("open")
    except ConnectionResetError:
        print("closed %.2f" % (time.time() - t0))
elif mode == "trickle":
    n, closed = 0, 0
    while time.time() - t0 < secs:
        time.sleep(0.5)
        try:
            if not echo(b"x\n"):
                closed = 1; break
        except OSError:
            closed = 1; break
        n += 1
    print("echoes %d closed %d" % (n, closed))
else:
    print("ready", flush=True)
    time.sleep(secs)
    print("held")
EOF
REMOTE_IP=$TOPO_PROXY_IP4

# link_dark / link_light: the load balancer stops answering the proxy (its
# replies, keepalive ACKs included, hit a blackhole route; this kernel has
# no netem), then answers again.
link_dark() {
	ip -n "$TOPO_CLIENT" route add blackhole "$REMOTE_IP/32"
	cleanup_push "ip -n '$TOPO_CLIENT' route del blackhole '$REMOTE_IP/32' 2>/dev/null"
}
link_light() { ip -n "$TOPO_CLIENT" route del blackhole "$REMOTE_IP/32" 2>/dev/null; }

# upstream_flows: established connections to the upstream in the proxy namespace.
upstream_flows() { ss -N "$TOPO_PROXY" -Htn state established "( dport = :$UP_PORT )" | wc -l; }

t_require up_start
t_require mmp_start -l "0.0.0.0:$PROXY_PORT" --listeners 1 --idle-timeout 2 --keepalive 1,1,2

case_begin "1 --idle-timeout 2: a silent flow is closed 2 to 4.5 s after its last byte"
next_port p
out=$(ns_exec "$TOPO_CLIENT" python3 "$FLOW_PY" "$REMOTE_IP" "$PROXY_PORT" "$p" idle 8 2>&1)
if [[ $out =~ ^closed\ ([0-9.]+) ]]; then
	awk -v t="${BASH_REMATCH[1]}" 'BEGIN { exit !(t >= 1.9 && t <= 4.5) }' ||
		case_fail "closed after ${BASH_REMATCH[1]} s, expected 2 to 4.5 s"
	case_note "closed after ${BASH_REMATCH[1]} s"
else
	case_fail "the flow was not closed: $out"
fi
wait_grep "$MMP_LOG" "closed: no data either way for --idle-timeout 2 s" 2 || case_fail "no log line for it"
case_end

case_begin "2 a flow that sends a line every 0.5 s for 5 s stays open"
next_port p
out=$(ns_exec "$TOPO_CLIENT" python3 "$FLOW_PY" "$REMOTE_IP" "$PROXY_PORT" "$p" trickle 5 2>&1)
[[ $out =~ ^echoes\ ([0-9]+)\ closed\ 0 ]] && ((BASH_REMATCH[1] >= 8)) || case_fail "$out"
case_note "$out"
case_end

case_begin "3 keepalive 1,1,2 (no idle timeout): a vanished load balancer's flow is closed, both sides"
mmp_stop
grep -q "closed idle 1\b" "$MMP_LOG" || case_fail "the totals do not count one idle close: $(grep -m1 'totals:' "$MMP_LOG")"
t_require mmp_start -l "0.0.0.0:$PROXY_PORT" --listeners 1 --idle-timeout 0 --keepalive 1,1,2
next_port p
ns_exec "$TOPO_CLIENT" python3 "$FLOW_PY" "$REMOTE_IP" "$PROXY_PORT" "$p" hold 20 >"$T_TMP/hold.out" 2>&1 &
HOLD_PID=$!
cleanup_push "kill $HOLD_PID 2>/dev/null"
wait_grep "$T_TMP/hold.out" '^ready' 5 || case_fail "the flow did not start: $(cat "$T_TMP/hold.out")"
n0=$(upstream_flows)
((n0 == 1)) || case_fail "$n0 upstream connections before the loss, expected 1"
link_dark
t0=$(date +%s%N)
for ((i = 0; i < 80; i++)); do
	(($(upstream_flows) == 0)) && break
	sleep 0.1
done
secs=$(awk -v d=$(($(date +%s%N) - t0)) 'BEGIN { printf "%.1f", d / 1e9 }')
(($(upstream_flows) == 0)) && case_note "the upstream side closed ${secs} s after the link went dark" ||
	case_fail "the upstream connection is still open after $secs s"
link_light
kill "$HOLD_PID" 2>/dev/null
wait "$HOLD_PID" 2>/dev/null
case_end

case_begin "3b control: with --keepalive 0 the same dark link leaves the flow open"
mmp_stop
t_require mmp_start -l "0.0.0.0:$PROXY_PORT" --listeners 1 --idle-timeout 0 --keepalive 0
next_port p
ns_exec "$TOPO_CLIENT" python3 "$FLOW_PY" "$REMOTE_IP" "$PROXY_PORT" "$p" hold 20 >"$T_TMP/hold2.out" 2>&1 &
HOLD_PID=$!
cleanup_push "kill $HOLD_PID 2>/dev/null"
wait_grep "$T_TMP/hold2.out" '^ready' 5 || case_fail "the flow did not start: $(cat "$T_TMP/hold2.out")"
link_dark
sleep 5
(($(upstream_flows) == 1)) || case_fail "$(upstream_flows) upstream connections, expected the flow still open"
link_light
kill "$HOLD_PID" 2>/dev/null
wait "$HOLD_PID" 2>/dev/null
case_end
mmp_stop

case_lifecycle
t_finish
