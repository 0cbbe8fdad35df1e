#!/usr/bin/env bash
# tests/fuzz/capture-seeds.sh OUTDIR: capture the PROXY headers that the
# installed HAProxy (send-proxy, send-proxy-v2, v2 with CRC32C and UNIQUE_ID,
# its v2 LOCAL health check) and nginx (stream, proxy_protocol on; IPv4,
# IPv6 and a dual-stack listener) really send, one file per connection:
# the header and the first request bytes. Runs in a throwaway network
# namespace (unshare -n), on its loopback; needs root. The committed seeds in
# tests/fuzz/corpus/proxy_proto/{haproxy,nginx}-* were made with it.
set -euo pipefail
out=$(realpath -m "${1:?usage: capture-seeds.sh OUTDIR}")
mkdir -p "$out"
if [[ ${CAPTURE_INNER:-} != 1 ]]; then
	exec unshare -n env CAPTURE_INNER=1 bash "$0" "$out"
fi
ip link set lo up
tmp=$(mktemp -d /tmp/mmp-capture.XXXXXX)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT

# The listener: every connection's bytes within 300 ms go to $tmp/conn-N.
cat >"$tmp/listen.py" <<'PY'
import socket, sys, threading, time, os
d = sys.argv[1]; n = [0]; lock = threading.Lock()
def serve(c):
    c.settimeout(0.3); data = b""
    try:
        while True:
            b = c.recv(4096)
            if not b: break
            data += b
    except OSError:
        pass
    with lock:
        n[0] += 1; name = "conn-%03d" % n[0]
    open(os.path.join(d, name + ".tmp"), "wb").write(data)
    os.rename(os.path.join(d, name + ".tmp"), os.path.join(d, name))
    c.close()
def loop(fam, addr):
    s = socket.socket(fam); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(addr); s.listen(64)
    while True:
        c, _ = s.accept(); threading.Thread(target=serve, args=(c,), daemon=True).start()
threading.Thread(target=loop, args=(socket.AF_INET, ("127.0.0.1", 9999)), daemon=True).start()
threading.Thread(target=loop, args=(socket.AF_INET6, ("::1", 9999)), daemon=True).start()
print("ready", flush=True)
while True: time.sleep(1)
PY
mkdir -p "$tmp/conns"
python3 "$tmp/listen.py" "$tmp/conns" >"$tmp/listen.log" 2>&1 &
pids+=($!)

cat >"$tmp/haproxy.cfg" <<CFG
global
    maxconn 100
defaults
    mode tcp
    timeout connect 2s
    timeout client 5s
    timeout server 5s
frontend v1_4
    bind 127.0.0.1:8000
    default_backend v1
frontend v1_6
    bind [::1]:8000
    default_backend v1
frontend v2_4
    bind 127.0.0.1:8001
    default_backend v2
frontend v2_6
    bind [::1]:8001
    default_backend v2
frontend v2_tlvs
    bind 127.0.0.1:8005
    unique-id-format %{+X}o\ %ci:%cp_%fi:%fp_%Ts_%rt
    default_backend v2_tlvs
backend v1
    server s 127.0.0.1:9999 send-proxy
backend v2
    server s 127.0.0.1:9999 send-proxy-v2
backend v2_tlvs
    server s 127.0.0.1:9999 send-proxy-v2 proxy-v2-options crc32c,unique-id
CFG
mkdir -p "$tmp/nginx"
cat >"$tmp/nginx/nginx.conf" <<CFG
load_module /usr/lib/nginx/modules/ngx_stream_module.so;
master_process off;
worker_processes 1;
error_log $tmp/nginx/error.log info;
pid $tmp/nginx/nginx.pid;
events { worker_connections 64; }
stream {
    server { listen 127.0.0.1:8002; listen [::1]:8002; proxy_pass 127.0.0.1:9999; proxy_protocol on; }
    server { listen [::]:8004 ipv6only=off; proxy_pass 127.0.0.1:9999; proxy_protocol on; }
}
CFG
haproxy -db -f "$tmp/haproxy.cfg" >"$tmp/haproxy.log" 2>&1 &
pids+=($!)
nginx -e "$tmp/nginx/error.log" -p "$tmp/nginx" -c "$tmp/nginx/nginx.conf" -g 'daemon off;' >"$tmp/nginx.log" 2>&1 &
pids+=($!)
sleep 1

# capture NAME HOST PORT: connect, send a request, name the connection's capture.
capture() {
	local name=$1 host=$2 port=$3 before
	before=$(find "$tmp/conns" -name 'conn-*' ! -name '*.tmp' | wc -l)
	python3 - "$host" "$port" <<'PY'
import socket, sys, time
s = socket.create_connection((sys.argv[1], int(sys.argv[2])))
s.sendall(b"GET / HTTP/1.1\r\nHost: seed\r\n\r\n"); time.sleep(0.5); s.close()
PY
	for _ in $(seq 50); do
		(($(find "$tmp/conns" -name 'conn-*' ! -name '*.tmp' | wc -l) > before)) && break
		sleep 0.05
	done
	local f
	f=$(find "$tmp/conns" -name 'conn-*' ! -name '*.tmp' | sort | tail -1)
	mv "$f" "$out/$name"
	echo "$name: $(head -c 120 "$out/$name" | od -An -c | head -2 | tr -s ' ' | tr '\n' ' ')"
}
capture haproxy-send-proxy-tcp4 127.0.0.1 8000
capture haproxy-send-proxy-tcp6 ::1 8000
capture haproxy-send-proxy-v2-tcp4 127.0.0.1 8001
capture haproxy-send-proxy-v2-tcp6 ::1 8001
capture haproxy-send-proxy-v2-crc32c-unique-id 127.0.0.1 8005
capture nginx-proxy-protocol-tcp4 127.0.0.1 8002
capture nginx-proxy-protocol-tcp6 ::1 8002
capture nginx-proxy-protocol-dual-stack-v4-client 127.0.0.1 8004
capture nginx-proxy-protocol-dual-stack-v6-client ::1 8004
