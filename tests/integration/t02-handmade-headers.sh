#!/usr/bin/env bash
# t02: hand-made PROXY headers written by mmpt-client from the proxy namespace
# (it plays the load balancer), for what HAProxy/nginx cannot easily send
# (case 4): IPv6 clients, IPv4-mapped IPv6 clients, a v1 TCP4 header over an
# IPv6 load-balancer connection, and v2 LOCAL.
# The claimed clients use TEST-NET addresses (203.0.113.0/24, 2001:db8:2::/64)
# which exist nowhere: the transparent routing delivers the upstream's
# replies to them back to the proxy (docs/DESIGN.md §3a item 8).
source "$(dirname "$0")/lib.sh"
t_setup t02
p="" # client ports, set by next_port

t_require up_start
t_require mmp_start -l "127.0.0.1:$PROXY_PORT"

# hdr_case NAME LB_ADDR EXPECT_FAMILY(4|6) EXPECT_ADDR EXPECT_PORT CLIENT_ARGS...
# Send the header (CLIENT_ARGS) + a request to mmproxy at LB_ADDR; the echo
# must come back and the upstream of EXPECT_FAMILY must see EXPECT_ADDR:PORT
# ("*" as EXPECT_PORT: any port).
hdr_case() {
	local name=$1 lb=$2 fam=$3 addr=$4 port=$5 log mark a pt
	shift 5
	case_begin "$name"
	up_marks
	if [[ $fam == 6 ]]; then log=$UP6_LOG mark=$UP6_MARK; else log=$UP4_LOG mark=$UP4_MARK; fi
	if ! client "$TOPO_PROXY" -c "$lb" "$@" --msg 'hand-made header\n' --timeout 10; then
		case_fail "request failed: $(client_result)"
	elif [[ $port == '*' ]]; then
		if wait_log_since "$log" "$mark" "^peer $addr [0-9]+\$" 3 >/dev/null; then
			read -r _ a pt <<<"$(log_since "$log" "$mark" | grep -m1 '^peer')"
			case_note "IPv$fam upstream saw $(hostport "$a" "$pt")"
		else
			case_fail "IPv$fam upstream did not see $addr (saw: $(log_since "$log" "$mark" | grep '^peer' | tr '\n' ','))"
		fi
	elif expect_peer "$log" "$mark" "$addr" "$port"; then
		case_note "IPv$fam upstream saw $(hostport "$addr" "$port")"
	fi
	case_end
}

next_port p
hdr_case "4a v1 TCP6 2001:db8:2::5 -> upstream on ::1" "127.0.0.1:$PROXY_PORT" 6 2001:db8:2::5 "$p" \
	--pp1 "[2001:db8:2::5]:$p" "[2001:db8:1::1]:443"
next_port p
hdr_case "4b v2 AF_INET6 2001:db8:2::5 -> upstream on ::1" "127.0.0.1:$PROXY_PORT" 6 2001:db8:2::5 "$p" \
	--pp2 "[2001:db8:2::5]:$p" "[2001:db8:1::1]:443"
# An IPv4-mapped IPv6 client is an IPv4 client: it must go to the -4
# upstream, from the plain IPv4 address.
next_port p
hdr_case "4c v2 AF_INET6 ::ffff:203.0.113.9 -> IPv4 upstream as 203.0.113.9" "127.0.0.1:$PROXY_PORT" \
	4 203.0.113.9 "$p" --pp2 "[::ffff:203.0.113.9]:$p" "[::ffff:203.0.113.1]:443"
next_port p
hdr_case "4c' v1 TCP6 ::ffff:203.0.113.9 -> IPv4 upstream as 203.0.113.9" "127.0.0.1:$PROXY_PORT" \
	4 203.0.113.9 "$p" --pp1 "[::ffff:203.0.113.9]:$p" "[::ffff:203.0.113.1]:443"
# LOCAL (health checks): no addresses, so the proxy connects as itself.
hdr_case "4e v2 LOCAL -> unspoofed, upstream sees 127.0.0.1" "127.0.0.1:$PROXY_PORT" 4 127.0.0.1 '*' \
	--pp2-local

# Regression (docs/DESIGN.md §3a item 8): a client ip:port reused while the proxy's
# previous upstream socket from it is in TIME_WAIT. bind() fails with
# EADDRINUSE without SO_REUSEADDR, and a prototype then fell back silently to
# connecting from its own address. The upstream must see the client again
# (the 1.2 s pause lets the kernel's tw_reuse delay, 1 s, pass).
case_begin "4f reused client ip:port (TIME_WAIT) is still spoofed"
next_port p
up_marks
client "$TOPO_PROXY" -c "127.0.0.1:$PROXY_PORT" --pp2 "203.0.113.20:$p" "203.0.113.1:443" --msg 'first\n' --timeout 5 ||
	case_fail "first connection failed: $(client_result)"
sleep 1.2
# Say whether the situation under test really arose (who closes first decides
# which side holds the TIME_WAIT).
tw=$(ns_exec "$TOPO_PROXY" ss -Htan state time-wait "( sport = :$p or dport = :$p )" | awk '{print $3 "->" $4}' | tr '\n' ' ')
case_note "TIME_WAIT before the reuse: ${tw:-none}"
client "$TOPO_PROXY" -c "127.0.0.1:$PROXY_PORT" --pp2 "203.0.113.20:$p" "203.0.113.1:443" --msg 'second\n' --timeout 5 ||
	case_fail "second connection failed: $(client_result)"
n=$(log_since "$UP4_LOG" "$UP4_MARK" | grep -c "^peer 203.0.113.20 $p\$")
others=$(log_since "$UP4_LOG" "$UP4_MARK" | grep '^peer' | grep -v "^peer 203.0.113.20 $p\$" | tr '\n' ',')
[[ -n $others ]] && case_fail "upstream saw another address: $others"
[[ $n == 2 ]] || case_fail "upstream saw 203.0.113.20:$p $n times, expected 2"
case_end

mmp_stop

# -m MARK: the upstream sockets carry SO_MARK (what a fwmark routing rule
# needs). ss -e shows it as fwmark:0x7b while a connection is open.
case_begin "4g -m 123: the upstream connection carries SO_MARK 123"
# The tc engine hands marked flows to the kernel too (t61), closing the
# upstream socket: keep this one on splice long enough to read it.
saved_delay=${MMP_TC_HANDOFF_DELAY:-}
MMP_TC_HANDOFF_DELAY=60000
t_require mmp_start -m 123
MMP_TC_HANDOFF_DELAY=$saved_delay
next_port p
# Hold one connection open: the client waits (up to 3 s) for a close that
# never comes, and is stopped once ss has been read.
ns_exec "$TOPO_PROXY" "$MMP_TOOLS/mmpt-client" -c "127.0.0.1:$PROXY_PORT" --pp2 "203.0.113.21:$p" \
	203.0.113.1:443 --msg 'hold\n' --expect-close --timeout 3 >/dev/null 2>&1 &
hold_pid=$!
sock=""
for _ in $(seq 30); do
	sock=$(ns_exec "$TOPO_PROXY" ss -Htne state established "( src 203.0.113.21 and sport = :$p )")
	[[ -n $sock ]] && break
	sleep 0.1
done
if [[ -z $sock ]]; then
	case_fail "no upstream connection from 203.0.113.21:$p"
elif grep -q 'fwmark:0x7b' <<<"$sock"; then
	case_note "ss: fwmark:0x7b"
else
	case_fail "the upstream socket has no fwmark 0x7b: $sock"
fi
kill "$hold_pid" 2>/dev/null # nsenter exec'ed the client: this is its PID
wait "$hold_pid" 2>/dev/null
case_end
mmp_stop

# Mixed families: the load balancer reaches mmproxy over IPv6 but the header
# names an IPv4 client. The upstream is chosen by the header's family.
t_require mmp_start -l "[::1]:$PROXY_PORT"
next_port p
hdr_case "4d v1 TCP4 header over an IPv6 LB connection -> IPv4 upstream" "[::1]:$PROXY_PORT" \
	4 203.0.113.10 "$p" --pp1 "203.0.113.10:$p" "203.0.113.1:443"
next_port p
hdr_case "4d' v2 AF_INET header over an IPv6 LB connection -> IPv4 upstream" "[::1]:$PROXY_PORT" \
	4 203.0.113.10 "$p" --pp2 "203.0.113.10:$p" "203.0.113.1:443"
mmp_stop

case_lifecycle
t_finish
