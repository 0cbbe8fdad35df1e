# SPDX-License-Identifier: GPL-2.0
# Sourced by bench/run.sh and bench/field.sh: the nginx upstream of the http loads.
#
# nginx_conf DIR PORT: write DIR/www/index.html (612 bytes, nginx's default
# page size) and DIR/nginx.conf, an nginx listening on 127.0.0.1:PORT with
# keep-alive that never ends a connection first. Start it with
#   nginx -p DIR -c DIR/nginx.conf -e DIR/nginx-error.log
nginx_conf() {
	local dir=$1 port=$2
	mkdir -p "$dir/www"
	chmod 755 "$dir" "$dir/www"
	head -c 612 /dev/zero | tr '\0' x >"$dir/www/index.html"
	cat >"$dir/nginx.conf" <<CONF
daemon off; master_process on; worker_processes 2; pid $dir/nginx.pid;
error_log $dir/nginx-error.log warn;
events { worker_connections 65536; }
http { access_log off; keepalive_requests 1000000; keepalive_timeout 60s;
  server { listen 127.0.0.1:$port reuseport backlog=65535; root $dir/www; } }
CONF
}
