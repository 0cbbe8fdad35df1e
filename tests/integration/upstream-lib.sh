# shellcheck shell=bash
# shellcheck disable=SC2034 # variables are set here for the scripts that source this
# tests/integration/upstream-lib.sh: upstreams beyond loopback (issue 25,
# docs/DESIGN.md §14), shared by t57 (bridge), t58 (routed veth) and t59
# (tunnel). Source it after lib.sh. Not a test file itself.
#
#   client ns (the load balancer and the "uplink"): 198.51.100.2, 2001:db8:1::2
#        | veth-c / veth-p
#   proxy ns: 198.51.100.1, 2001:db8:1::1; mmproxy-bpf -l 198.51.100.1:7000;
#             ip_forward on (the backend's own traffic is routed through it);
#             routes to the clients' networks (192.0.2.0/24, 2001:db8:77::/64)
#             via the uplink: a reply to a client that the proxy did not
#             steer would leave there
#        | UB_UP_IF (a bridge, a routed veth, a VXLAN tunnel: the test's topology)
#   backend ns (a container, a pod, a remote host): UB_BACK_IP4, UB_BACK_IP6,
#             mmpt-upstream -m xfer on port 9000, its default route (or its
#             routes to the clients) through the proxy ns
#
# Hand-made PROXY headers name clients 192.0.2.77 and 2001:db8:77::77, which
# no namespace owns. Checked (ub_suite): the upstream saw the client's ip:port,
# sha256 both ways, v1 and v2 headers, both families; the backend's own
# outbound transfer to the client ns runs at the same time and stays intact;
# a capture on the proxy ns's uplink (tcpdump) sees no packet from or to a
# client address (a reply the proxy did not steer would be routed there); every reply
# was steered (mmp_steer_cnt) and mmp_reply_steer is empty once the linger
# ends; with the tc engine, a 64 MiB flow a family was spliced in the kernel
# between the uplink and the upstream's interface (ub_tc_kernel), and the
# UDP fast path moved the IPv4 flows' datagrams both ways, and an IPv6 load
# balancer's (ub_udp_kernel_v6); setup-routing
# is idempotent and cleanup-routing removes its fwmark rules.

UB_CLIENT4=192.0.2.77
UB_CLIENT6=2001:db8:77::77
UB_OWN_PORT=9100 # the backend's own outbound connection goes to the client ns here
UB_STEER_RULE=0x4d4d0000/0xffff0000 # the steer mark 0x4d4d5253 and the UDP fast path's reply drain marks
UB_SIZE=$((4 << 20))

# ub_setup ID: lib.sh's t_setup, then what every topology shares.
ub_setup() {
	t_setup "$1"
	for cmd in bpftool jq tcpdump; do
		command -v "$cmd" >/dev/null || {
			echo "FAIL $1 setup: $cmd is not installed (make deps)"
			exit 1
		}
	done
	UB_BACK_NS="mmpt-$$-back"
	cleanup_push "ip netns del '$UB_BACK_NS'"
	ip netns add "$UB_BACK_NS" && ip -n "$UB_BACK_NS" link set lo up || return 1
	ns_exec "$TOPO_PROXY" sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1 || return 1
	# The clients' networks are behind the uplink, as a host's default route would have them.
	ip -n "$TOPO_PROXY" route add 192.0.2.0/24 via "$TOPO_CLIENT_IP4" || return 1
	ip -n "$TOPO_PROXY" -6 route add 2001:db8:77::/64 via "$TOPO_CLIENT_IP6" || return 1
	# The client ns reaches the backends (their own connections' replies) through the proxy ns.
	ip -n "$TOPO_CLIENT" route add 10.99.0.0/16 via "$TOPO_PROXY_IP4" || return 1
	ip -n "$TOPO_CLIENT" -6 route add 2001:db8:99::/48 via "$TOPO_PROXY_IP6" || return 1
	# The load balancer's datagrams arrive with whole checksums, as from a NIC: a veth passes
	# partial ones, which the UDP fast path leaves to userspace toward an upstream beyond loopback.
	ns_exec "$TOPO_CLIENT" ethtool -K veth-c tx off >/dev/null 2>&1 || return 1
}

# ub_veth_pair NAME_IN_PROXY NAME_IN_BACK: a veth between the proxy and the backend ns, both up.
ub_veth_pair() {
	ip -n "$TOPO_PROXY" link add "$1" type veth peer name "$2" netns "$UB_BACK_NS" || return 1
	ip -n "$UB_BACK_NS" link set "$2" up
}

# ub_capture_start: tcpdump on the proxy ns's uplink (veth-p), for any packet from or to a client address.
ub_capture_start() {
	proc_start UB_CAP_PID "$T_TMP/uplink.txt" "$TOPO_PROXY" tcpdump -nli veth-p "net 192.0.2.0/24 or net 2001:db8:77::/64"
	wait_grep "$T_TMP/uplink.txt" '^listening on' 5
}

# ub_capture_count: stop the capture; how many such packets it saw.
ub_capture_count() {
	sleep 0.2 # what is in flight
	proc_stop "$UB_CAP_PID" 2
	grep -c ' IP6\? ' "$T_TMP/uplink.txt"
}

# ub_steer_counter NAME [PIN_DIR]: a counter of mmp_steer_cnt (per-CPU, summed), of the suite's instance or
# the one pinned in PIN_DIR.
ub_steer_counter() {
	local idx
	case $1 in marked) idx=0 ;; marked_late) idx=1 ;; passed) idx=2 ;; icmp_marked) idx=3 ;; esac
	bpftool -j map lookup pinned "${2:-$MMP_PINDIR}/mmp_steer_cnt" key "$idx" 0 0 0 2>/dev/null |
		jq '[.formatted.values[].value] | add // 0' 2>/dev/null || echo 0
}

# ub_steer_entries: how many tuples mmp_reply_steer holds.
ub_steer_entries() {
	bpftool -j map dump pinned "$MMP_PINDIR/mmp_reply_steer" 2>/dev/null | jq length 2>/dev/null || echo "?"
}

# ub_fwmark_rules: the setup-routing fwmark rules in the proxy ns, both families.
ub_fwmark_rules() {
	{
		ip -n "$TOPO_PROXY" rule list fwmark "$UB_STEER_RULE"
		ip -n "$TOPO_PROXY" -6 rule list fwmark "$UB_STEER_RULE"
	} 2>/dev/null | grep -c lookup
}

# ub_xfer NAME FAMILY(4|6) HDR(--pp1|--pp2): one proxied transfer, both ways, checked.
ub_xfer() {
	local name=$1 fam=$2 hdr=$3 port src dst log mark done_line
	case_begin "$name"
	next_port port
	if [[ $fam == 4 ]]; then
		src="$UB_CLIENT4:$port" dst="$TOPO_PROXY_IP4:443" log=$UB_UP4_LOG
	else
		src="[$UB_CLIENT6]:$port" dst="[$TOPO_PROXY_IP6]:443" log=$UB_UP6_LOG
	fi
	mark=$(log_mark "$log")
	UB_XFER_N=$((${UB_XFER_N:-0} + 1))
	if ! client "$TOPO_CLIENT" -c "$TOPO_PROXY_IP4:$PROXY_PORT" "$hdr" "$src" "$dst" --send "$UB_SIZE" --timeout 20; then
		case_fail "transfer failed: $(client_result)"
	fi
	if done_line=$(wait_log_since "$log" "$mark" '^done ' 5); then
		CLIENT_LOCAL_PORT=$port SIZE=$UB_SIZE check_xfer_exact "$done_line" "$([[ $fam == 4 ]] && echo "$UB_CLIENT4" || echo "$UB_CLIENT6")"
	else
		case_fail "the upstream never finished a transfer (it saw: $(log_since "$log" "$mark" | head -2 | tr '\n' ' '))"
	fi
	case_end
}

# ub_udp NAME FAMILY(4|6) FORMAT(v2|spp): 20 UDP clients, 20 datagrams each, echoed by the backend.
ub_udp() {
	local name=$1 fam=$2 fmt=$3 client log mark out peers
	case_begin "$name"
	if [[ $fam == 4 ]]; then
		client="192.0.2.$((80 + ${UB_UDP_N:-0})):40000" log=$T_TMP/udp4.log
	else
		client="[2001:db8:77::$((80 + ${UB_UDP_N:-0}))]:40000" log=$T_TMP/udp6.log
	fi
	UB_UDP_N=$((${UB_UDP_N:-0} + 1)) UB_UDP_FLOWS=$((${UB_UDP_FLOWS:-0} + 20))
	mark=$(log_mark "$log")
	out=$(ns_exec "$TOPO_CLIENT" "$MMP_TOOLS/mmpt-udp" send -c "$TOPO_PROXY_IP4:$PROXY_PORT" --format "$fmt" \
		--client "$client" --clients 20 -n 20 --rate 2000 --echo --timeout 5 2>&1) ||
		case_fail "sender: $(grep -m1 -e '^result' -e 'mmpt-udp:' <<<"$out")"
	grep -q 'echoed 400 missing 0 reordered 0 bad 0' <<<"$out" || case_fail "sender: $(grep -m1 '^result' <<<"$out")"
	local caddr=${client%:*}
	caddr=${caddr#[}
	caddr=${caddr%]}
	peers=$(log_since "$log" "$mark" | grep -c "^peer $caddr 400[01][0-9]\$")
	((peers == 20)) || case_fail "the backend saw $peers of the 20 clients under their own ip:port"
	case_end
	# Wait for these flows to close (--close-after 1): the next case's sender may get one of these
	# ephemeral ports, and an LB ip:port that still has a v2 flow reads an SPP datagram as payload.
	local n
	sleep 1.1 # mmp_udp_cnt is refreshed once a second: a snapshot from before these flows reads 0 too
	for ((n = 0; n < 50; n++)); do
		[[ $(ub_udp_counter flows_active) == 0 ]] && break
		sleep 0.1
	done
}

# ub_udp_counter NAME: one field of mmp_udp_cnt (refreshed once a second).
ub_udp_counter() {
	bpftool -j map lookup pinned "$MMP_PINDIR/mmp_udp_cnt" key 0 0 0 0 2>/dev/null | jq ".formatted.value.$1 // empty"
}

# ub_check_needs_setup IP4 IP6 PORT IF: `check` before setup-routing fails on the missing fwmark rule (the
# route via IF) and names setup-routing as the fix. Case failures only.
ub_check_needs_setup() {
	local out
	out=$(ns_exec "$TOPO_PROXY" "$MMP_BIN" check -4 "$1:$3" -6 "[$2]:$3" 2>&1) &&
		case_fail "check passed without the fwmark rule"
	grep -q "^FAIL IPv4 upstream $1:$3 via $4: no .ip rule fwmark" <<<"$out" || case_fail "no FAIL line for IPv4 via $4: $(tr '\n' ' ' <<<"$out")"
	grep -q "fix: mmproxy-bpf setup-routing" <<<"$out" || case_fail "no setup-routing fix"
}

# ub_check_passes IP4 IP6 PORT IF: `check` proves a spoofed connection to the real upstream via IF, both families.
ub_check_passes() {
	local out
	out=$(ns_exec "$TOPO_PROXY" "$MMP_BIN" check -4 "$1:$3" -6 "[$2]:$3" 2>&1)
	grep -q "^ok   IPv4 upstream $1:$3 via $4: a spoofed connection" <<<"$out" || case_fail "IPv4: $(grep -A3 IPv4 <<<"$out" | tr '\n' ' ')"
	grep -q "^ok   IPv6 upstream \[$2\]:$3 via $4: a spoofed connection" <<<"$out" || case_fail "IPv6: $(grep -A3 IPv6 <<<"$out" | tr '\n' ' ')"
}

# ub_wait_dad: link-local addresses of new links are tentative for a second or two (DAD): IPv6
# neighbour discovery with them stalls the first SYN past check's timeout.
ub_wait_dad() {
	local n
	for ((n = 0; n < 50; n++)); do
		[[ -z $(ip -n "$TOPO_PROXY" -6 addr show tentative) && -z $(ip -n "$UB_BACK_NS" -6 addr show tentative) ]] && break
		sleep 0.1
	done
}

# ub_suite: every case, over the topology the file built (UB_UP_IF, UB_BACK_IP4, UB_BACK_IP6 set).
# ub_tc_kernel FAMILY(4|6) [local]: under the tc engine, a flow whose load balancer and upstream are of one
# family is spliced in the kernel between the uplink (or, with "local", lo: a load balancer on this host) and
# UB_UP_IF (docs/DESIGN.md §14, "The tc engine across two interfaces"): a 64 MiB transfer each way through an
# instance of its own, sha256-exact, handed off and counted as "tc beyond loopback". Run while the uplink
# capture runs: no translated segment may leave there.
ub_tc_kernel() {
	[[ $MMP_ENGINE == tc ]] || return 0
	case_begin "tc engine, IPv$1: a flow between $([[ ${2:-} == local ]] && echo "a load balancer on lo" || echo "the uplink") and $UB_UP_IF spliced in the kernel, sha256 both ways"
	ub_tc_start "$@" && ub_tc_check
	case_end
}

# ub_tc_start FAMILY(4|6) [local]: ub_tc_kernel's upstream (64 MiB each way) and instance, started; a
# transfer through them is ub_tc_check's, which may come later (t58 moves the pod in between). Inside a
# case: a start that fails is its case_fail, and returns 1.
ub_tc_start() {
	local fam=$1 where=${2:-} n=$((30 + $1)) lb_ip lport uport
	[[ $where == local ]] && n=$((n + 10)) # ports of their own: no instance waits on another's TIME_WAIT
	lport=$((PROXY_PORT + n)) uport=$((UP_PORT + n))
	UBK_FAM=$fam UBK_SIZE=$((64 << 20)) UBK_LB_NS=$TOPO_CLIENT
	UBK_PIN=/sys/fs/bpf/mmproxy-bpf-test-$$-tck$fam$where UBK_UPLOG=$T_TMP/tck$fam$where-up.log UBK_LOG=$T_TMP/tck$fam$where.log
	if [[ $fam == 4 ]]; then
		lb_ip=$TOPO_PROXY_IP4
		[[ $where == local ]] && lb_ip=127.0.0.1
		UBK_LISTEN="$lb_ip:$lport" UBK_BACK="$UB_BACK_IP4:$uport" UBK_CLIENT=$UB_CLIENT4 UBK_DST="$TOPO_PROXY_IP4:443"
	else
		lb_ip=$TOPO_PROXY_IP6
		[[ $where == local ]] && lb_ip=::1
		UBK_LISTEN="[$lb_ip]:$lport" UBK_BACK="[$UB_BACK_IP6]:$uport" UBK_CLIENT=$UB_CLIENT6 UBK_DST="[$TOPO_PROXY_IP6]:443"
	fi
	[[ $where == local ]] && UBK_LB_NS=$TOPO_PROXY
	cleanup_push "rm -rf '$UBK_PIN'"
	proc_start UBK_UP_PID "$UBK_UPLOG" "$UB_BACK_NS" "$MMP_TOOLS/mmpt-upstream" -m xfer --send "$UBK_SIZE" -l "$UBK_BACK"
	proc_start UBK_PID "$UBK_LOG" "$TOPO_PROXY" "$MMP_BIN" run -l "$UBK_LISTEN" -"$fam" "$UBK_BACK" \
		--pin-dir "$UBK_PIN" --engine tc --tc-handoff-delay 0 -v 2
	if ! wait_grep "$UBK_UPLOG" '^listening' 5 || ! wait_port "$TOPO_PROXY" "$lport" 10 "$UBK_PID"; then
		case_fail "the upstream or the instance did not start: $(grep -v libbpf "$UBK_LOG" | tail -n 2 | tr '\n' ' ')"
		proc_stop "$UBK_PID"
		proc_stop "$UBK_UP_PID"
		return 1
	fi
}

# ub_tc_check: one transfer through ub_tc_start's instance, which must be sha256-exact both ways and handed
# off ("tc 1", "tc beyond loopback 1" in the totals at exit); stops the instance and the upstream.
ub_tc_check() {
	local port cli=$UBK_CLIENT line done_line
	next_port port
	[[ $UBK_FAM == 6 ]] && cli="[$cli]"
	client "$UBK_LB_NS" -c "$UBK_LISTEN" --pp2 "$cli:$port" "$UBK_DST" --send "$UBK_SIZE" --timeout 30 ||
		case_fail "transfer failed: $(client_result)"
	if wait_grep "$UBK_UPLOG" '^done ' 5; then
		done_line=$(grep -m1 '^done ' "$UBK_UPLOG")
		CLIENT_LOCAL_PORT=$port SIZE=$UBK_SIZE check_xfer_exact "$done_line" "$UBK_CLIENT"
	else
		case_fail "the upstream never finished the transfer"
	fi
	proc_stop "$UBK_PID" 10
	line=$(grep -m1 'totals: accepted' "$UBK_LOG")
	grep -q ", tc 1, " <<<"$line" && grep -q "tc beyond loopback 1\b" <<<"$line" ||
		case_fail "not handed off to the kernel: $(grep -m1 -e 'stays on splice' -e 'aborted' "$UBK_LOG") $line"
	case_note "$(grep -m1 -o 'spliced in the kernel after [0-9]* us' "$UBK_LOG")"
	proc_stop "$UBK_UP_PID"
}

# ub_udp_kernel_v6: under the tc engine, IPv6 UDP flows whose load balancer is IPv6 too (the suite's SPP case has
# IPv6 clients behind an IPv4 load balancer, which stay on the relay) are moved by the fast path both ways
# between the uplink and UB_UP_IF (docs/DESIGN.md §14): 20 clients x 20 datagrams echoed, each client seen
# under its own ip:port, and the instance's exit totals show >= 100 datagrams each way in the kernel.
ub_udp_kernel_v6() {
	local lport=$((PROXY_PORT + 50)) pin=/sys/fs/bpf/mmproxy-bpf-test-$$-udk log=$T_TMP/udk.log
	local client="[2001:db8:77::99]:40000" mark pid out peers totals fwd rev n
	[[ $MMP_ENGINE == tc ]] || return 0
	case_begin "tc engine, UDP with an IPv6 load balancer: datagrams moved in the kernel both ways, 20 clients seen"
	cleanup_push "rm -rf '$pin'"
	proc_start pid "$log" "$TOPO_PROXY" "$MMP_BIN" run -p udp -l "[$TOPO_PROXY_IP6]:$lport" \
		-6 "[$UB_BACK_IP6]:$UP_PORT" -a "$T_TMP/allow.txt" --pin-dir "$pin" --engine tc --close-after 1 -v 1
	for ((n = 0; n < 100; n++)); do
		[[ -n $(ns_exec "$TOPO_PROXY" ss -Hlun "sport = :$lport" 2>/dev/null) ]] && break
		proc_alive "$pid" || break
		sleep 0.1
	done
	if ((n == 100)) || ! proc_alive "$pid"; then
		case_fail "the instance did not start: $(grep -v libbpf "$log" | tail -n 2 | tr '\n' ' ')"
		proc_stop "$pid"
		case_end
		return
	fi
	mark=$(log_mark "$UB_UDP6_LOG")
	out=$(ns_exec "$TOPO_CLIENT" "$MMP_TOOLS/mmpt-udp" send -c "[$TOPO_PROXY_IP6]:$lport" --format v2 \
		--client "$client" --clients 20 -n 20 --rate 2000 --echo --timeout 5 2>&1) ||
		case_fail "sender: $(grep -m1 -e '^result' -e 'mmpt-udp:' <<<"$out")"
	grep -q 'echoed 400 missing 0 reordered 0 bad 0' <<<"$out" || case_fail "sender: $(grep -m1 '^result' <<<"$out")"
	peers=$(log_since "$UB_UDP6_LOG" "$mark" | grep -c "^peer 2001:db8:77::99 400[01][0-9]\$")
	((peers == 20)) || case_fail "the backend saw $peers of the 20 clients under their own ip:port"
	proc_stop "$pid" 10
	totals=$(grep -m1 -o 'udp totals: .*' "$log")
	fwd=$(grep -o ' fast_fwd_dgrams=[0-9]*' <<<"$totals" | cut -d= -f2)
	rev=$(grep -o ' fast_reply_dgrams=[0-9]*' <<<"$totals" | cut -d= -f2)
	((${fwd:-0} >= 100 && ${rev:-0} >= 100)) ||
		case_fail "fast_fwd_dgrams ${fwd:-?}, fast_reply_dgrams ${rev:-?}: want >= 100 each (${totals:-no udp totals line})"
	case_note "fast_fwd_dgrams $fwd, fast_reply_dgrams $rev"
	case_end
}

ub_suite() {
	local n own_pid own_log own4 own6 marked out fwd rev
	case_begin "check before setup-routing: FAIL naming the fwmark rule and setup-routing"
	ub_check_needs_setup "$UB_BACK_IP4" "$UB_BACK_IP6" "$UP_PORT" "$UB_UP_IF"
	case_end

	case_begin "check -4 to an unreachable address: FAIL, no route, names -4"
	out=$(ns_exec "$TOPO_PROXY" "$MMP_BIN" check -4 10.250.0.1:9000 -6 "[$UB_BACK_IP6]:$UP_PORT" 2>&1)
	grep -q "^FAIL IPv4 upstream 10.250.0.1:9000: no route to it" <<<"$out" || case_fail "$(grep IPv4 <<<"$out" | tr '\n' ' ')"
	grep -q "or correct -4" <<<"$out" || case_fail "the fix does not name -4"
	case_end

	case_begin "setup-routing twice: one fwmark rule a family, in the table of the loopback rules"
	ns_exec "$TOPO_PROXY" "$MMP_BIN" setup-routing >"$T_TMP/setup1.out" 2>&1 || case_fail "setup-routing failed: $(tail -2 "$T_TMP/setup1.out")"
	ns_exec "$TOPO_PROXY" "$MMP_BIN" setup-routing >"$T_TMP/setup2.out" 2>&1 || case_fail "second setup-routing failed"
	cleanup_push "ns_exec '$TOPO_PROXY' '$MMP_BIN' cleanup-routing >/dev/null 2>&1"
	n=$(ub_fwmark_rules)
	((n == 2)) || case_fail "$n fwmark rules, want 2: $(ip -n "$TOPO_PROXY" rule list | tr '\n' ';')"
	grep -q "^ok: ip -4 rule fwmark $UB_STEER_RULE lookup 123" "$T_TMP/setup2.out" || case_fail "the second run did not find its rule: $(grep fwmark "$T_TMP/setup2.out" | tr '\n' ' ')"
	case_end

	proc_start UB_UP4_PID "$T_TMP/up4.log" "$UB_BACK_NS" "$MMP_TOOLS/mmpt-upstream" -m xfer --send "$UB_SIZE" -l "$UB_BACK_IP4:$UP_PORT"
	proc_start UB_UP6_PID "$T_TMP/up6.log" "$UB_BACK_NS" "$MMP_TOOLS/mmpt-upstream" -m xfer --send "$UB_SIZE" -l "[$UB_BACK_IP6]:$UP_PORT"
	UB_UP4_LOG=$T_TMP/up4.log UB_UP6_LOG=$T_TMP/up6.log UB_UDP6_LOG=$T_TMP/udp6.log
	proc_start own4 "$T_TMP/own4.log" "$TOPO_CLIENT" "$MMP_TOOLS/mmpt-upstream" -m xfer --send "$UB_SIZE" -l "$TOPO_CLIENT_IP4:$UB_OWN_PORT"
	proc_start own6 "$T_TMP/own6.log" "$TOPO_CLIENT" "$MMP_TOOLS/mmpt-upstream" -m xfer --send "$UB_SIZE" -l "[$TOPO_CLIENT_IP6]:$UB_OWN_PORT"
	t_require wait_grep "$UB_UP4_LOG" '^listening' 5
	t_require wait_grep "$UB_UP6_LOG" '^listening' 5
	t_require wait_grep "$T_TMP/own4.log" '^listening' 5
	t_require wait_grep "$T_TMP/own6.log" '^listening' 5
	proc_start UB_UDP4_PID "$T_TMP/udp4.log" "$UB_BACK_NS" "$MMP_TOOLS/mmpt-udp" echo -l "$UB_BACK_IP4:$UP_PORT"
	proc_start UB_UDP6_PID "$T_TMP/udp6.log" "$UB_BACK_NS" "$MMP_TOOLS/mmpt-udp" echo -l "[$UB_BACK_IP6]:$UP_PORT"
	t_require wait_grep "$T_TMP/udp4.log" '^listening' 5
	t_require wait_grep "$T_TMP/udp6.log" '^listening' 5

	ub_wait_dad
	case_begin "check: a spoofed connection to the real upstream completes, both families"
	ub_check_passes "$UB_BACK_IP4" "$UB_BACK_IP6" "$UP_PORT" "$UB_UP_IF"
	tc -n "$TOPO_PROXY" filter show dev "$UB_UP_IF" ingress 2>/dev/null | grep -q mmp_steer_in && case_fail "check left its filter on $UB_UP_IF"
	case_end
	printf '%s\n' "$TOPO_CLIENT_IP4/32" "$TOPO_CLIENT_IP6/128" >"$T_TMP/allow.txt"
	# TCP and UDP from one instance; UDP flows close 1 s after their last datagram, so the map empties.
	t_require mmp_start -l "$TOPO_PROXY_IP4:$PROXY_PORT" -4 "$UB_BACK_IP4:$UP_PORT" -6 "[$UB_BACK_IP6]:$UP_PORT" \
		-a "$T_TMP/allow.txt" --protocol tcp,udp --close-after 1

	t_require ub_capture_start
	# The backend's own outbound transfers run while the proxied ones do.
	own_log=$T_TMP/own-client.log
	(
		ns_exec "$UB_BACK_NS" "$MMP_TOOLS/mmpt-client" -c "$TOPO_CLIENT_IP4:$UB_OWN_PORT" --send "$UB_SIZE" --timeout 20
		ns_exec "$UB_BACK_NS" "$MMP_TOOLS/mmpt-client" -c "[$TOPO_CLIENT_IP6]:$UB_OWN_PORT" --send "$UB_SIZE" --timeout 20
	) >"$own_log" 2>&1 &
	own_pid=$!
	ub_xfer "IPv4 client, v2 header: the upstream sees the client, sha256 both ways" 4 --pp2
	ub_xfer "IPv4 client, v1 header" 4 --pp1
	ub_xfer "IPv6 client, v2 header" 6 --pp2
	ub_xfer "IPv6 client, v1 header" 6 --pp1

	ub_udp "UDP, IPv4 clients, v2 header on every datagram: 20 clients seen and answered" 4 v2
	ub_udp "UDP, IPv6 clients, SPP: 20 clients seen and answered" 6 spp
	ub_tc_kernel 4
	ub_tc_kernel 6
	ub_tc_kernel 4 local
	ub_tc_kernel 6 local
	ub_udp_kernel_v6

	case_begin "the backend's own outbound connections still work (not swallowed)"
	wait "$own_pid"
	n=$(grep -c "^xfer sent $UB_SIZE .* recv $UB_SIZE " "$own_log")
	((n == 2)) || case_fail "$n of 2 own transfers completed: $(tr '\n' ' ' <"$own_log")"
	for l in "$T_TMP/own4.log" "$T_TMP/own6.log"; do
		grep -q "^done $UB_BACK_IP4 \|^done $UB_BACK_IP6 " "$l" || case_fail "the client ns did not see the backend's own address in $(basename "$l"): $(grep -m1 '^peer' "$l")"
	done
	case_end

	case_begin "a capture on the uplink saw no packet from or to a client address"
	n=$(ub_capture_count)
	((n == 0)) || case_fail "$n such packets, e.g. $(grep -m2 ' IP6\? ' "$T_TMP/uplink.txt" | tr '\n' ' ')"
	case_end

	# After the capture: a backend without its return route keeps resending SYN-ACKs out of the uplink.
	if declare -F ub_extra_checks >/dev/null; then ub_extra_checks; fi

	case_begin "every reply was steered, and the map is empty after the linger"
	marked=$(ub_steer_counter marked)
	((marked > 0)) || case_fail "steer_marked is $marked"
	for ((n = 0; n < 100; n++)); do
		[[ $(ub_steer_entries) == 0 ]] && break
		sleep 0.1
	done
	[[ $(ub_steer_entries) == 0 ]] || case_fail "mmp_reply_steer still holds $(ub_steer_entries) tuples 10 s after the last close"
	case_note "steer_marked $marked, steer_marked_late $(ub_steer_counter marked_late), steer_passed $(ub_steer_counter passed)"
	case_end

	local flows=$UB_UDP_FLOWS
	if [[ $MMP_ENGINE == tc ]]; then
		case_begin "UDP: $flows flows steered, their datagrams moved by the fast path both ways"
	else
		case_begin "UDP: $flows flows steered, relayed in userspace (no fast path but under tc)"
	fi
	sleep 1.2 # mmp_udp_cnt is refreshed once a second
	n=$(ub_udp_counter flows_steered)
	[[ $n == "$flows" ]] || case_fail "flows_steered is ${n:-unreadable}, want $flows"
	fwd=$(ub_udp_counter fast_fwd_dgrams)
	rev=$(ub_udp_counter fast_reply_dgrams)
	if [[ $MMP_ENGINE == tc ]]; then
		# The IPv4 case's 400 datagrams each way (the SPP case's IPv6 clients behind an IPv4 load balancer
		# stay in userspace: no family translation in the kernel); the first of each flow, and what
		# comes before its hand-over, go through userspace.
		((${fwd:-0} >= 100 && ${rev:-0} >= 100)) ||
			case_fail "fast_fwd_dgrams ${fwd:-unreadable}, fast_reply_dgrams ${rev:-unreadable}: want >= 100 each (fast_passed $(ub_udp_counter fast_passed))"
	else
		[[ $fwd == 0 && $rev == 0 ]] || case_fail "fast path counts $fwd/$rev without the tc engine"
	fi
	case_note "fast_fwd_dgrams $fwd, fast_reply_dgrams $rev, fast_passed $(ub_udp_counter fast_passed), fast_errors $(ub_udp_counter fast_errors)"
	case_end

	mmp_stop
	case_begin "totals: $UB_XFER_N connections steered"
	line=$(grep -m1 'totals: accepted' "$MMP_LOG")
	grep -q ", steered $UB_XFER_N," <<<"$line" || case_fail "want steered $UB_XFER_N: $line"
	case_end
	case_engine_used "$UB_XFER_N"

	case_begin "a killed instance: cleanup removes its steering filter and pins"
	t_require mmp_start -l "$TOPO_PROXY_IP4:$PROXY_PORT" -4 "$UB_BACK_IP4:$UP_PORT" -6 "[$UB_BACK_IP6]:$UP_PORT"
	MMP_RUNNING=0
	kill -KILL "$MMP_PID"
	wait "$MMP_PID" 2>/dev/null
	tc -n "$TOPO_PROXY" filter show dev "$UB_UP_IF" ingress 2>/dev/null | grep -q mmp_steer_in ||
		case_fail "no steering filter on $UB_UP_IF while the instance ran"
	out=$(ns_exec "$TOPO_PROXY" "$MMP_BIN" cleanup --pin-dir "$MMP_PINDIR" 2>&1) || case_fail "cleanup failed: $out"
	tc -n "$TOPO_PROXY" filter show dev "$UB_UP_IF" ingress 2>/dev/null | grep -q mmp_steer_in &&
		case_fail "cleanup left the steering filter on $UB_UP_IF: $(tr '\n' ' ' <<<"$out")"
	[[ -z $(find "$MMP_PINDIR" -mindepth 1 2>/dev/null) ]] || case_fail "pins left: $(ls "$MMP_PINDIR")"
	case_end

	case_begin "cleanup-routing removes the fwmark rules; the steering filter is gone"
	ns_exec "$TOPO_PROXY" "$MMP_BIN" cleanup-routing >/dev/null 2>&1 || case_fail "cleanup-routing failed"
	n=$(ub_fwmark_rules)
	((n == 0)) || case_fail "$n fwmark rules left"
	tc -n "$TOPO_PROXY" filter show dev "$UB_UP_IF" ingress 2>/dev/null | grep -q mmp_steer_in &&
		case_fail "the steering filter is still on $UB_UP_IF"
	case_end
	proc_stop "$UB_UP4_PID" 2
	proc_stop "$UB_UP6_PID" 2
	proc_stop "$UB_UDP4_PID" 2
	proc_stop "$UB_UDP6_PID" 2
	case_lifecycle
}
