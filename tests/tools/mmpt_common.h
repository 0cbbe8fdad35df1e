/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Code shared by the integration-test tools (tests/tools/mmpt-*.c),
 * implemented in mmpt_common.c, which is compiled once and linked into each
 * tool. SHA-256 comes from libcrypto (libssl-dev, scripts/deps.sh).
 *
 * Contents: SHA-256, the deterministic byte stream, ip:port parsing and
 * printing, PROXY v1/v2 header builders, C-escape decoding, small utilities,
 * and the bulk-transfer machine (struct xfer).
 */
#ifndef MMPT_COMMON_H
#define MMPT_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <openssl/evp.h>

/* ---------------------------------------------------------------- utils -- */

/* The tool's name, prefixed to die()'s messages ("mmpt" until set). */
extern const char *g_prog;

/* Prints "PROG: message" on stderr and exits with status 2. */
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/*
 * A TCP tool's first step: its name for die(), stdout line-buffered (the
 * tests read it while the tool runs), and SIGPIPE ignored (a write to a
 * closed peer is a result to report, not a reason to die).
 */
void tool_start(const char *name);

/* The value of option argv[i], for tools whose every option takes one. */
const char *opt_value(int argc, char **argv, int i);

/* CLOCK_MONOTONIC in milliseconds. */
uint64_t now_ms(void);

/* A number with an optional k/m/g (binary) suffix; dies when malformed. */
uint64_t parse_size(const char *s);

/* -------------------------------------------------------------- sha256 -- */

struct sha256 {
	EVP_MD_CTX *ctx; /* libcrypto's digest state: copy it with sha256_copy, not by assignment */
};

void sha256_init(struct sha256 *c);
void sha256_update(struct sha256 *c, const void *data, size_t len);
void sha256_copy(struct sha256 *dst, const struct sha256 *src);
/* Finish (once) and write the digest as 64 lowercase hex characters + NUL. */
void sha256_hex(struct sha256 *c, char out[65]);
void sha256_free(struct sha256 *c);

/* ------------------------------------------------- deterministic stream -- */

/*
 * A byte stream that depends only on the seed and the offset, whatever the
 * write sizes are: a sha256 of what a peer received can then be compared with
 * the sender's. xorshift64*: cheap enough for 64 MiB, and without a short
 * period that could hide a duplicated or dropped block.
 */
struct stream {
	uint64_t s;
	uint8_t carry[8];
	unsigned ncarry;
};

void stream_init(struct stream *st, uint64_t seed);
uint64_t stream_next64(struct stream *st);
void stream_fill(struct stream *st, uint8_t *out, size_t n);

/* ------------------------------------------------------------ addresses -- */

/*
 * Parse "1.2.3.4:80", "[::1]:80", "1.2.3.4" or "::1" (port 0 when absent and
 * allowed). Returns the sockaddr length.
 */
socklen_t parse_addr(const char *s, struct sockaddr_storage *ss, bool need_port);

/* "ADDR PORT", the format every tool prints (easy to split in shell). */
const char *fmt_addr(const struct sockaddr_storage *ss, char *buf, size_t len);

/* --------------------------------------------------------- PROXY headers -- */

/* v1: "PROXY TCP4 src dst sport dport\r\n" (TCP6 for IPv6). Returns length. */
size_t pp_build_v1(uint8_t *out, size_t cap, const struct sockaddr_storage *src,
		   const struct sockaddr_storage *dst);

/* The 12-byte PROXY v2 signature. */
extern const uint8_t pp2_sig[12];

/* v2 PROXY (src/dst given) or LOCAL (src == NULL). Returns length. */
size_t pp_build_v2(uint8_t *out, size_t cap, const struct sockaddr_storage *src,
		   const struct sockaddr_storage *dst);

/*
 * Append a TLV written "TYPE:HEX" (TYPE decimal or 0x.., HEX the value's
 * bytes, maybe empty) to the v2 header at hdr[0..*hlen), cap bytes of room,
 * and add its size to the header's length field. Dies on a bad spec.
 */
void pp_add_tlv(uint8_t *hdr, size_t *hlen, size_t cap, const char *spec);

/* Decode C escapes (\r \n \t \\ \0 \xHH) in s into out. Returns length. */
size_t unescape(const char *s, uint8_t *out, size_t cap);

/* ------------------------------------------------------- xfer machine -- */

/*
 * One side of a bulk transfer on a non-blocking socket, used by both the
 * client and the upstream so the two ends behave alike:
 *   - send `to_send` bytes of stream(seed), starting at once, or only after
 *     the peer's EOF when `after_eof` is set (this is what makes a half-close
 *     test: data must still flow towards the side that already sent its FIN);
 *   - then shutdown(SHUT_WR);
 *   - read and hash everything until EOF.
 * Done when both directions are finished. Never drops data when a write
 * would block (docs/DESIGN.md §5: an upstream that did skewed a measurement).
 */
#define XFER_CHUNK (64 * 1024)

struct xfer {
	int fd;
	uint64_t to_send, sent, recvd;
	uint64_t read_limit; /* stop reading once recvd reaches it (0: no limit) */
	bool after_eof, peer_eof, shut_done, failed;
	/* xfer_verify: compare what arrives with the peer's stream (its seed). */
	bool verify;
	uint64_t verify_seed, first_diff; /* first_diff: UINT64_MAX while equal */
	struct stream vgen;
	uint8_t diff_bytes[32]; /* what arrived at first_diff */
	size_t ndiff;
	int err; /* errno of the failure */
	struct stream gen;
	struct sha256 sent_sha, recv_sha;
	uint8_t pend[XFER_CHUNK];
	size_t pend_off, pend_len;
};

void xfer_init(struct xfer *x, int fd, uint64_t to_send, bool after_eof, uint64_t seed);
/* Check every received byte against stream(seed), as the peer generates it. */
void xfer_verify(struct xfer *x, uint64_t seed);

static inline bool xfer_done(const struct xfer *x)
{
	return x->failed || (x->peer_eof && x->shut_done);
}

static inline bool xfer_wants_write(const struct xfer *x)
{
	return !x->failed && !x->shut_done && (!x->after_eof || x->peer_eof);
}

/* Read (and hash, and check) what is there, until EAGAIN, EOF or read_limit. */
void xfer_readable(struct xfer *x);
/* Write what the socket takes; shutdown(SHUT_WR) once all was sent. */
void xfer_writable(struct xfer *x);

/*
 * "sent N SHA recv N SHA" (+ " error MSG" on failure); with xfer_verify also
 * " verify ok" or " first_diff OFFSET from OFFSET|-1".
 */
void xfer_report(struct xfer *x, char *out, size_t len);

#endif /* MMPT_COMMON_H */
