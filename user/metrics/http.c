// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <unistd.h>
#include <microhttpd.h>
#include "core/clock.h"
#include "core/histogram.h"
#include "lib/log.h"
#include "lib/sockaddr.h"
#include "metrics/http.h"
#include "metrics/prom.h"
#include "metrics/snapshot.h"
#include "policy/policy.h"

struct mmp_metrics {
	struct MHD_Daemon *d; /* NULL until mmp_metrics_serve */
	int listen_fd; /* bound by mmp_metrics_start; -1 once the daemon has it */
	struct sockaddr_storage addr;
	const char *pin_dir;
	const struct mmp_policy *policy;
	/*
	 * The flow maps are walked at most once a second, however many scrapes
	 * come: a walk costs a lookup per flow. The daemon serves every request
	 * from its one polling thread, so this needs no lock.
	 */
	struct mmp_snapshot flows;
	uint64_t flows_ns; /* CLOCK_MONOTONIC of the last walk; 0: none yet */
};

#define FLOW_WALK_MIN_NS 1000000000ULL

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned int status, const char *type, char *body,
			     size_t len)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	enum MHD_Result ret;

	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", type);
	ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

static char *render(struct mmp_metrics *m, size_t *len)
{
	struct mmp_hist_snapshot h;
	struct mmp_prom_extra x = { .handoff = &h };
	struct mmp_snapshot s;
	char *buf = NULL;
	FILE *f;

	f = open_memstream(&buf, len);
	if (!f)
		return NULL;
	/* -ENOENT early at start: the series that exist are served. */
	if (!m->flows_ns || mmp_now_ns() - m->flows_ns >= FLOW_WALK_MIN_NS) {
		mmp_snapshot_read(m->pin_dir, &m->flows);
		m->flows_ns = mmp_now_ns();
	}
	mmp_snapshot_read_counters(m->pin_dir, &s);
	mmp_snapshot_copy_flows(&s, &m->flows);
	mmp_hist_read(&mmp_handoff_latency, &h);
	mmp_policy_reloads(m->policy, &x.reloads_ok, &x.reloads_failed);
	mmp_prom_write(f, &s, &x);
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
				  const char *version, const char *upload, size_t *upload_len, void **state)
{
	struct mmp_metrics *m = cls;
	size_t len = 0;
	char *body;

	if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
		body = strdup("only GET is served\n");
		return body ? reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain", body, strlen(body)) : MHD_NO;
	}
	if (strcmp(url, "/metrics")) {
		body = strdup("not found: the metrics are at /metrics\n");
		return body ? reply(conn, MHD_HTTP_NOT_FOUND, "text/plain", body, strlen(body)) : MHD_NO;
	}
	body = render(m, &len);
	if (!body)
		return MHD_NO;
	return reply(conn, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", body, len);
}

/*
 * Bound here, served by mmp_metrics_serve: the port is bound with the start's
 * capabilities, the thread created after they are dropped, since
 * capabilities are per thread (docs/DESIGN.md §9).
 */
int mmp_metrics_start(const struct sockaddr_storage *addr, const char *pin_dir, const struct mmp_policy *policy,
		      struct mmp_metrics **out)
{
	socklen_t alen = addr->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
	struct mmp_metrics *m = calloc(1, sizeof(*m));
	char a[MMP_ADDRSTRLEN];
	int one = 1, err;

	if (!m)
		return -ENOMEM;
	m->pin_dir = pin_dir;
	m->policy = policy;
	m->addr = *addr;
	m->listen_fd = socket(addr->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (m->listen_fd < 0) {
		err = -errno;
		goto fail;
	}
	/* As libmicrohttpd binds its own: address reuse, and [::] for IPv6 only. */
	setsockopt(m->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (addr->ss_family == AF_INET6)
		setsockopt(m->listen_fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(m->listen_fd, (const struct sockaddr *)addr, alen) || listen(m->listen_fd, SOMAXCONN)) {
		err = -errno;
		goto fail;
	}
	*out = m;
	return 0;
fail:
	pr_err("failed to serve metrics on %s: %s (is the port in use? choose another --metrics ADDR:PORT)",
	       mmp_fmt_addr((const void *)addr, a), strerror(-err));
	if (m->listen_fd >= 0)
		close(m->listen_fd);
	free(m);
	return err;
}

int mmp_metrics_serve(struct mmp_metrics *m)
{
	unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL;
	char a[MMP_ADDRSTRLEN];

	if (!m)
		return 0;
	if (m->addr.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	/* MHD's own thread: a slow scraper never holds up the signal loop or a listener. */
	m->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, m, MHD_OPTION_LISTEN_SOCKET, m->listen_fd,
				MHD_OPTION_CONNECTION_LIMIT, 16U, MHD_OPTION_CONNECTION_TIMEOUT, 10U, MHD_OPTION_END);
	if (!m->d) {
		pr_err("failed to start the metrics server on %s (out of memory or threads?)",
		       mmp_fmt_addr((const void *)&m->addr, a));
		return -ENOMEM;
	}
	m->listen_fd = -1; /* the daemon's now: MHD_stop_daemon closes it */
	pr_info("serving Prometheus metrics on http://%s/metrics", mmp_fmt_addr((const void *)&m->addr, a));
	return 0;
}

void mmp_metrics_stop(struct mmp_metrics *m)
{
	if (!m)
		return;
	if (m->d)
		MHD_stop_daemon(m->d);
	if (m->listen_fd >= 0)
		close(m->listen_fd);
	free(m);
}
