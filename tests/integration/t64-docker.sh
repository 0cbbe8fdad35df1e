#!/usr/bin/env bash
# t64: a real Docker container on the default bridge as the upstream (issue 25,
# docs/DESIGN.md §14): nginx in the container logs the client's own ip:port.
#
# The test starts its own dockerd (Debian's docker.io, /usr/sbin/dockerd; never
# /usr/local/bin/docker) inside the proxy ns, so docker0, the container's veth
# and its routes exist only there; data-root, exec-root, pidfile, socket and
# trust key are in the test's temp dir, --iptables=false --ip6tables=false add
# no firewall rule, and the containers' cgroups go under /mmpt-PID. No registry
# is reachable: the image is a rootfs made of this machine's nginx (and its ldd
# libraries), mmpt-client for the container's own outbound connection, and
# passwd/group/nginx.conf, imported with `docker import`.
#
#   client ns: HAProxy (send-proxy and send-proxy-v2 frontends) and the users,
#              192.0.2.10-13 and 2001:db8:77::10-13 on its lo
#   proxy ns:  mmproxy-bpf -l 198.51.100.1:7000 -4 CONTAINER:80 -6 [CONTAINER]:80,
#              after setup-routing; dockerd, docker0 10.99.0.1/24, 2001:db8:99::1/64
#   container: nginx on :80, access log "peer $remote_addr:$remote_port" to stdout
#
# Checked: check -4/-6 FAILs before setup-routing and passes after; 8 HTTP
# requests (4 IPv4 and 4 IPv6 users, v1 and v2 headers) each show up in
# `docker logs` under the user's own ip:port; the container's own outbound
# transfers (docker exec mmpt-client to the client ns, both families) run at the
# same time, byte-exact, seen under the container's address; a capture on the
# uplink sees no packet of a client address; the replies were steered and the
# connections went through the sockmap engine. Runs under MMP_ENGINE=sockmap only,
# so dockerd starts once per `make test` (t57 covers the bridge under every engine,
# and the tc engine's flows spliced in the kernel across it, §14). When dockerd or the container cannot run
# here, one SKIP line says why. Takes about 6 s.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/upstream-lib.sh"
if ! is_bpf; then
	echo "SKIP t64 real Docker: mmproxy-bpf only (go-mmproxy needs an upstream on loopback)"
	exit 0
fi
if [[ $MMP_ENGINE != sockmap ]]; then
	echo "SKIP t64 real Docker: runs under MMP_ENGINE=sockmap only (t57 covers the bridge for every engine)"
	exit 0
fi
DOCKER=/usr/bin/docker DOCKERD=/usr/sbin/dockerd
for f in "$DOCKER" "$DOCKERD" /usr/bin/containerd /usr/sbin/runc; do
	if [[ ! -x $f ]]; then
		echo "SKIP t64 real Docker: $f is missing (make deps installs docker.io)"
		exit 0
	fi
done
t_require ub_setup t64 # its backend ns stays unused: the container is the backend

DK_DIR=$T_TMP/docker
DK_SOCK=unix://$DK_DIR/docker.sock
DK_CGROUP=mmpt-$$
DK_IMAGE=mmpt-nginx-$$
DK_NAME=mmpt-web-$$
dk() { "$DOCKER" -H "$DK_SOCK" "$@"; }

# dk_host_cleanup: what dockerd and containerd leave outside their directories: /run/docker/plugins and
# /run/containerd/s (fixed paths; removed only when this test created them and they are empty), the
# containers' parent cgroups, mounts under DK_DIR.
dk_host_cleanup() {
	local d
	[[ -n ${DK_MADE_RUN_DOCKER:-} ]] && rmdir /run/docker/plugins /run/docker 2>/dev/null
	[[ -n ${DK_MADE_RUN_CONTAINERD:-} ]] && rmdir /run/containerd/s /run/containerd 2>/dev/null
	for d in /sys/fs/cgroup/*/"$DK_CGROUP" /sys/fs/cgroup/unified/"$DK_CGROUP"; do
		[[ -d $d ]] && rmdir "$d" 2>/dev/null
	done
	findmnt -rn -o TARGET | grep -F "$DK_DIR" | sort -r | while read -r d; do umount -l "$d"; done
	rm -rf "$DK_DIR"
}

# dk_start [EXTRA DOCKERD ARGS]: dockerd in the proxy ns; waits for its API. 1 when it died or never answered.
dk_start() {
	mkdir -p "$DK_DIR"
	# The trust key goes here, not to /etc/docker/key.json (dockerd 20.10 has no flag for it).
	printf '{ "deprecated-key-path": "%s" }\n' "$DK_DIR/key.json" >"$DK_DIR/daemon.json"
	proc_start DK_PID "$DK_DIR/dockerd.log" "$TOPO_PROXY" "$DOCKERD" --config-file "$DK_DIR/daemon.json" \
		--data-root "$DK_DIR/data" --exec-root "$DK_DIR/exec" --pidfile "$DK_DIR/dockerd.pid" -H "$DK_SOCK" \
		--iptables=false --ip6tables=false --cgroup-parent "/$DK_CGROUP" \
		--bip 10.99.0.1/24 --ipv6 --fixed-cidr-v6 2001:db8:99::/64 "$@"
	local i
	for ((i = 0; i < 150; i++)); do
		dk version >/dev/null 2>&1 && return 0
		proc_alive "$DK_PID" || return 1
		sleep 0.1
	done
	return 1
}

# dk_why: dockerd's last error, one line (its last line when it logged none, e.g. a flag it refused).
dk_why() {
	local line
	line=$(grep -E 'level=(fatal|error)' "$DK_DIR/dockerd.log" | tail -1)
	[[ -n $line ]] || line=$(grep -v '^[[:space:]]*$' "$DK_DIR/dockerd.log" | tail -2 | tr '\n' ' ')
	sed 's/.*msg="\([^"]*\)".*/\1/' <<<"${line:-dockerd exited without a word}" | cut -c1-200
}

# dk_rootfs DIR: nginx, mmpt-client and the libraries they link, the users nginx needs, its config.
dk_rootfs() {
	local r=$1 f l
	mkdir -p "$r"/{etc/nginx,usr/sbin,bin,tmp,run,var/lib/nginx,var/log/nginx} || return 1
	cp /usr/sbin/nginx "$r/usr/sbin/" && cp "$MMP_TOOLS/mmpt-client" "$r/bin/" || return 1
	for f in /usr/sbin/nginx "$MMP_TOOLS/mmpt-client"; do
		for l in $(ldd "$f" | grep -o '/[^ ]*'); do
			mkdir -p "$r${l%/*}" && cp -L "$l" "$r$l" || return 1
		done
	done
	printf '%s\n' 'root:x:0:0:root:/root:/bin/false' 'nobody:x:65534:65534:nobody:/nonexistent:/bin/false' >"$r/etc/passwd"
	printf '%s\n' 'root:x:0:' 'nogroup:x:65534:' >"$r/etc/group"
	cat >"$r/etc/nginx/nginx.conf" <<-'EOF'
		user nobody nogroup;
		worker_processes 1;
		daemon off;
		error_log stderr;
		pid /run/nginx.pid;
		events { worker_connections 64; }
		http {
		    log_format peer 'peer $remote_addr:$remote_port';
		    access_log /dev/stdout peer;
		    server {
		        listen 80;
		        listen [::]:80;
		        location / { return 200 "$remote_addr:$remote_port\n"; }
		    }
		}
	EOF
}

# dk_container: image, container, its addresses (DK_IP4, DK_IP6). On failure DK_WHY says which step failed.
dk_container() {
	dk_rootfs "$DK_DIR/rootfs" || {
		DK_WHY="building the rootfs failed"
		return 1
	}
	tar -C "$DK_DIR/rootfs" -c . | dk import -c 'CMD ["/usr/sbin/nginx", "-c", "/etc/nginx/nginx.conf"]' - "$DK_IMAGE" >/dev/null 2>"$DK_DIR/import.err" || {
		DK_WHY="docker import: $(tail -1 "$DK_DIR/import.err")"
		return 1
	}
	cleanup_push "'$DOCKER' -H '$DK_SOCK' rmi -f '$DK_IMAGE'"
	cleanup_push "'$DOCKER' -H '$DK_SOCK' rm -f '$DK_NAME'"
	dk run -d --name "$DK_NAME" "$DK_IMAGE" >/dev/null 2>"$DK_DIR/run.err" || {
		DK_WHY="docker run: $(tail -1 "$DK_DIR/run.err")"
		return 1
	}
	read -r DK_IP4 DK_IP6 <<<"$(dk inspect -f '{{.NetworkSettings.IPAddress}} {{.NetworkSettings.GlobalIPv6Address}}' "$DK_NAME")"
	[[ -n $DK_IP4 && -n $DK_IP6 ]] || {
		DK_WHY="the container has no address on docker0 (v4 '${DK_IP4:-}', v6 '${DK_IP6:-}')"
		return 1
	}
	# The new veth's IPv6 addresses are tentative for a second or two (DAD): neighbour discovery with them
	# stalls the first SYN past check's timeout. docker0 is in the proxy ns, the container's end in its own.
	local i pid
	pid=$(dk inspect -f '{{.State.Pid}}' "$DK_NAME")
	for ((i = 0; i < 50; i++)); do
		[[ -z $(ip -n "$TOPO_PROXY" -6 addr show tentative) &&
			-z $(nsenter --net="/proc/$pid/ns/net" ip -6 addr show tentative 2>/dev/null) ]] && break
		sleep 0.1
	done
	for ((i = 0; i < 50; i++)); do # nginx listens in the container's own ns: wait for it with a request
		ns_exec "$TOPO_PROXY" "$MMP_TOOLS/mmpt-client" -c "$DK_IP4:80" --raw 'GET / HTTP/1.0\r\n\r\n' \
			--expect-close --timeout 1 >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	DK_WHY="nginx in the container does not answer on $DK_IP4:80: $(dk logs "$DK_NAME" 2>&1 | tail -1)"
	return 1
}

# The cleanups run newest first: the container and image go, then dockerd (proc_start's kill), then this.
[[ -d /run/docker ]] || DK_MADE_RUN_DOCKER=1
[[ -d /run/containerd ]] || DK_MADE_RUN_CONTAINERD=1
cleanup_push dk_host_cleanup
if ! dk_start; then
	why=$(dk_why)
	proc_stop "$DK_PID" 5
	if [[ ${why,,} == *overlay* || ${why,,} == *storage* || ${why,,} == *driver* ]]; then
		dk_host_cleanup
		dk_start --storage-driver vfs || {
			echo "SKIP t64 real Docker: dockerd does not start here, even with --storage-driver vfs: $(dk_why)"
			exit 0
		}
	else
		echo "SKIP t64 real Docker: dockerd does not start here: $why"
		exit 0
	fi
fi
if ! dk_container; then
	echo "SKIP t64 real Docker: dockerd runs but the container does not: $DK_WHY"
	exit 0
fi

case_begin "check before setup-routing: FAIL naming setup-routing"
ub_check_needs_setup "$DK_IP4" "$DK_IP6" 80 docker0
case_end

case_begin "setup-routing, then check: a spoofed connection to nginx in the container completes, both families"
ns_exec "$TOPO_PROXY" "$MMP_BIN" setup-routing >"$T_TMP/setup.out" 2>&1 || case_fail "setup-routing failed: $(tail -2 "$T_TMP/setup.out")"
cleanup_push "ns_exec '$TOPO_PROXY' '$MMP_BIN' cleanup-routing >/dev/null 2>&1"
ub_check_passes "$DK_IP4" "$DK_IP6" 80 docker0
case_end

# The users: addresses of the clients' networks on the client ns's lo; HAProxy there, as the load balancer.
users_and_haproxy() {
	local n
	for n in 10 11 12 13; do
		ip -n "$TOPO_CLIENT" addr add "192.0.2.$n/32" dev lo || return 1
		ip -n "$TOPO_CLIENT" addr add "2001:db8:77::$n/128" dev lo nodad || return 1
	done
	hap_start "$TOPO_CLIENT" "$TOPO_CLIENT_IP4" "$TOPO_CLIENT_IP6" "$TOPO_PROXY_IP4"
}
t_require users_and_haproxy
printf '%s\n' "$TOPO_CLIENT_IP4/32" >"$T_TMP/allow.txt"
t_require mmp_start -l "$TOPO_PROXY_IP4:$PROXY_PORT" -4 "$DK_IP4:80" -6 "[$DK_IP6]:80" -a "$T_TMP/allow.txt"

OWN_SIZE=$((4 << 20))
proc_start OWN4_PID "$T_TMP/own4.log" "$TOPO_CLIENT" "$MMP_TOOLS/mmpt-upstream" -m xfer --send "$OWN_SIZE" -l "$TOPO_CLIENT_IP4:$UB_OWN_PORT"
proc_start OWN6_PID "$T_TMP/own6.log" "$TOPO_CLIENT" "$MMP_TOOLS/mmpt-upstream" -m xfer --send "$OWN_SIZE" -l "[$TOPO_CLIENT_IP6]:$UB_OWN_PORT"
t_require wait_grep "$T_TMP/own4.log" '^listening' 5
t_require wait_grep "$T_TMP/own6.log" '^listening' 5
t_require ub_capture_start
# The container's own outbound transfers (docker exec) run while the users' requests do.
(
	dk exec "$DK_NAME" /bin/mmpt-client -c "$TOPO_CLIENT_IP4:$UB_OWN_PORT" --send "$OWN_SIZE" --timeout 20
	dk exec "$DK_NAME" /bin/mmpt-client -c "[$TOPO_CLIENT_IP6]:$UB_OWN_PORT" --send "$OWN_SIZE" --timeout 20
) >"$T_TMP/own-client.log" 2>&1 &
own_pid=$!

case_begin "8 HTTP requests through HAProxy: nginx in the container logs each user's own ip:port"
want=()
for req in 10:4:1 11:4:2 12:4:1 13:4:2 10:6:1 11:6:2 12:6:1 13:6:2; do
	IFS=: read -r n fam ver <<<"$req"
	port=$([[ $ver == 1 ]] && echo $HAP_V1_PORT || echo $HAP_V2_PORT)
	if [[ $fam == 4 ]]; then
		user=192.0.2.$n lb=$TOPO_CLIENT_IP4:$port
	else
		user=2001:db8:77::$n lb=[$TOPO_CLIENT_IP6]:$port
	fi
	if ! client "$TOPO_CLIENT" -b "$user" -c "$lb" \
		--raw 'GET / HTTP/1.0\r\nHost: web\r\n\r\n' --expect-close --timeout 10; then
		case_fail "request from $user (v$ver header) failed: $(client_result)"
		continue
	fi
	want+=("peer $CLIENT_LOCAL_ADDR:$CLIENT_LOCAL_PORT")
done
for w in "${want[@]}"; do
	for ((i = 0; i < 20; i++)); do
		dk logs "$DK_NAME" 2>/dev/null | grep -qxF "$w" && break
		sleep 0.1
	done
	dk logs "$DK_NAME" 2>/dev/null | grep -qxF "$w" || case_fail "nginx did not log '$w'"
done
seen=$(dk logs "$DK_NAME" 2>/dev/null | grep -c '^peer 192\.0\.2\.\|^peer 2001:db8:77::')
((seen == 8)) || case_fail "nginx logged $seen requests from the users, want 8: $(dk logs "$DK_NAME" 2>/dev/null | grep '^peer' | tr '\n' ' ')"
case_note "e.g. '${want[0]:-none}', '${want[4]:-none}'"
case_end

case_begin "the container's own outbound connections still work (not swallowed)"
wait "$own_pid"
n=$(grep -c "^xfer sent $OWN_SIZE .* recv $OWN_SIZE " "$T_TMP/own-client.log")
((n == 2)) || case_fail "$n of 2 own transfers completed: $(tr '\n' ' ' <"$T_TMP/own-client.log")"
grep -q "^done $DK_IP4 " "$T_TMP/own4.log" || case_fail "the client ns did not see the container's address: $(grep -m1 '^peer' "$T_TMP/own4.log")"
grep -q "^done $DK_IP6 " "$T_TMP/own6.log" || case_fail "the client ns did not see the container's IPv6 address: $(grep -m1 '^peer' "$T_TMP/own6.log")"
case_end

case_begin "a capture on the uplink saw no packet from or to a client address"
n=$(ub_capture_count)
((n == 0)) || case_fail "$n such packets, e.g. $(grep -m2 ' IP6\? ' "$T_TMP/uplink.txt" | tr '\n' ' ')"
case_end

case_begin "the replies were steered at docker0"
marked=$(ub_steer_counter marked)
((marked > 0)) || case_fail "steer_marked is $marked"
tc -n "$TOPO_PROXY" filter show dev docker0 ingress 2>/dev/null | grep -q mmp_steer_in || case_fail "no steering filter on docker0"
case_note "steer_marked $marked"
case_end

mmp_stop
case_begin "totals: 8 connections steered"
line=$(grep -m1 'totals: accepted' "$MMP_LOG")
grep -q ', steered 8,' <<<"$line" || case_fail "want steered 8: $line"
case_end
case_engine_used 8

case_begin "cleanup-routing removes the fwmark rules; no filter left on docker0"
ns_exec "$TOPO_PROXY" "$MMP_BIN" cleanup-routing >/dev/null 2>&1 || case_fail "cleanup-routing failed"
n=$(ub_fwmark_rules)
((n == 0)) || case_fail "$n fwmark rules left"
tc -n "$TOPO_PROXY" filter show dev docker0 ingress 2>/dev/null | grep -q mmp_steer_in && case_fail "the steering filter is still on docker0"
case_end
proc_stop "$HAP_PID" 2
proc_stop "$OWN4_PID" 2
proc_stop "$OWN6_PID" 2
case_lifecycle
t_finish
