// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <unistd.h>
#include "cli/options.h"
#include "lib/config.h"
#include "lib/instance.h"
#include "lib/protocols.h"
#include "lib/log.h"
#include "mmp_maps.h"
#include "lib/sockaddr.h"
#include "listen/port_range.h"

enum long_only_opts {
	OPT_LISTENERS = 1000,
	OPT_HEADER_TIMEOUT,
	OPT_CONNECT_TIMEOUT,
	OPT_ENGINE,
	OPT_PIN_DIR,
	OPT_TABLE,
	OPT_MAX_QUEUED,
	OPT_UDP_HEADER,
	OPT_IFACE,
	OPT_TC_MAX_FLOWS,
	OPT_MAX_PENDING,
	OPT_MAX_PENDING_SOURCE,
	OPT_UDP_MAX_FLOWS_LB,
	OPT_TC_IDLE,
	OPT_TC_HANDOFF_DELAY,
	OPT_DETACH,
	OPT_ALL,
	OPT_XDP_IFACE,
	OPT_XDP_MODE,
	OPT_METRICS,
	OPT_JSON,
	OPT_WATCH,
	OPT_MAX_PORTS,
	OPT_UDP_ANY_SOURCE,
	OPT_ALLOWED_ENDPOINTS,
	OPT_STRIP_STACKED,
	OPT_IDLE_TIMEOUT,
	OPT_KEEPALIVE,
	OPT_TAKEOVER,
	OPT_DRAIN_TIMEOUT,
	OPT_LIFT_PIPE_LIMITS,
	OPT_HELP,
};

/* Which commands take an option: bits of enum mmp_command. */
#define ON(cmd) (1u << (cmd))
#define RUN ON(MMP_CMD_RUN)
#define CHECK ON(MMP_CMD_CHECK)
#define ROUTING (ON(MMP_CMD_SETUP_ROUTING) | ON(MMP_CMD_CLEANUP_ROUTING))
#define PINS (ON(MMP_CMD_STATS) | ON(MMP_CMD_CLEANUP))
#define STATS ON(MMP_CMD_STATS)
#define EVERY (~0u)

/*
 * The one option table (options.h): getopt's table, the short-option
 * string, --help and the defaults are all made from it, and each command
 * accepts only the options marked for it (docs/mmproxy-bpf.8 says the same).
 */
const struct mmp_option mmp_options[] = {
	{ "listen-addr", 'l', "ADDR:PORT[-HI]", RUN | CHECK | PINS, "0.0.0.0:8443",
	  "where the load balancer connects (default 0.0.0.0:8443), one port or a range LO-HI; with -p, names the "
	  "instance's pin directory" },
	{ "ipv4", '4', "ADDR:PORT[-HI]", RUN | CHECK, "127.0.0.1:443",
	  "upstream for IPv4 clients (default 127.0.0.1:443); a range as large as -l's maps port LO+k to LO'+k, "
	  "a single port takes every listen port; any reachable address (a container, a pod, another host: "
	  "its replies are steered by tuple, see setup-routing)" },
	{ "ipv6", '6', "[ADDR]:PORT[-HI]", RUN | CHECK, "[::1]:443", "upstream for IPv6 clients (default [::1]:443), as -4" },
	{ "max-ports", OPT_MAX_PORTS, "N", RUN | CHECK, "4096",
	  "the most ports -l LO-HI may serve (default 4096, at most 65535)" },
	{ "allowed-subnets", 'a', "FILE", RUN, NULL,
	  "allowed load-balancer subnets, one CIDR per line (default: allow every source, with a warning; UDP "
	  "refuses to start without it unless given --udp-any-source)" },
	{ "allowed-endpoints", OPT_ALLOWED_ENDPOINTS, "FILE", RUN, NULL,
	  "allowed cloud endpoints, one per line: aws:vpce-ID, azure:LINKID, gcp:PSCID (decimal); a PROXY "
	  "header whose TLVs name none of them is refused (default: no endpoint check); re-read on SIGHUP" },
	{ "strip-stacked", OPT_STRIP_STACKED, NULL, RUN, NULL,
	  "TCP: a second PROXY header right after the first (one load balancer behind another) is stripped "
	  "too, and the upstream sees the client the second one names: the original client, as the farther "
	  "load balancer saw it (default: such connections are refused)" },
	{ "udp-any-source", OPT_UDP_ANY_SOURCE, NULL, RUN, NULL,
	  "UDP without -a: accept headers from every source (a spoofed datagram then opens flows and has "
	  "replies sent anywhere; list your load balancers with -a instead)" },
	{ "close-after", 'c', "SEC", RUN, "60", "UDP idle flow timeout (default 60)" },
	{ "protocol", 'p', "tcp|udp|tcp,udp", RUN | CHECK | PINS, "tcp",
	  "(default tcp); tcp,udp serves both on the same -l, sharing -a, the XDP gate, --metrics and one "
	  "pin directory (UDP's rules apply to its half: -a or --udp-any-source)" },
	{ "udp-header", OPT_UDP_HEADER, "auto|every|first|spp", RUN, "auto",
	  "UDP framing (default auto): a PROXY v2 header on every datagram (udppp), on a flow's first only "
	  "(Spectrum), or Cloudflare SPP on every datagram and reply" },
	{ "mark", 'm', "N", RUN | CHECK, "0", "SO_MARK for upstream sockets (default 0: none)" },
	{ "listeners", OPT_LISTENERS, "N", RUN, NULL, "listener threads with SO_REUSEPORT (default: cores)" },
	{ "verbose", 'v', "0|1|2", EVERY, NULL, "0 errors, 1 per-connection errors, 2 every state change" },
	{ "header-timeout", OPT_HEADER_TIMEOUT, "SEC", RUN, "5",
	  "close connections whose PROXY header is incomplete (default 5)" },
	{ "connect-timeout", OPT_CONNECT_TIMEOUT, "SEC", RUN, "5", "upstream connect timeout (default 5)" },
	{ "engine", OPT_ENGINE, "auto|tc|splice|sockmap", RUN | CHECK, "auto",
	  "data-path engine (default auto: tc for every eligible flow, splice for the others). UDP: auto = "
	  "in-kernel fast path with the userspace relay as fallback, tc = fast path required, splice = "
	  "userspace relay only" },
	{ "iface", OPT_IFACE, "IF[,IF...]", RUN, NULL, "tc: interfaces that carry a remote load balancer's traffic" },
	{ "max-pending", OPT_MAX_PENDING, "N", RUN, "16384",
	  "TCP: connections whose PROXY header or upstream connect is pending, in all (default 16384); past it "
	  "new ones are closed at once" },
	{ "max-pending-per-source", OPT_MAX_PENDING_SOURCE, "N", RUN, "4096",
	  "TCP: pending connections from one load-balancer address (default 4096)" },
	{ "udp-max-flows-per-lb", OPT_UDP_MAX_FLOWS_LB, "N", RUN, "65536",
	  "UDP: flows open for one load-balancer address (default 65536, or the open-files limit if lower)" },
	{ "tc-max-flows", OPT_TC_MAX_FLOWS, "N", RUN, "65536",
	  "tc: flows spliced in the kernel at once (default 65536; never evicted: past it, new flows stay on "
	  "splice)" },
	{ "tc-idle-timeout", OPT_TC_IDLE, "SEC", RUN, "7200",
	  "tc: forget a spliced flow after SEC without any packet (keepalives count; default 7200, 0 = never)" },
	{ "idle-timeout", OPT_IDLE_TIMEOUT, "SEC", RUN, "7200",
	  "TCP: close a flow held in userspace (splice, sockmap) after SEC without data either way (default "
	  "7200, 0 = never; tc flows: --tc-idle-timeout)" },
	{ "keepalive", OPT_KEEPALIVE, "IDLE[,INTVL,CNT]", RUN, "60,10,6",
	  "TCP keepalive on both sockets of a flow held in userspace: probe after IDLE s of silence, every "
	  "INTVL s, CNT times, then close (default 60,10,6; 0 = off)" },
	{ "tc-handoff-delay", OPT_TC_HANDOFF_DELAY, "MS", RUN, "20",
	  "tc: a new flow runs on splice for MS before its hand-off to the kernel, so short connections skip "
	  "its cost (default 20, 0 = at once)" },
	{ "detach", OPT_DETACH, NULL, RUN, NULL, "tc: on exit remove filters and pins even if flows remain" },
	{ "takeover", OPT_TAKEOVER, NULL, RUN, NULL,
	  "TCP: replace the running instance with these same flags without losing a connection: start serving, "
	  "then tell it to drain and exit (an upgrade: run the new binary with --takeover)" },
	{ "drain-timeout", OPT_DRAIN_TIMEOUT, "SEC", RUN, "60",
	  "TCP, once taken over: serve the flows still held in userspace for at most SEC, then exit (default "
	  "60, 0 = exit at once; tc flows in the kernel are adopted, not drained)" },
	{ "xdp-iface", OPT_XDP_IFACE, "IF[,IF...]", RUN | CHECK, NULL,
	  "drop SYNs/datagrams from sources outside -a in XDP on these interfaces (default none)" },
	{ "xdp-mode", OPT_XDP_MODE, "native|skb", RUN, NULL, "XDP attach mode (default native, else skb)" },
	{ "lift-pipe-limits", OPT_LIFT_PIPE_LIMITS, NULL, RUN | CHECK, NULL,
	  "--engine splice: keep CAP_SYS_RESOURCE, raised only while a relay pipe is made, so every long flow's "
	  "pipes are 1 MiB past fs.pipe-user-pages-soft, as the peers' are (up to 2 MiB of kernel memory a flow)" },
	{ "max-queued", OPT_MAX_QUEUED, "BYTES", RUN, "4194304",
	  "sockmap: bytes queued per flow and direction before the sender is slowed by TCP flow control "
	  "(default 4194304)" },
	{ "pin-dir", OPT_PIN_DIR, "DIR", RUN | CHECK | PINS, NULL,
	  "bpffs directory for pinned maps, one instance each (default " MMP_PIN_ROOT "/PROTOCOL-ADDR-PORT from -p "
	  "and -l, e.g. tcp-0_0_0_0-8443; stats and cleanup: the only instance found there)" },
	{ "all", OPT_ALL, NULL, PINS, NULL, "stats, cleanup: every instance found under " MMP_PIN_ROOT },
	{ "table", OPT_TABLE, "N", RUN | CHECK | ROUTING, "123", "routing table for the transparent upstream (default 123)" },
	{ "metrics", OPT_METRICS, "ADDR:PORT", RUN, NULL,
	  "serve Prometheus metrics on http://ADDR:PORT/metrics (default: off)" },
	{ "json", OPT_JSON, NULL, STATS, NULL, "one JSON object with stable keys (docs/METRICS.md)" },
	{ "watch", OPT_WATCH, NULL, STATS, NULL, "refresh every second with per-second rates, until Ctrl-C" },
	{ "help", OPT_HELP, NULL, EVERY, NULL, "this text" },
};

#define N_OPTS (sizeof(mmp_options) / sizeof(mmp_options[0]))
const size_t mmp_options_n = N_OPTS;

static const struct {
	const char *name;
	enum mmp_command cmd;
	const char *what;
} cmds[] = {
	{ "run", MMP_CMD_RUN, "proxy (the default command)" },
	{ "check", MMP_CMD_CHECK, "verify capabilities, bpffs, routing (a spoofed connection to -4/-6); print fixes" },
	{ "setup-routing", MMP_CMD_SETUP_ROUTING, "add the ip rules/routes and lo sysctls (idempotent)" },
	{ "cleanup-routing", MMP_CMD_CLEANUP_ROUTING, "remove the ip rules/routes (idempotent)" },
	{ "stats", MMP_CMD_STATS, "counters and flows from the pinned maps" },
	{ "cleanup", MMP_CMD_CLEANUP, "remove filters and pins left by a stopped instance" },
	{ "version", MMP_CMD_VERSION, "print the version" },
	{ "help", MMP_CMD_HELP, "this text" },
};

#define N_CMDS (sizeof(cmds) / sizeof(cmds[0]))

static const char *command_name(enum mmp_command cmd)
{
	for (size_t i = 0; i < N_CMDS; i++)
		if (cmds[i].cmd == cmd)
			return cmds[i].name;
	return "?";
}

/* "  -l, --listen-addr ADDR:PORT   help..." with the help wrapped at 100 columns under itself. */
static void print_wrapped(FILE *out, const char *left, const char *help)
{
	const int col = 38, width = 100 - col;
	const char *p = help;

	fprintf(out, "%-*s", col, left);
	if ((int)strlen(left) >= col)
		fprintf(out, "\n%-*s", col, "");
	while (*p) {
		int n = (int)strlen(p);

		if (n > width) {
			n = width;
			while (n > 0 && p[n] != ' ')
				n--;
			if (n == 0)
				n = width;
		}
		fprintf(out, "%.*s\n", n, p);
		p += n;
		while (*p == ' ')
			p++;
		if (*p)
			fprintf(out, "%-*s", col, "");
	}
}

static void print_options(FILE *out, unsigned int mask)
{
	for (size_t i = 0; i < N_OPTS; i++) {
		char left[64];
		int n;

		if (!(mmp_options[i].commands & mask))
			continue;
		n = mmp_options[i].val < 256 ? snprintf(left, sizeof(left), "  -%c, --%s", mmp_options[i].val, mmp_options[i].name)
				      : snprintf(left, sizeof(left), "      --%s", mmp_options[i].name);
		if (mmp_options[i].arg)
			snprintf(left + n, sizeof(left) - n, " %s", mmp_options[i].arg);
		print_wrapped(out, left, mmp_options[i].help);
	}
}

void mmp_usage(FILE *out, enum mmp_command cmd)
{
	if (cmd != MMP_CMD_HELP) {
		fprintf(out, "Usage: mmproxy-bpf %s [options]\n\nOptions of %s:\n", command_name(cmd), command_name(cmd));
		print_options(out, ON(cmd));
		return;
	}
	fprintf(out, "Usage: mmproxy-bpf [COMMAND] [options]    (no command: run; go-mmproxy's flags work as they are)\n\n");
	for (size_t i = 0; i < N_CMDS; i++)
		fprintf(out, "  %-16s %s\n", cmds[i].name, cmds[i].what);
	fprintf(out, "\nOptions of run (single-dash long forms such as -listeners work too; "
		     "`mmproxy-bpf COMMAND --help` lists another command's):\n");
	print_options(out, RUN);
}

/* Parse a decimal in [min, max]. Returns 0 or -EINVAL. */
static int parse_long(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

static int bad_option(const char *opt, const char *val, const char *why)
{
	fprintf(stderr, "mmproxy-bpf: invalid value '%s' for %s: %s (see --help)\n", val, opt, why);
	return -EINVAL;
}

static int parse_addr_opt(const char *opt, const char *val, struct sockaddr_storage *ss, int family)
{
	const char *reason;

	if (mmp_parse_hostport(val, ss, &reason))
		return bad_option(opt, val, reason);
	if (family && ss->ss_family != family)
		return bad_option(opt, val, family == AF_INET ? "expected an IPv4 address such as 127.0.0.1:443"
							      : "expected an IPv6 address such as [::1]:443");
	return 0;
}

/* -l, -4, -6: "ADDR:PORT" or "ADDR:LO-HI" (listen/port_range.h). */
static int parse_range_opt(const char *opt, const char *val, struct sockaddr_storage *ss, uint16_t *hi, int family)
{
	const char *reason;

	if (mmp_parse_hostport_range(val, ss, hi, &reason))
		return bad_option(opt, val, reason);
	if (family && ss->ss_family != family)
		return bad_option(opt, val, family == AF_INET ? "expected an IPv4 address such as 127.0.0.1:443"
							      : "expected an IPv6 address such as [::1]:443");
	return 0;
}

static int parse_command(const char *word, enum mmp_command *cmd)
{
	for (size_t i = 0; i < N_CMDS; i++) {
		if (!strcmp(word, cmds[i].name)) {
			*cmd = cmds[i].cmd;
			return 0;
		}
	}
	fprintf(stderr, "mmproxy-bpf: unknown command '%s' (commands: run, check, stats, cleanup, setup-routing, cleanup-routing, version)\n",
		word);
	return -EINVAL;
}

/* getopt's tables from the option table: the long options and "l:4:6:..." */
static void build_getopt(struct option *lo, char *shorts)
{
	char *p = shorts;

	*p++ = ':'; /* a missing value is reported as ':' */
	for (size_t i = 0; i < N_OPTS; i++) {
		lo[i] = (struct option){ mmp_options[i].name, mmp_options[i].arg ? required_argument : no_argument, NULL, mmp_options[i].val };
		if (mmp_options[i].val < 256) {
			*p++ = (char)mmp_options[i].val;
			if (mmp_options[i].arg)
				*p++ = ':';
		}
	}
	*p++ = 'h';
	*p = 0;
	lo[N_OPTS] = (struct option){ 0 };
}

static const struct mmp_option *desc_of(int val)
{
	for (size_t i = 0; i < N_OPTS; i++)
		if (mmp_options[i].val == val)
			return &mmp_options[i];
	return NULL;
}

/* --keepalive IDLE[,INTVL,CNT], the kernel's limits (TCP_KEEPIDLE etc.); "0" turns it off. Returns 0 or -EINVAL. */
static int parse_keepalive(const char *arg, struct mmp_config *cfg)
{
	long idle, intvl = cfg->keepalive_intvl_s, cnt = cfg->keepalive_cnt;
	char *end;

	errno = 0;
	idle = strtol(arg, &end, 10);
	if (errno || end == arg || idle < 0 || idle > 32767)
		return -EINVAL;
	if (*end == ',') {
		arg = end + 1;
		intvl = strtol(arg, &end, 10);
		if (end == arg || *end != ',' || intvl < 1 || intvl > 32767)
			return -EINVAL;
		arg = end + 1;
		cnt = strtol(arg, &end, 10);
		if (end == arg || cnt < 1 || cnt > 127)
			return -EINVAL;
	}
	if (*end)
		return -EINVAL;
	cfg->keepalive_idle_s = (int)idle;
	cfg->keepalive_intvl_s = (int)intvl;
	cfg->keepalive_cnt = (int)cnt;
	return 0;
}

/*
 * Apply option c's value arg to cfg: the one parser, for the command line
 * and for the table's defaults. Returns 0, or -EINVAL after a one-line
 * error that names the option and the fix. arg may be cut up (strtok).
 */
static int apply_option(struct mmp_config *cfg, int c, char *arg)
{
	long v;

	switch (c) {
	case 'l':
		if (parse_range_opt("-l", arg, &cfg->listen, &cfg->listen_port_hi, 0))
			return -EINVAL;
		break;
	case '4':
		if (parse_range_opt("-4", arg, &cfg->target4, &cfg->target4_port_hi, AF_INET))
			return -EINVAL;
		break;
	case '6':
		if (parse_range_opt("-6", arg, &cfg->target6, &cfg->target6_port_hi, AF_INET6))
			return -EINVAL;
		break;
	case 'a':
		cfg->allowed_path = arg;
		break;
	case 'c':
		if (parse_long(arg, 1, 86400 * 365, &v))
			return bad_option("-c", arg, "seconds from 1 upwards");
		cfg->close_after_s = (int)v;
		break;
	case 'p':
		/* tcp,udp: TCP is the main protocol; run() starts UDP beside it (docs/DESIGN.md §13). */
		cfg->tcp_and_udp = !strcmp(arg, "tcp,udp") || !strcmp(arg, "udp,tcp");
		if (!strcmp(arg, "tcp") || cfg->tcp_and_udp)
			cfg->protocol = IPPROTO_TCP;
		else if (!strcmp(arg, "udp"))
			cfg->protocol = IPPROTO_UDP;
		else
			return bad_option("-p", arg, "expected tcp, udp or tcp,udp");
		break;
	case 'm':
		if (parse_long(arg, 0, UINT32_MAX, &v))
			return bad_option("-m", arg, "expected a mark from 0 to 4294967295");
		cfg->mark = (uint32_t)v;
		break;
	case 'v':
		if (parse_long(arg, 0, 2, &v))
			return bad_option("-v", arg, "expected 0, 1 or 2");
		mmp_verbosity = (int)v;
		break;
	case OPT_LISTENERS:
		if (parse_long(arg, 1, 1024, &v))
			return bad_option("--listeners", arg, "expected 1 to 1024");
		cfg->listeners = (int)v;
		break;
	case OPT_HEADER_TIMEOUT:
		if (parse_long(arg, 1, 3600, &v))
			return bad_option("--header-timeout", arg, "seconds from 1 to 3600");
		cfg->header_timeout_ms = (int)v * 1000;
		break;
	case OPT_CONNECT_TIMEOUT:
		if (parse_long(arg, 1, 3600, &v))
			return bad_option("--connect-timeout", arg, "seconds from 1 to 3600");
		cfg->connect_timeout_ms = (int)v * 1000;
		break;
	case OPT_ENGINE:
		if (!strcmp(arg, "auto"))
			cfg->engine = MMP_ENGINE_AUTO;
		else if (!strcmp(arg, "splice"))
			cfg->engine = MMP_ENGINE_SPLICE;
		else if (!strcmp(arg, "sockmap"))
			cfg->engine = MMP_ENGINE_SOCKMAP;
		else if (!strcmp(arg, "tc"))
			cfg->engine = MMP_ENGINE_TC;
		else
			return bad_option("--engine", arg, "expected auto, tc, splice or sockmap");
		break;
	case OPT_IFACE:
		for (char *tok = strtok(arg, ","); tok; tok = strtok(NULL, ",")) {
			if (cfg->n_ifaces >= (int)(sizeof(cfg->ifaces) / sizeof(cfg->ifaces[0])))
				return bad_option("--iface", tok, "at most 32 interfaces");
			cfg->ifaces[cfg->n_ifaces++] = tok;
		}
		break;
	case OPT_MAX_PENDING:
		if (parse_long(arg, 1, 1 << 24, &v))
			return bad_option("--max-pending", arg, "expected 1 to 16777216");
		cfg->max_pending = (uint32_t)v;
		break;
	case OPT_MAX_PENDING_SOURCE:
		if (parse_long(arg, 1, 1 << 24, &v))
			return bad_option("--max-pending-per-source", arg, "expected 1 to 16777216");
		cfg->max_pending_per_source = (uint32_t)v;
		break;
	case OPT_UDP_MAX_FLOWS_LB:
		if (parse_long(arg, 1, 1 << 24, &v))
			return bad_option("--udp-max-flows-per-lb", arg, "expected 1 to 16777216");
		cfg->udp_max_flows_per_lb = (uint32_t)v;
		break;
	case OPT_TC_MAX_FLOWS:
		if (parse_long(arg, 16, 16 << 20, &v))
			return bad_option("--tc-max-flows", arg, "expected 16 to 16777216");
		cfg->tc_max_flows = (int)v;
		break;
	case OPT_TC_IDLE:
		if (parse_long(arg, 0, 86400 * 30, &v))
			return bad_option("--tc-idle-timeout", arg, "seconds, 0 for never");
		cfg->tc_idle_timeout_s = (int)v;
		break;
	case OPT_TC_HANDOFF_DELAY:
		if (parse_long(arg, 0, 60000, &v))
			return bad_option("--tc-handoff-delay", arg, "milliseconds, 0 to 60000");
		cfg->tc_handoff_delay_ms = (int)v;
		break;
	case OPT_DETACH:
		cfg->detach = true;
		break;
	case OPT_TAKEOVER:
		cfg->takeover = true;
		break;
	case OPT_LIFT_PIPE_LIMITS:
		cfg->lift_pipe_limits = true;
		break;
	case OPT_DRAIN_TIMEOUT:
		if (parse_long(arg, 0, 86400, &v))
			return bad_option("--drain-timeout", arg, "seconds, 0 to 86400");
		cfg->drain_timeout_s = (int)v;
		break;
	case OPT_IDLE_TIMEOUT:
		if (parse_long(arg, 0, 86400 * 30, &v))
			return bad_option("--idle-timeout", arg, "seconds, 0 for never");
		cfg->idle_timeout_s = (int)v;
		break;
	case OPT_KEEPALIVE:
		if (parse_keepalive(arg, cfg))
			return bad_option("--keepalive", arg,
					  "expected IDLE or IDLE,INTVL,CNT: seconds 1 to 32767, CNT 1 to 127; 0 = off");
		break;
	case OPT_UDP_ANY_SOURCE:
		cfg->udp_any_source = true;
		break;
	case OPT_ALLOWED_ENDPOINTS:
		cfg->allowed_endpoints_path = arg;
		break;
	case OPT_STRIP_STACKED:
		cfg->strip_stacked = true;
		break;
	case OPT_ALL:
		cfg->all = true;
		break;
	case OPT_XDP_IFACE:
		for (char *tok = strtok(arg, ","); tok; tok = strtok(NULL, ",")) {
			if (cfg->n_xdp_ifaces >= (int)(sizeof(cfg->xdp_ifaces) / sizeof(cfg->xdp_ifaces[0])))
				return bad_option("--xdp-iface", tok, "at most 32 interfaces");
			if (strlen(tok) >= 16)
				return bad_option("--xdp-iface", tok, "interface names are at most 15 characters");
			cfg->xdp_ifaces[cfg->n_xdp_ifaces++] = tok;
		}
		break;
	case OPT_XDP_MODE:
		if (!strcmp(arg, "native"))
			cfg->xdp_mode = MMP_XDP_MODE_NATIVE;
		else if (!strcmp(arg, "skb"))
			cfg->xdp_mode = MMP_XDP_MODE_SKB;
		else
			return bad_option("--xdp-mode", arg, "expected native or skb");
		break;
	case OPT_METRICS:
		if (parse_addr_opt("--metrics", arg, &cfg->metrics_addr, 0))
			return -EINVAL;
		cfg->metrics = true;
		break;
	case OPT_MAX_PORTS:
		if (parse_long(arg, 1, 65535, &v))
			return bad_option("--max-ports", arg, "expected 1 to 65535");
		cfg->max_ports = (int)v;
		break;
	case OPT_JSON:
		cfg->stats_json = true;
		break;
	case OPT_WATCH:
		cfg->stats_watch = true;
		break;
	case OPT_UDP_HEADER:
		if (!strcmp(arg, "auto"))
			cfg->udp_header = MMP_UDP_HDR_AUTO;
		else if (!strcmp(arg, "every"))
			cfg->udp_header = MMP_UDP_HDR_EVERY;
		else if (!strcmp(arg, "first"))
			cfg->udp_header = MMP_UDP_HDR_FIRST;
		else if (!strcmp(arg, "spp"))
			cfg->udp_header = MMP_UDP_HDR_SPP;
		else
			return bad_option("--udp-header", arg, "expected auto, every, first or spp");
		break;
	case OPT_MAX_QUEUED:
		if (parse_long(arg, 65536, 1L << 40, &v))
			return bad_option("--max-queued", arg, "bytes from 65536 upwards");
		cfg->max_queued = (uint64_t)v;
		break;
	case OPT_PIN_DIR:
		cfg->pin_dir = arg;
		break;
	case OPT_TABLE:
		if (parse_long(arg, 1, 252, &v))
			return bad_option("--table", arg, "expected a table number from 1 to 252");
		cfg->route_table = (int)v;
		break;
	default:
		/* In the table without a case here: the unit tests catch it. */
		fprintf(stderr, "mmproxy-bpf: option %d has no parser\n", c);
		return -ENOSYS;
	}
	return 0;
}

/* Every option's default from the table, through the option's own parser; then what is not a constant. */
static void set_defaults(struct mmp_config *cfg)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);

	memset(cfg, 0, sizeof(*cfg));
	for (size_t i = 0; i < N_OPTS; i++) {
		char def[64];

		if (!mmp_options[i].def)
			continue;
		snprintf(def, sizeof(def), "%s", mmp_options[i].def); /* the parser may cut it up */
		if (apply_option(cfg, mmp_options[i].val, def))
			abort(); /* a default its own parser refuses: the unit tests catch it */
	}
	cfg->command = MMP_CMD_RUN;
	cfg->n_ports = 1;
	cfg->listeners = cores > 0 ? (int)cores : 1;
	cfg->pin_dir = NULL; /* derived after parsing, from -p and -l */
}

int mmp_config_parse(int argc, char **argv, struct mmp_config *cfg)
{
	struct option long_opts[N_OPTS + 1];
	char shorts[2 * N_OPTS + 3];
	bool explicit_command = false, listen_given = false;
	int c;

	set_defaults(cfg);
	build_getopt(long_opts, shorts);
	if (argc > 1 && argv[1][0] != '-') {
		if (parse_command(argv[1], &cfg->command))
			return -EINVAL;
		explicit_command = true;
		argv++;
		argc--;
	}

	optind = 1;
	opterr = 0; /* we print our own errors */
	/* getopt_long_only: go-mmproxy unit files say -listeners 4, Go-style. */
	while ((c = getopt_long_only(argc, argv, shorts, long_opts, NULL)) != -1) {
		const struct mmp_option *d = desc_of(c == 'h' ? OPT_HELP : c);

		if (d && !(d->commands & ON(cfg->command)) && cfg->command != MMP_CMD_HELP) {
			fprintf(stderr, "mmproxy-bpf: %s does not take --%s (see mmproxy-bpf %s --help)\n",
				command_name(cfg->command), d->name, command_name(cfg->command));
			return -EINVAL;
		}
		if (c == 'h' || c == OPT_HELP) {
			cfg->help = true;
		} else if (c == ':') {
			fprintf(stderr, "mmproxy-bpf: option %s needs a value (see --help)\n", argv[optind - 1]);
			return -EINVAL;
		} else if (!d) {
			fprintf(stderr, "mmproxy-bpf: unknown option '%s' (see --help)\n", argv[optind - 1]);
			return -EINVAL;
		} else if (apply_option(cfg, c, optarg)) {
			return -EINVAL;
		}
		listen_given |= c == 'l';
	}
	if (optind < argc) {
		fprintf(stderr, "mmproxy-bpf: unexpected argument '%s' (see --help)\n", argv[optind]);
		return -EINVAL;
	}
	/*
	 * A datagram's source is not proven as a TCP peer's is: without -a any
	 * host may spoof a load balancer, open flows up to the fd limit and have
	 * replies reflected to a victim. Safe by default; opt out explicitly
	 * (docs/DESIGN.md §7b).
	 */
	if (cfg->command == MMP_CMD_RUN && (cfg->protocol == IPPROTO_UDP || cfg->tcp_and_udp) && !cfg->allowed_path &&
	    !cfg->udp_any_source) {
		fprintf(stderr, "mmproxy-bpf: -p %s without -a accepts spoofed datagrams from any source, which opens "
				"flows for anyone and reflects replies to any address: list your load balancers with "
				"-a FILE, or pass --udp-any-source to accept every source\n",
			cfg->tcp_and_udp ? "tcp,udp" : "udp");
		return -EINVAL;
	}
	/* UDP flows hold per-flow sockets in this process: no successor could take them (docs/DESIGN.md §15). */
	if (cfg->takeover && (cfg->protocol == IPPROTO_UDP || cfg->tcp_and_udp)) {
		fprintf(stderr, "mmproxy-bpf: --takeover serves -p tcp only (UDP flows cannot move to another process): "
				"restart a UDP instance the usual way, or drop --takeover\n");
		return -EINVAL;
	}
	/* Only --engine splice grows its relay pipes: a flow the tc engine may take keeps 64 KiB for its drain (§3d). */
	if (cfg->lift_pipe_limits && (cfg->engine != MMP_ENGINE_SPLICE || cfg->protocol == IPPROTO_UDP)) {
		fprintf(stderr, "mmproxy-bpf: --lift-pipe-limits sizes the relay pipes of TCP flows, which only "
				"--engine splice grows: run -p tcp (or tcp,udp) with --engine splice, or drop "
				"--lift-pipe-limits\n");
		return -EINVAL;
	}
	/* Two XDP programs cannot share an interface the way two reuseport listeners do. */
	if (cfg->takeover && cfg->n_xdp_ifaces) {
		fprintf(stderr, "mmproxy-bpf: --takeover with --xdp-iface is not supported (both processes would "
				"attach the gate): restart an instance with the XDP gate the usual way, or drop "
				"--takeover\n");
		return -EINVAL;
	}
	if (cfg->command == MMP_CMD_RUN || cfg->command == MMP_CMD_CHECK) {
		char msg[320];

		if (mmp_port_ranges_validate(cfg, msg, sizeof(msg))) {
			fprintf(stderr, "mmproxy-bpf: %s\n", msg);
			return -EINVAL;
		}
	}
	/*
	 * One pin directory per instance by default, so that instances with
	 * default flags never share maps (docs/DESIGN.md §6a). stats and cleanup
	 * derive it only when told -l; otherwise they look for instances.
	 */
	if (!cfg->pin_dir && (cfg->command == MMP_CMD_RUN || cfg->command == MMP_CMD_CHECK || listen_given)) {
		mmp_instance_pin_dir(mmp_config_protocol_name(cfg), &cfg->listen, cfg->listen_port_hi, cfg->pin_dir_derived,
				     sizeof(cfg->pin_dir_derived));
		cfg->pin_dir = cfg->pin_dir_derived;
	}
	if (cfg->all && cfg->pin_dir) {
		fprintf(stderr, "mmproxy-bpf: --all acts on every instance: drop --pin-dir and -l, or drop --all\n");
		return -EINVAL;
	}
	/* A bare --help is the overview; `CMD --help` keeps CMD, whose options main prints. */
	if (cfg->help && !explicit_command)
		cfg->command = MMP_CMD_HELP;
	return 0;
}
