/* SPDX-License-Identifier: GPL-2.0 */
/*
 * --metrics ADDR:PORT: GET /metrics in the Prometheus text format, served by
 * libmicrohttpd on its own thread; every other path is a 404. Each scrape
 * reads the pinned maps afresh (metrics/snapshot.h).
 */
#ifndef MMP_METRICS_HTTP_H
#define MMP_METRICS_HTTP_H

#include <sys/socket.h>

struct mmp_policy;
struct mmp_metrics;

/* Bind the port. Returns 0 with *out set, or a negative errno after logging the cause and the fix. */
int mmp_metrics_start(const struct sockaddr_storage *addr, const char *pin_dir, const struct mmp_policy *policy,
		      struct mmp_metrics **out);
/* Serve on the bound port from libmicrohttpd's thread (after the capability drop). NULL is fine. */
int mmp_metrics_serve(struct mmp_metrics *m);
/* Stop and free, started or only bound. NULL is fine. */
void mmp_metrics_stop(struct mmp_metrics *m);

#endif
