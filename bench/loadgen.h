/* SPDX-License-Identifier: GPL-2.0 */
/*
 * loadgen: a TCP load generator in the style of tcpkali. Each worker thread
 * drives its own connections with its own epoll instance; the main thread
 * only sequences the phases (warm-up, measure, stop) and reports.
 */
#ifndef MMPB_LOADGEN_H
#define MMPB_LOADGEN_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "addr.h"
#include "cpustat.h"
#include "histogram.h"

enum lg_mode {
	LG_PINGPONG, /* fixed-size messages, echoed, pipeline deep */
	LG_BULK, /* stream bytes up, down or both */
	LG_CONNRATE, /* connect, header, one request/response, close */
	LG_STREAM, /* tcpkali's two-way stream: write flat out and read the echo, both at once */
	LG_HOLD, /* hold many connections open, each pinging once per interval */
};

enum lg_dir {
	LG_UP = 1,
	LG_DOWN = 2,
	LG_BOTH = 3,
};

/* Phases the main thread announces to the workers through lg_phase. */
enum lg_phase {
	LG_WARMUP,
	LG_MEASURE,
	LG_STOP,
};

#define LG_MAX_WATCH 8

struct lg_config {
	enum lg_mode mode;
	struct sockaddr_storage target;
	int proxy; /* HDR_NONE, HDR_V1 or HDR_V2 */
	bool have_clients;
	struct cidr clients;
	uint64_t client_offset;
	bool have_sources;
	struct cidr sources; /* local addresses to connect from, in turn */
	unsigned int conns;
	double connect_rate; /* per second, all threads together; 0: unlimited */
	double duration;
	double warmup;
	unsigned int threads;
	unsigned int size; /* message size, pingpong and connrate */
	unsigned int pipeline; /* messages in flight per connection */
	double interval; /* hold: seconds between one connection's messages */
	int direction; /* enum lg_dir, bulk only */
	bool verify; /* compare received bytes with what is expected */
	pid_t watch[LG_MAX_WATCH]; /* processes whose CPU time is reported */
	unsigned int nwatch;
	bool progress;
};

/*
 * Counters of one worker. Only the worker writes them (with relaxed atomic
 * stores, so the progress line may read them); the main thread reads the
 * totals after joining.
 */
struct lg_stats {
	uint64_t tx_bytes;
	uint64_t rx_bytes;
	uint64_t msgs; /* messages echoed, or connections completed in connrate */
	uint64_t conns_opened; /* connections established */
	uint64_t connect_errors;
	uint64_t connect_refused; /* of which: ECONNREFUSED, a SYN answered by a reset */
	uint64_t connect_reset; /* of which: ECONNRESET, reset once the handshake was done */
	uint64_t io_errors; /* resets, unexpected EOF, failed reads or writes */
	uint64_t io_eof; /* of which: the peer closed while we expected data */
	uint64_t io_reset; /* of which: ECONNRESET or EPIPE */
	uint64_t verified_bytes;
	uint64_t verify_errors; /* received bytes that differ from those expected */
	uint64_t alive; /* hold: connections echoed a message while measuring, counted at the end */
	struct hist lat; /* ns: message round trip, or whole connection in connrate */
};

struct lg_thread {
	pthread_t tid;
	unsigned int idx;
	const struct lg_config *cfg;
	unsigned int target_conns; /* connections this worker keeps open */
	double rate; /* this worker's share of connect_rate */
	uint64_t open_conns; /* established now; read by the main thread */
	int error; /* non-zero when the worker could not start */
	struct lg_stats stats;
};

/* The current enum lg_phase, written by the main thread only. */
extern int lg_phase;

/* The next unique client number (header address and pattern origin). */
uint64_t lg_next_client(void);

void *lg_worker(void *arg);

/* Totals over one measured interval, for the report. */
struct lg_result {
	struct lg_stats total;
	double elapsed; /* seconds measured */
	uint64_t open_at_end; /* connections established when measuring ended */
	uint64_t client_next; /* first client number never used: the next run's offset */
	struct cpu_used cpu;
};

void lg_report(const struct lg_config *cfg, const struct lg_result *res);

#define STAT_ADD(field, n) __atomic_store_n(&(field), (field) + (n), __ATOMIC_RELAXED)

#endif
