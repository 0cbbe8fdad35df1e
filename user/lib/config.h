/* SPDX-License-Identifier: GPL-2.0 */
/* The run's configuration, from the command line (cli/options.c). */
#ifndef MMP_CONFIG_H
#define MMP_CONFIG_H

#include <stdint.h>
#include <stdio.h>
#include <stdbool.h>
#include <sys/socket.h>

enum mmp_command {
	MMP_CMD_RUN,
	MMP_CMD_CHECK,
	MMP_CMD_SETUP_ROUTING,
	MMP_CMD_CLEANUP_ROUTING,
	MMP_CMD_STATS,
	MMP_CMD_CLEANUP,
	MMP_CMD_VERSION,
	MMP_CMD_HELP,
};

enum mmp_engine_kind {
	MMP_ENGINE_AUTO,
	MMP_ENGINE_SPLICE,
	MMP_ENGINE_SOCKMAP,
	MMP_ENGINE_TC,
};

enum mmp_xdp_mode {
	MMP_XDP_MODE_AUTO, /* native, falling back to skb (logged) */
	MMP_XDP_MODE_NATIVE,
	MMP_XDP_MODE_SKB,
};

enum mmp_udp_header {
	MMP_UDP_HDR_AUTO, /* v2 signature or SPP magic starts a flow; other datagrams join their LB ip:port's flow */
	MMP_UDP_HDR_EVERY, /* udppp: a PROXY v2 header on every datagram */
	MMP_UDP_HDR_FIRST, /* Cloudflare Spectrum: the header on the first datagram of a flow only */
	MMP_UDP_HDR_SPP, /* Cloudflare Simple Proxy Protocol: 38 bytes on every datagram, and on replies */
};

struct mmp_config {
	enum mmp_command command;
	struct sockaddr_storage listen; /* -l; with a range, its port is the first one */
	struct sockaddr_storage target4; /* -4: upstream for IPv4 clients (a range: its first port) */
	struct sockaddr_storage target6; /* -6: upstream for IPv6 clients (a range: its first port) */
	/* Port ranges (docs/DESIGN.md §8), host order; each equals its first port when a single port was given. */
	uint16_t listen_port_hi; /* -l ADDR:LO-HI */
	uint16_t target4_port_hi; /* -4 ADDR:LO-HI: listen port LO+k goes to LO'+k */
	uint16_t target6_port_hi;
	int n_ports; /* ports served: listen_port_hi - listen port + 1 */
	int max_ports; /* --max-ports: the cap on n_ports */
	const char *allowed_path; /* -a, NULL: allow every source */
	const char *allowed_endpoints_path; /* --allowed-endpoints, NULL: no endpoint policy */
	bool strip_stacked; /* --strip-stacked: a second PROXY header is read too (docs/DESIGN.md §12) */
	int close_after_s; /* -c: UDP idle timeout */
	int protocol; /* -p: IPPROTO_TCP or IPPROTO_UDP; IPPROTO_TCP with tcp_and_udp */
	bool tcp_and_udp; /* -p tcp,udp: one instance serves both on -l (docs/DESIGN.md §13) */
	uint32_t mark; /* -m, 0: no SO_MARK */
	int listeners; /* --listeners */
	int header_timeout_ms;
	int connect_timeout_ms;
	enum mmp_engine_kind engine;
	const char *pin_dir; /* --pin-dir, or derived from -p and -l (pin_dir_derived); NULL: stats/cleanup choose */
	char pin_dir_derived[512];
	bool all; /* stats, cleanup: --all, every instance found under the pin root */
	int route_table; /* setup-routing / cleanup-routing / check */
	enum mmp_udp_header udp_header; /* -p udp: --udp-header */
	uint64_t max_queued; /* sockmap: bytes queued per flow and direction before backpressure */
	/* --lift-pipe-limits: --engine splice keeps CAP_SYS_RESOURCE for 1 MiB relay pipes (docs/DESIGN.md §3d) */
	bool lift_pipe_limits;
	/* tc engine */
	const char *ifaces[32]; /* --iface: interfaces carrying a remote load balancer's traffic */
	int n_ifaces;
	int tc_max_flows;
	uint32_t max_pending; /* TCP connections whose header or connect is pending, in all */
	uint32_t max_pending_per_source; /* the same, per load-balancer address */
	uint32_t udp_max_flows_per_lb; /* UDP flows per load-balancer address */
	int tc_idle_timeout_s; /* 0: never */
	int idle_timeout_s; /* TCP flows held in userspace: close after this long without data; 0: never */
	int keepalive_idle_s, keepalive_intvl_s, keepalive_cnt; /* TCP keepalive on both sockets; idle 0: off */
	int tc_handoff_delay_ms; /* a flow runs on splice this long before the hand-off; 0: at once */
	/* XDP gate (user/policy/xdp_gate.c) */
	const char *xdp_ifaces[32]; /* --xdp-iface: where non-allowed sources are dropped in XDP */
	int n_xdp_ifaces;
	enum mmp_xdp_mode xdp_mode;
	bool detach; /* on exit, remove filters and pins even if spliced flows remain */
	bool takeover; /* --takeover: replace the running instance with the same flags (docs/DESIGN.md §15) */
	int drain_timeout_s; /* taken over: serve userspace flows at most this long before exiting */
	bool udp_any_source; /* --udp-any-source: UDP without -a is allowed (docs/DESIGN.md §7b) */
	bool metrics; /* --metrics given */
	struct sockaddr_storage metrics_addr; /* --metrics ADDR:PORT */
	bool stats_json; /* stats --json */
	bool stats_watch; /* stats --watch */
	bool help; /* --help: print the command's options */
};

#endif
