// SPDX-License-Identifier: GPL-2.0
/* udpgen: options, threads, the phase clock and CPU samples. See udpgen.h. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "clock.h"
#include "cpustat.h"
#include "pattern.h"
#include "proxyhdr.h"
#include "udpgen.h"

int ug_phase = UG_WARMUP;

static void usage(FILE *f)
{
	fprintf(f,
		"usage: udpgen stream [options] TARGET --sink ADDR:PORT [--sink ...]\n"
		"       udpgen rr [options] TARGET\n"
		"       udpgen echo -l ADDR:PORT [-l ...] [--threads N]\n"
		"  -c, --flows N            flows, each its own socket and client [50]\n"
		"  -s, --size N             payload bytes per datagram, >= %d [1200]\n"
		"  -T, --duration S         measured seconds [10]\n"
		"      --warmup S           seconds before measuring [1]\n"
		"      --threads N          sender threads, or echo threads [online CPUs]\n"
		"      --proxy KIND         none, v2 (every datagram), v2-first (first of a\n"
		"                           flow only, Spectrum), spp (Cloudflare SPP) [none]\n"
		"      --client-range CIDR  client addresses for the headers [203.0.113.0/24]\n"
		"      --client-offset N    first client number [0]\n"
		"      --rate PPS           stream: datagrams per second in all, 0 = flat out [0]\n"
		"      --sink ADDR:PORT     stream: count arrivals here (the upstream address)\n"
		"      --sink-netns PATH    stream: bind the sinks in this network namespace\n"
		"                           (/run/netns/NAME: an upstream in another netns)\n"
		"      --window W           rr: requests in flight per flow [1]\n"
		"      --timeout S          rr: a request unanswered this long is lost [0.2]\n"
		"      --watch-pid PID      report CPU seconds of PID (repeatable, summed)\n"
		"  -q, --quiet              no progress line even on a terminal\n"
		"Prints a human summary and one line 'JSON {...}'.\n",
		UG_TAG_LEN);
}

enum {
	OPT_WARMUP = 256,
	OPT_THREADS,
	OPT_PROXY,
	OPT_CLIENT_RANGE,
	OPT_CLIENT_OFFSET,
	OPT_RATE,
	OPT_SINK,
	OPT_SINK_NETNS,
	OPT_WINDOW,
	OPT_TIMEOUT,
	OPT_WATCH,
};

static const struct option options[] = {
	{ "flows", required_argument, NULL, 'c' },
	{ "size", required_argument, NULL, 's' },
	{ "duration", required_argument, NULL, 'T' },
	{ "warmup", required_argument, NULL, OPT_WARMUP },
	{ "threads", required_argument, NULL, OPT_THREADS },
	{ "proxy", required_argument, NULL, OPT_PROXY },
	{ "client-range", required_argument, NULL, OPT_CLIENT_RANGE },
	{ "client-offset", required_argument, NULL, OPT_CLIENT_OFFSET },
	{ "rate", required_argument, NULL, OPT_RATE },
	{ "sink", required_argument, NULL, OPT_SINK },
	{ "sink-netns", required_argument, NULL, OPT_SINK_NETNS },
	{ "listen", required_argument, NULL, 'l' },
	{ "window", required_argument, NULL, OPT_WINDOW },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "watch-pid", required_argument, NULL, OPT_WATCH },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ 0 },
};

static int parse_args(int argc, char **argv, struct ug_config *cfg)
{
	int opt, quiet = 0;
	double v;

	*cfg = (struct ug_config){
		.flows = 50, .size = 1200, .duration = 10, .warmup = 1, .window = 1,
		.timeout = 0.2, .threads = cli_default_threads(),
	};
	if (argc < 2)
		goto usage;
	if (!strcmp(argv[1], "stream"))
		cfg->mode = UG_STREAM;
	else if (!strcmp(argv[1], "rr"))
		cfg->mode = UG_RR;
	else if (!strcmp(argv[1], "echo"))
		cfg->mode = UG_ECHO;
	else if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))
		goto help;
	else
		goto usage;
	optind = 2;
	while ((opt = getopt_long(argc, argv, "c:s:T:l:qh", options, NULL)) != -1) {
		switch (opt) {
		case 'c':
			if (cli_num(optarg, 1, 1 << 20, &v))
				goto bad;
			cfg->flows = (unsigned int)v;
			break;
		case 's':
			if (cli_num(optarg, UG_TAG_LEN, UG_MAX_DGRAM - PROXYHDR_MAX, &v))
				goto bad;
			cfg->size = (unsigned int)v;
			break;
		case 'T':
			if (cli_num(optarg, 0.1, 1e6, &cfg->duration))
				goto bad;
			break;
		case OPT_WARMUP:
			if (cli_num(optarg, 0, 1e6, &cfg->warmup))
				goto bad;
			break;
		case OPT_THREADS:
			if (cli_num(optarg, 1, 256, &v))
				goto bad;
			cfg->threads = (unsigned int)v;
			break;
		case OPT_PROXY:
			cfg->proxy = hdr_kind_parse(optarg);
			if (cfg->proxy < 0 || cfg->proxy == HDR_V1)
				goto bad;
			break;
		case OPT_CLIENT_RANGE:
			if (cidr_parse(optarg, &cfg->clients))
				goto bad;
			cfg->have_clients = true;
			break;
		case OPT_CLIENT_OFFSET:
			if (cli_num(optarg, 0, 1e18, &v))
				goto bad;
			cfg->client_offset = (uint64_t)v;
			break;
		case OPT_RATE:
			if (cli_num(optarg, 0, 1e9, &cfg->rate))
				goto bad;
			break;
		case OPT_SINK:
		case 'l':
			if (cfg->nlisten == UG_MAX_ADDRS ||
			    addr_parse(optarg, &cfg->listen[cfg->nlisten]))
				goto bad;
			cfg->nlisten++;
			break;
		case OPT_SINK_NETNS:
			cfg->sink_netns = optarg;
			break;
		case OPT_WINDOW:
			if (cli_num(optarg, 1, 1 << 16, &v))
				goto bad;
			cfg->window = (unsigned int)v;
			break;
		case OPT_TIMEOUT:
			if (cli_num(optarg, 0.001, 60, &cfg->timeout))
				goto bad;
			break;
		case OPT_WATCH:
			if (cli_watch_pid(optarg, cfg->watch, &cfg->nwatch, UG_MAX_WATCH))
				goto bad;
			break;
		case 'q':
			quiet = 1;
			break;
		case 'h':
			goto help;
		default:
			goto usage;
		}
	}
	cfg->progress = !quiet && isatty(STDOUT_FILENO);
	if (cfg->mode == UG_ECHO) {
		if (!cfg->nlisten || optind != argc)
			goto usage;
		return 0;
	}
	if (optind != argc - 1 || addr_parse(argv[optind], &cfg->target)) {
		fprintf(stderr, "udpgen: expected one target ADDR:PORT\n");
		goto usage;
	}
	if (cfg->threads > cfg->flows)
		cfg->threads = cfg->flows;
	return 0;
bad:
	fprintf(stderr, "udpgen: bad value for %s: '%s'\n", argv[optind - 1], optarg);
	return -EINVAL;
help:
	usage(stdout);
	exit(0);
usage:
	usage(stderr);
	return -EINVAL;
}

static void sum(const struct ug_thread *t, unsigned int n, struct ug_stats *s)
{
	unsigned int i;

	memset(s, 0, offsetof(struct ug_stats, lat));
	for (i = 0; i < n; i++) {
		const struct ug_stats *x = &t[i].stats;

		s->tx_pkts += __atomic_load_n(&x->tx_pkts, __ATOMIC_RELAXED);
		s->tx_bytes += __atomic_load_n(&x->tx_bytes, __ATOMIC_RELAXED);
		s->rx_pkts += __atomic_load_n(&x->rx_pkts, __ATOMIC_RELAXED);
		s->rx_bytes += __atomic_load_n(&x->rx_bytes, __ATOMIC_RELAXED);
		s->lost += __atomic_load_n(&x->lost, __ATOMIC_RELAXED);
		s->late += __atomic_load_n(&x->late, __ATOMIC_RELAXED);
		s->bad += __atomic_load_n(&x->bad, __ATOMIC_RELAXED);
		s->send_errors += __atomic_load_n(&x->send_errors, __ATOMIC_RELAXED);
	}
}

/* Sleeps until `until`, with a progress line once a second on a terminal. */
static void wait_until(const struct ug_config *cfg, const struct ug_thread *t, unsigned int n,
		       uint64_t until, const char *phase)
{
	static struct ug_stats last;
	static uint64_t last_t;
	struct ug_stats s;
	uint64_t now = now_ns(), next;

	if (!last_t)
		last_t = now;
	while (now < until) {
		next = cfg->progress && last_t + NSEC_PER_SEC < until ? last_t + NSEC_PER_SEC : until;
		sleep_until_ns(next);
		now = now_ns();
		if (!cfg->progress || now < last_t + NSEC_PER_SEC)
			continue;
		sum(t, n, &s);
		if (s.tx_pkts < last.tx_pkts || s.rx_pkts < last.rx_pkts)
			memset(&last, 0, sizeof(last));
		printf("\r%-9s tx %10.0f pkt/s  rx %10.0f pkt/s  lost %llu  bad %llu ", phase,
		       (double)(s.tx_pkts - last.tx_pkts) * 1e9 / (double)(now - last_t),
		       (double)(s.rx_pkts - last.rx_pkts) * 1e9 / (double)(now - last_t),
		       (unsigned long long)s.lost, (unsigned long long)s.bad);
		fflush(stdout);
		last = s;
		last_t = now;
	}
}

/*
 * enter_netns PATH: moves the calling thread into the namespace at PATH and
 * returns an fd of the one it left (for leave_netns), or -errno. setns() is
 * per thread, so senders already started keep theirs.
 */
static int enter_netns(const char *path)
{
	int old, fd, err;

	old = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (old < 0)
		return -errno;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || setns(fd, CLONE_NEWNET)) {
		err = -errno;
		if (fd >= 0)
			close(fd);
		close(old);
		return err;
	}
	close(fd);
	return old;
}

/*
 * Binds the sink sockets before any sender starts; with --sink-netns in that
 * namespace (a socket keeps the namespace it was made in), as the upstream
 * of a proxy whose upstream lives elsewhere (bench/bridged.sh's container).
 */
static int open_sinks(const struct ug_config *cfg, struct ug_thread *sink)
{
	int fd, home = -1, err = 0;
	unsigned int i;
	char name[64];

	if (cfg->sink_netns) {
		home = enter_netns(cfg->sink_netns);
		if (home < 0) {
			fprintf(stderr, "udpgen: --sink-netns %s: %s (a path such as /run/netns/NAME; needs CAP_SYS_ADMIN)\n",
				cfg->sink_netns, strerror(-home));
			return home;
		}
	}
	for (i = 0; i < cfg->nlisten; i++) {
		fd = ug_bound_socket(&cfg->listen[i]);
		if (fd < 0) {
			fprintf(stderr, "udpgen: sink %s: %s\n",
				addr_str(&cfg->listen[i], name, sizeof(name)), strerror(-fd));
			err = fd;
			break;
		}
		sink->sink_fds[i] = fd;
	}
	if (home >= 0) {
		if (setns(home, CLONE_NEWNET) && !err) {
			err = -errno;
			fprintf(stderr, "udpgen: back from --sink-netns: %s\n", strerror(-err));
		}
		close(home);
	}
	return err;
}

int main(int argc, char **argv)
{
	struct ug_result res = { 0 };
	struct cpu_sample c0, c1;
	struct ug_config cfg;
	struct ug_thread *t;
	unsigned int i, nthreads, per, extra, first = 0;
	uint64_t t_start, t_end;
	int err;

	if (parse_args(argc, argv, &cfg))
		return 2;
	signal(SIGPIPE, SIG_IGN);
	pattern_init();
	if (cfg.mode == UG_ECHO)
		return ug_echo_run(&cfg) ? 1 : 0;

	/* Senders or rr clients, plus one sink thread in stream mode. */
	nthreads = cfg.threads + (cfg.mode == UG_STREAM && cfg.nlisten);
	t = calloc(nthreads, sizeof(*t));
	if (!t)
		return 1;
	per = cfg.flows / cfg.threads;
	extra = cfg.flows % cfg.threads;
	for (i = 0; i < nthreads; i++) {
		t[i].idx = i;
		t[i].cfg = &cfg;
		hist_init(&t[i].stats.lat);
		if (i < cfg.threads) {
			t[i].first_flow = first;
			t[i].nflows = per + (i < extra);
			first += t[i].nflows;
		} else {
			t[i].sink = true;
			if (open_sinks(&cfg, &t[i]))
				return 1;
		}
	}
	for (i = nthreads; i-- > 0;) {
		void *(*fn)(void *) = t[i].sink ? ug_stream_sink :
				      cfg.mode == UG_RR ? ug_rr_client : ug_stream_sender;

		err = pthread_create(&t[i].tid, NULL, fn, &t[i]);
		if (err) {
			fprintf(stderr, "udpgen: pthread_create: %s\n", strerror(err));
			return 1;
		}
	}
	wait_until(&cfg, t, nthreads, now_ns() + (uint64_t)(cfg.warmup * 1e9), "warm-up");
	cpustat_sample(cfg.watch, cfg.nwatch, &c0);
	t_start = now_ns();
	__atomic_store_n(&ug_phase, UG_MEASURE, __ATOMIC_RELEASE);
	wait_until(&cfg, t, nthreads, t_start + (uint64_t)(cfg.duration * 1e9), "measuring");
	__atomic_store_n(&ug_phase, UG_STOP, __ATOMIC_RELEASE);
	t_end = now_ns();
	cpustat_sample(cfg.watch, cfg.nwatch, &c1);
	if (cfg.progress)
		printf("\n");
	for (i = 0; i < nthreads; i++) {
		pthread_join(t[i].tid, NULL);
		if (t[i].error) {
			fprintf(stderr, "udpgen: thread %u: %s\n", i, strerror(t[i].error));
			return 1;
		}
	}
	sum(t, nthreads, &res.total);
	hist_init(&res.total.lat);
	for (i = 0; i < nthreads; i++)
		hist_merge(&res.total.lat, &t[i].stats.lat);
	res.elapsed = (double)(t_end - t_start) / 1e9;
	cpustat_used(&c0, &c1, cfg.nwatch, &res.cpu);
	ug_report(&cfg, &res);
	free(t);
	return 0;
}
