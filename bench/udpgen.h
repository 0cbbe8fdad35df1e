/* SPDX-License-Identifier: GPL-2.0 */
/*
 * udpgen: UDP load for a PROXY-protocol proxy.
 *   stream  flows send datagrams as fast as allowed; an in-process sink
 *           bound to the upstream address counts what arrives (loss);
 *   rr      request/response: each flow keeps W requests in flight to an
 *           echo upstream and times each answer;
 *   echo    the upstream side: returns every datagram to its sender.
 * Every datagram's payload starts with a tag (flow, sequence) so receivers
 * can tell measured from warm-up traffic and check echoes byte for byte.
 */
#ifndef MMPB_UDPGEN_H
#define MMPB_UDPGEN_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "addr.h"
#include "cpustat.h"
#include "histogram.h"

enum ug_mode {
	UG_STREAM,
	UG_RR,
	UG_ECHO,
};

enum ug_phase {
	UG_WARMUP,
	UG_MEASURE,
	UG_STOP,
};

#define UG_MAX_ADDRS 8
#define UG_MAX_WATCH 8
#define UG_TAG_LEN 16
#define UG_TAG_MAGIC 0x4d4d5042u /* "MMPB" */
#define UG_SEQ_MEASURED (1ull << 63) /* sent while measuring */
#define UG_MAX_DGRAM 65507

/* The first UG_TAG_LEN bytes of every payload, in network byte order. */
struct ug_tag {
	uint32_t magic;
	uint32_t flow;
	uint64_t seq;
};

struct ug_config {
	enum ug_mode mode;
	struct sockaddr_storage target;
	struct sockaddr_storage listen[UG_MAX_ADDRS]; /* echo: listen; stream: sinks */
	unsigned int nlisten;
	const char *sink_netns; /* stream: bind the sinks in this netns, or NULL */
	int proxy; /* enum hdr_kind */
	bool have_clients;
	struct cidr clients;
	uint64_t client_offset;
	unsigned int flows;
	unsigned int size; /* payload bytes after any header, >= UG_TAG_LEN */
	double rate; /* stream: datagrams per second, all flows; 0: unlimited */
	unsigned int window; /* rr: requests in flight per flow */
	double timeout; /* rr: seconds before a request counts as lost */
	double duration;
	double warmup;
	unsigned int threads;
	pid_t watch[UG_MAX_WATCH];
	unsigned int nwatch;
	bool progress;
};

struct ug_stats {
	uint64_t tx_pkts, tx_bytes; /* payload bytes, headers excluded */
	uint64_t rx_pkts, rx_bytes; /* measured datagrams that arrived */
	uint64_t lost; /* rr: timed out */
	uint64_t late; /* rr: answers after their timeout */
	uint64_t bad; /* unparseable, wrong flow, or echo bytes that differ */
	uint64_t send_errors;
	struct hist lat; /* rr: ns */
};

struct ug_thread {
	pthread_t tid;
	unsigned int idx;
	const struct ug_config *cfg;
	unsigned int first_flow, nflows; /* this thread's flows */
	bool sink; /* stream: this thread is the sink */
	int sink_fds[UG_MAX_ADDRS]; /* stream sink: bound before any sender starts */
	int error;
	struct ug_stats stats;
};

extern int ug_phase;

void *ug_stream_sender(void *arg);
void *ug_stream_sink(void *arg);
void *ug_rr_client(void *arg);
/* Runs the echo server until killed; returns non-zero on set-up failure. */
int ug_echo_run(const struct ug_config *cfg);

/*
 * Writes the header the config asks for (PROXY v2 DGRAM or SPP) for flow
 * number flow into buf; returns its length, 0 for none.
 */
size_t ug_build_header(const struct ug_config *cfg, unsigned int flow, uint8_t *buf);
/* A non-blocking UDP socket connected to the target. Returns fd or -errno. */
int ug_flow_socket(const struct ug_config *cfg);
/* A non-blocking UDP socket bound to ss (SO_REUSEPORT). Returns fd or -errno. */
int ug_bound_socket(const struct sockaddr_storage *ss);
/* The tag, and the pattern bytes that follow it, of datagram (flow, seq). */
void ug_payload_put(uint8_t *tag, uint32_t flow, uint64_t seq);
const uint8_t *ug_payload_body(uint32_t flow, uint64_t seq);
/* Reads the tag at p; false when len is too short or the magic is wrong. */
bool ug_tag_get(const uint8_t *p, size_t len, uint32_t *flow, uint64_t *seq);

struct ug_result {
	struct ug_stats total;
	double elapsed;
	struct cpu_used cpu;
};

void ug_report(const struct ug_config *cfg, const struct ug_result *res);

#define STAT_ADD(field, n) __atomic_store_n(&(field), (field) + (n), __ATOMIC_RELAXED)

#endif
