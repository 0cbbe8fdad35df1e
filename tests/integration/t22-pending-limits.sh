#!/usr/bin/env bash
# t22: bounds on half-open work (issue 10, "Limits"; docs/DESIGN.md §7a).
#
# Connections that never send their PROXY header cost the attacker nothing
# and the proxy an fd, memory and a deadline each. mmpt-idle (below, Python)
# opens many such connections from the client namespace, from several source
# addresses, and holds them; it reports how many the proxy closed at once.
#   1 --max-pending-per-source 100: 150 idle connections from one address:
#     100 stay pending, 50 are closed at once; another address is still
#     served (an echo through the proxy), and its connections are not counted
#     against the first address.
#   2 --max-pending 300 (one listener thread): 10000 idle connections from 10
#     addresses: at most 300 stay pending, the rest are closed at once; the
#     proxy's memory grows by less than 16 MiB; a real connection is served
#     once the idle ones are gone.
#   3 the places come back: after the idle connections close, the same
#     address gets its 100 again (nothing leaks in the per-source table).
#   4 the totals count each refusal by its limit; the log is rate-limited
#     (at most 5 lines a second, then a "suppressed" summary).
# The header timeout (60 s here) never fires during the test: what closes
# the extra connections is the limit, not the timeout.
source "$(dirname "$0")/lib.sh"
t_setup t22

SRC_NET=198.51.100 # the client namespace's /24; extra source addresses .10 to .19
for i in $(seq 10 19); do
	ip -n "$TOPO_CLIENT" addr add "$SRC_NET.$i/24" dev veth-c 2>/dev/null
done

IDLE_PY="$T_TMP/mmpt-idle.py"
cat >"$IDLE_PY" <<'EOF'
# mmpt-idle SRC[,SRC...] DST PORT N HOLD_S: open N connections round-robin from
# the sources, send nothing, hold them HOLD_S seconds; print
# "idle opened A closed_early C still_open S".
import os, resource, select, socket, sys, time
srcs, dst, port, n, hold = sys.argv[1].split(","), sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
resource.setrlimit(resource.RLIMIT_NOFILE, (n + 100, n + 100))
socks, opened = [], 0
for i in range(n):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((srcs[i % len(srcs)], 0))
    s.setblocking(False)
    try:
        s.connect((dst, port))
    except BlockingIOError:
        pass
    socks.append(s)
    if i % 256 == 255:
        time.sleep(0.01)  # a short backlog must not turn into SYN retries
# Connected? (writable), then see who the proxy closes (readable: EOF or RST).
deadline = time.time() + 10
pending = {s.fileno(): s for s in socks}
while pending and time.time() < deadline:
    p = select.poll()
    for fd in pending:
        p.register(fd, select.POLLOUT)
    for fd, ev in p.poll(200):
        pending.pop(fd, None)
opened = n - len(pending)
time.sleep(hold)
closed = 0
p = select.poll()
for s in socks:
    p.register(s, select.POLLIN | select.POLLHUP | select.POLLERR)
for fd, ev in p.poll(0):
    closed += 1
print("idle opened %d closed_early %d still_open %d" % (opened, closed, opened - closed), flush=True)
time.sleep(float(os.environ.get("IDLE_LINGER", "0")))
for s in socks:
    s.close()
EOF

# idle SRCS N HOLD: run mmpt-idle from the client namespace; sets IDLE_OPENED, IDLE_CLOSED, IDLE_OPEN.
idle() {
	local out
	out=$(ns_exec "$TOPO_CLIENT" python3 "$IDLE_PY" "$1" "$TOPO_PROXY_IP4" "$PROXY_PORT" "$2" "$3" 2>&1)
	read -r _ _ IDLE_OPENED _ IDLE_CLOSED _ IDLE_OPEN <<<"$(grep '^idle ' <<<"$out")"
	[[ -n ${IDLE_OPEN:-} ]] || { IDLE_OPENED=0 IDLE_CLOSED=0 IDLE_OPEN=0; IDLE_ERR=$out; }
}

rss_kb() { awk '/^VmRSS/ { print $2 }' "/proc/$MMP_PID/status"; }

t_require up_start
if ! is_bpf; then
	echo "SKIP t22 pending limits: mmproxy-bpf's flags"
	t_finish
fi
t_require mmp_start -l "0.0.0.0:$PROXY_PORT" --listeners 1 --header-timeout 60 \
	--max-pending 300 --max-pending-per-source 100

case_begin "1 --max-pending-per-source 100: 150 idle connections from one address, 50 closed at once; another address still served"
mark=$(log_mark "$MMP_LOG")
(IDLE_LINGER=3 ns_exec "$TOPO_CLIENT" python3 "$IDLE_PY" "$SRC_NET.10" "$TOPO_PROXY_IP4" "$PROXY_PORT" 150 1 >"$T_TMP/idle1.out" 2>&1) &
idle_pid=$!
sleep 2.5
read -r _ _ o _ c _ s <<<"$(grep '^idle ' "$T_TMP/idle1.out")"
((${c:-0} == 50 && ${s:-0} == 100)) || case_fail "closed at once ${c:-?}, still open ${s:-?} of ${o:-?}, expected 50 and 100 ($(tail -2 "$T_TMP/idle1.out" | tr '\n' ' '))"
echo_via_proxy "203.0.113.250:1000" "203.0.113.1:443" # from 127.0.0.1, another address
wait "$idle_pid"
case_note "closed at once ${c:-?}, pending ${s:-?}; another address served"
case_end

case_begin "2 --max-pending 300: 10000 idle connections from 10 addresses, at most 300 pending, memory bounded"
sleep 1 # the first case's connections are closed
rss0=$(rss_kb)
idle "$(seq -s, -f "$SRC_NET.%g" 10 19)" 10000 1
rss1=$(rss_kb)
((IDLE_OPENED >= 9000)) || case_fail "only $IDLE_OPENED of 10000 connections opened ${IDLE_ERR:+($IDLE_ERR)}"
((IDLE_OPEN <= 300)) || case_fail "$IDLE_OPEN connections stayed pending, expected at most 300"
((IDLE_OPEN >= 250)) || case_fail "only $IDLE_OPEN connections stayed pending: the limit is 300, 30 per address"
((rss1 - rss0 < 16384)) || case_fail "the proxy grew by $(((rss1 - rss0) / 1024)) MiB for 10000 idle connections"
sleep 0.5
echo_via_proxy "203.0.113.250:1001" "203.0.113.1:443" # still serving
case_note "$IDLE_OPENED opened, $IDLE_CLOSED closed at once, $IDLE_OPEN pending; RSS $((rss0 / 1024)) -> $((rss1 / 1024)) MiB"
case_end

case_begin "3 the places come back: the same address gets its 100 again"
sleep 1
idle "$SRC_NET.10" 150 1
((IDLE_OPEN == 100)) || case_fail "$IDLE_OPEN pending after the flood, expected 100 (a leaked place in the per-source table?)"
case_note "$IDLE_OPEN pending, $IDLE_CLOSED closed at once"
case_end

FIRST_LOG=$MMP_LOG
case_begin "5 a 60 KB v2 header trickled a byte at a time: linear work (SO_RCVLOWAT), then served"
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$MMP_PID/stat"; }
TRICKLE_PY="$T_TMP/mmpt-trickle.py"
cat >"$TRICKLE_PY" <<'EOF2'
# mmpt-trickle PORT: a PROXY v2 header with a 60000-byte NOOP TLV, one byte per
# segment, then "ping\n"; prints "trickle ok" when the echo comes back.
import socket, struct, sys, time
tlv = bytes([0x04]) + struct.pack("!H", 60000) + bytes(60000)
body = socket.inet_aton("203.0.113.251") + socket.inet_aton("203.0.113.1") + struct.pack("!HH", 1002, 443) + tlv
hdr = b"\r\n\r\n\x00\r\nQUIT\n" + bytes([0x21, 0x11]) + struct.pack("!H", len(body)) + body
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
for i in range(len(hdr)):
    s.send(hdr[i:i + 1])
s.send(b"ping\n")
s.settimeout(10)
got = b""
while not got.endswith(b"ping\n"):
    d = s.recv(100)
    if not d:
        break
    got += d
print("trickle ok" if got == b"ping\n" else "trickle got %r" % got, flush=True)
EOF2
mmp_stop
t_require mmp_start -l "0.0.0.0:$PROXY_PORT" --listeners 1
ticks0=$(cpu_ticks)
out=$(ns_exec "$TOPO_PROXY" timeout 60 python3 "$TRICKLE_PY" "$PROXY_PORT" 2>&1)
ticks1=$(cpu_ticks)
hz=$(getconf CLK_TCK)
[[ $out == "trickle ok" ]] || case_fail "the trickled header was not served: $out"
# Parsed again at every byte, 60000 peeks of up to 60 KB: seconds of CPU.
((ticks1 - ticks0 < hz * 3 / 10)) || case_fail "the proxy spent $(((ticks1 - ticks0) * 1000 / hz)) ms of CPU on one trickled header"
case_note "$(((ticks1 - ticks0) * 1000 / hz)) ms of proxy CPU for 60044 one-byte segments"
case_end

case_begin "4 totals count each refusal by its limit; the log is rate-limited"
log_lines=$(log_since "$FIRST_LOG" "$mark" | grep -c 'connections waiting for their PROXY header')
sup=$(log_since "$FIRST_LOG" "$mark" | grep -c 'suppressed [0-9]* lines in the last second (connections over the pending-handshake limits)')
mmp_stop
line=$(grep -m1 'totals: accepted' "$FIRST_LOG")
per_src=$(sed -n 's/.*refused pending source \([0-9]*\).*/\1/p' <<<"$line")
total=$(sed -n 's/.*refused pending \([0-9]*\),.*/\1/p;s/.*refused pending \([0-9]*\)$/\1/p' <<<"$line" | head -1)
((${per_src:-0} >= 100)) || case_fail "refused pending source ${per_src:-missing}, expected at least 100 (cases 1 and 3): $line"
((${total:-0} >= 9000)) || case_fail "refused pending ${total:-missing}, expected about 9700 (case 2): $line"
((log_lines <= 5 * 30)) || case_fail "$log_lines log lines for about 10000 refusals: not rate-limited"
((sup >= 1)) || case_fail "no 'suppressed' summary"
case_note "refused pending $total, refused pending source $per_src; $log_lines lines, $sup summaries"
case_end

case_lifecycle
t_finish
