/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Code shared by the integration-test tools (tests/tools/mmpt-*.c): see
 * mmpt_common.h. Compiled once and linked into each tool.
 */
#include "mmpt_common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

/* ---------------------------------------------------------------- utils -- */

const char *g_prog = "mmpt";

void die(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s: ", g_prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

/*
 * A TCP tool's first step: its name for die(), stdout line-buffered (the
 * tests read it while the tool runs), and SIGPIPE ignored (a write to a
 * closed peer is a result to report, not a reason to die).
 */
void tool_start(const char *name)
{
	g_prog = name;
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
}

/* The value of option argv[i], for tools whose every option takes one. */
const char *opt_value(int argc, char **argv, int i)
{
	if (i + 1 >= argc)
		die("missing value for %s", argv[i]);
	return argv[i + 1];
}

uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

uint64_t parse_size(const char *s)
{
	char *end;
	uint64_t v = strtoull(s, &end, 0);
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	}
	if (*end)
		die("bad size '%s'", s);
	return v;
}

/* -------------------------------------------------------------- sha256 -- */

/*
 * libcrypto's SHA-256: about 1.8 GB/s here (openssl speed -evp sha256),
 * where the hand-written one it replaced ran at about 200 MB/s. That one
 * held the tools' streams below flat out, so the tests never saw a hand-off
 * start with every buffer full (issue 24).
 */
void sha256_init(struct sha256 *c)
{
	c->ctx = EVP_MD_CTX_new();
	if (!c->ctx || EVP_DigestInit_ex(c->ctx, EVP_sha256(), NULL) != 1)
		die("sha256: libcrypto could not start a digest");
}

void sha256_update(struct sha256 *c, const void *data, size_t len)
{
	if (EVP_DigestUpdate(c->ctx, data, len) != 1)
		die("sha256: libcrypto could not hash %zu bytes", len);
}

/* dst continues from where src is (dst's own state is dropped). */
void sha256_copy(struct sha256 *dst, const struct sha256 *src)
{
	if (EVP_MD_CTX_copy_ex(dst->ctx, src->ctx) != 1)
		die("sha256: libcrypto could not copy a digest");
}

/* Finish and write the digest as 64 lowercase hex characters + NUL. */
void sha256_hex(struct sha256 *c, char out[65])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;

	if (EVP_DigestFinal_ex(c->ctx, md, &n) != 1 || n != 32)
		die("sha256: libcrypto could not finish a digest");
	for (unsigned int i = 0; i < n; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
}

void sha256_free(struct sha256 *c)
{
	EVP_MD_CTX_free(c->ctx);
	c->ctx = NULL;
}

/* ------------------------------------------------- deterministic stream -- */

void stream_init(struct stream *st, uint64_t seed)
{
	st->s = seed * 0x9E3779B97F4A7C15ULL + 0x2545F4914F6CDD1DULL;
	if (!st->s)
		st->s = 1;
	st->ncarry = 0;
}

uint64_t stream_next64(struct stream *st)
{
	st->s ^= st->s >> 12;
	st->s ^= st->s << 25;
	st->s ^= st->s >> 27;
	return st->s * 0x2545F4914F6CDD1DULL;
}

void stream_fill(struct stream *st, uint8_t *out, size_t n)
{
	while (n && st->ncarry) {
		*out++ = st->carry[8 - st->ncarry--];
		n--;
	}
	while (n >= 8) {
		uint64_t v = stream_next64(st);
		memcpy(out, &v, 8);
		out += 8;
		n -= 8;
	}
	if (n) {
		uint64_t v = stream_next64(st);
		memcpy(st->carry, &v, 8);
		st->ncarry = 8;
		while (n--)
			*out++ = st->carry[8 - st->ncarry--];
	}
}

/* ------------------------------------------------------------ addresses -- */

/*
 * Parse "1.2.3.4:80", "[::1]:80", "1.2.3.4" or "::1" (port 0 when absent and
 * allowed). Returns the sockaddr length.
 */
socklen_t parse_addr(const char *s, struct sockaddr_storage *ss, bool need_port)
{
	char host[INET6_ADDRSTRLEN + 2];
	const char *port = NULL;
	memset(ss, 0, sizeof(*ss));
	if (s[0] == '[') {
		const char *rb = strchr(s, ']');
		if (!rb || (size_t)(rb - s - 1) >= sizeof(host))
			die("bad address '%s'", s);
		memcpy(host, s + 1, rb - s - 1);
		host[rb - s - 1] = 0;
		if (rb[1] == ':')
			port = rb + 2;
		else if (rb[1])
			die("bad address '%s'", s);
	} else {
		const char *colon = strrchr(s, ':');
		if (colon && strchr(s, ':') == colon) { /* exactly one colon: v4:port */
			if ((size_t)(colon - s) >= sizeof(host))
				die("bad address '%s'", s);
			memcpy(host, s, colon - s);
			host[colon - s] = 0;
			port = colon + 1;
		} else {
			if (strlen(s) >= sizeof(host))
				die("bad address '%s'", s);
			strcpy(host, s);
		}
	}
	if (need_port && !port)
		die("address '%s' needs a port", s);
	unsigned p = port ? (unsigned)atoi(port) : 0;
	struct sockaddr_in *in = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
	if (inet_pton(AF_INET, host, &in->sin_addr) == 1) {
		in->sin_family = AF_INET;
		in->sin_port = htons(p);
		return sizeof(*in);
	}
	if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(p);
		return sizeof(*in6);
	}
	die("bad address '%s'", s);
	return 0;
}

/* "ADDR PORT", the format every tool prints (easy to split in shell). */
const char *fmt_addr(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN];
	unsigned port;
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)ss;
		inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		port = ntohs(in->sin_port);
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)ss;
		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		port = ntohs(in6->sin6_port);
	} else {
		snprintf(buf, len, "unknown 0");
		return buf;
	}
	snprintf(buf, len, "%s %u", host, port);
	return buf;
}

/* --------------------------------------------------------- PROXY headers -- */

/* v1: "PROXY TCP4 src dst sport dport\r\n" (TCP6 for IPv6). Returns length. */
size_t pp_build_v1(uint8_t *out, size_t cap, const struct sockaddr_storage *src,
			  const struct sockaddr_storage *dst)
{
	char sa[INET6_ADDRSTRLEN], da[INET6_ADDRSTRLEN];
	unsigned sp, dp;
	const char *fam;
	if (src->ss_family != dst->ss_family)
		die("v1 header: source and destination families differ");
	if (src->ss_family == AF_INET) {
		const struct sockaddr_in *s4 = (const void *)src, *d4 = (const void *)dst;
		inet_ntop(AF_INET, &s4->sin_addr, sa, sizeof(sa));
		inet_ntop(AF_INET, &d4->sin_addr, da, sizeof(da));
		sp = ntohs(s4->sin_port);
		dp = ntohs(d4->sin_port);
		fam = "TCP4";
	} else {
		const struct sockaddr_in6 *s6 = (const void *)src, *d6 = (const void *)dst;
		inet_ntop(AF_INET6, &s6->sin6_addr, sa, sizeof(sa));
		inet_ntop(AF_INET6, &d6->sin6_addr, da, sizeof(da));
		sp = ntohs(s6->sin6_port);
		dp = ntohs(d6->sin6_port);
		fam = "TCP6";
	}
	int n = snprintf((char *)out, cap, "PROXY %s %s %s %u %u\r\n", fam, sa, da, sp, dp);
	if (n < 0 || (size_t)n >= cap)
		die("v1 header too long");
	return (size_t)n;
}

const uint8_t pp2_sig[12] = { 0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D,
				     0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A };

/* v2 PROXY (src/dst given) or LOCAL (src == NULL). Returns length. */
size_t pp_build_v2(uint8_t *out, size_t cap, const struct sockaddr_storage *src,
			  const struct sockaddr_storage *dst)
{
	size_t n = 16;
	if (cap < 16 + 36)
		die("v2 header buffer too small");
	memcpy(out, pp2_sig, 12);
	if (!src) {
		out[12] = 0x20; /* version 2, LOCAL */
		out[13] = 0x00; /* UNSPEC */
	} else if (src->ss_family == AF_INET) {
		const struct sockaddr_in *s4 = (const void *)src, *d4 = (const void *)dst;
		out[12] = 0x21; /* version 2, PROXY */
		out[13] = 0x11; /* AF_INET, STREAM */
		memcpy(out + n, &s4->sin_addr, 4);
		memcpy(out + n + 4, &d4->sin_addr, 4);
		memcpy(out + n + 8, &s4->sin_port, 2);
		memcpy(out + n + 10, &d4->sin_port, 2);
		n += 12;
	} else {
		const struct sockaddr_in6 *s6 = (const void *)src, *d6 = (const void *)dst;
		out[12] = 0x21;
		out[13] = 0x21; /* AF_INET6, STREAM */
		memcpy(out + n, &s6->sin6_addr, 16);
		memcpy(out + n + 16, &d6->sin6_addr, 16);
		memcpy(out + n + 32, &s6->sin6_port, 2);
		memcpy(out + n + 34, &d6->sin6_port, 2);
		n += 36;
	}
	out[14] = (uint8_t)((n - 16) >> 8);
	out[15] = (uint8_t)(n - 16);
	return n;
}

/* Decode C escapes (\r \n \t \\ \0 \xHH) in s into out. Returns length. */
size_t unescape(const char *s, uint8_t *out, size_t cap)
{
	size_t n = 0;
	while (*s) {
		if (n >= cap)
			die("escaped string too long");
		if (*s != '\\') {
			out[n++] = (uint8_t)*s++;
			continue;
		}
		s++;
		switch (*s) {
		case 'r': out[n++] = '\r'; s++; break;
		case 'n': out[n++] = '\n'; s++; break;
		case 't': out[n++] = '\t'; s++; break;
		case '0': out[n++] = 0; s++; break;
		case '\\': out[n++] = '\\'; s++; break;
		case 'x': {
			char hex[3] = { 0 };
			if (!s[1] || !s[2])
				die("bad \\x escape");
			hex[0] = s[1];
			hex[1] = s[2];
			out[n++] = (uint8_t)strtoul(hex, NULL, 16);
			s += 3;
			break;
		}
		default:
			die("bad escape '\\%c'", *s);
		}
	}
	return n;
}

/* ------------------------------------------------------- xfer machine -- */

void xfer_init(struct xfer *x, int fd, uint64_t to_send, bool after_eof, uint64_t seed)
{
	memset(x, 0, sizeof(*x));
	x->fd = fd;
	x->to_send = to_send;
	x->after_eof = after_eof;
	stream_init(&x->gen, seed);
	sha256_init(&x->sent_sha);
	sha256_init(&x->recv_sha);
}

/* Check every received byte against stream(seed), as the peer generates it. */
void xfer_verify(struct xfer *x, uint64_t seed)
{
	x->verify = true;
	x->verify_seed = seed;
	x->first_diff = UINT64_MAX;
	stream_init(&x->vgen, seed);
}

static void xfer_check(struct xfer *x, const uint8_t *p, size_t n)
{
	static uint8_t exp[256 * 1024];
	if (!x->verify)
		return;
	if (x->first_diff != UINT64_MAX) { /* complete the sample after the diff */
		while (n && x->ndiff < sizeof(x->diff_bytes))
			x->diff_bytes[x->ndiff++] = *p++, n--;
		return;
	}
	stream_fill(&x->vgen, exp, n);
	for (size_t i = 0; i < n; i++) {
		if (p[i] != exp[i]) {
			x->first_diff = x->recvd + i;
			x->ndiff = 0;
			xfer_check(x, p + i, n - i);
			return;
		}
	}
}

/*
 * Where in the peer's stream do the bytes received at first_diff come from?
 * Searched within 64 MiB either side: an offset before first_diff means
 * bytes arrived twice, after it means bytes were lost. -1: not found.
 */
static int64_t xfer_diff_source(const struct xfer *x)
{
	const uint64_t win = 64 << 20;
	uint64_t from = x->first_diff > win ? x->first_diff - win : 0, skip = from, len = 2 * win;
	size_t need = x->ndiff;
	if (need < 16)
		return -1;
	uint8_t *buf = malloc(len + need);
	if (!buf)
		return -1;
	struct stream st;
	stream_init(&st, x->verify_seed);
	while (skip) { /* advance to `from` */
		size_t k = skip < len ? (size_t)skip : (size_t)len;
		stream_fill(&st, buf, k);
		skip -= k;
	}
	stream_fill(&st, buf, len + need);
	uint8_t *hit = memmem(buf, len + need, x->diff_bytes, need);
	int64_t off = hit ? (int64_t)(from + (uint64_t)(hit - buf)) : -1;
	free(buf);
	return off;
}

void xfer_readable(struct xfer *x)
{
	static uint8_t buf[256 * 1024];
	while (!x->peer_eof && !x->failed) {
		size_t want = sizeof(buf);
		if (x->read_limit) {
			if (x->recvd >= x->read_limit)
				break;
			if (x->read_limit - x->recvd < want)
				want = (size_t)(x->read_limit - x->recvd);
		}
		ssize_t r = recv(x->fd, buf, want, 0);
		if (r > 0) {
			sha256_update(&x->recv_sha, buf, (size_t)r);
			xfer_check(x, buf, (size_t)r);
			x->recvd += (uint64_t)r;
		} else if (r == 0) {
			x->peer_eof = true;
		} else if (errno == EINTR) {
			continue;
		} else if (errno == EAGAIN) {
			break;
		} else {
			x->failed = true;
			x->err = errno;
		}
	}
}

void xfer_writable(struct xfer *x)
{
	while (xfer_wants_write(x)) {
		if (x->pend_off == x->pend_len) {
			uint64_t left = x->to_send - x->sent;
			if (!left) {
				if (shutdown(x->fd, SHUT_WR) < 0) {
					x->failed = true;
					x->err = errno;
				}
				x->shut_done = true;
				return;
			}
			x->pend_len = left < XFER_CHUNK ? (size_t)left : XFER_CHUNK;
			x->pend_off = 0;
			stream_fill(&x->gen, x->pend, x->pend_len);
			sha256_update(&x->sent_sha, x->pend, x->pend_len);
			x->sent += x->pend_len; /* counted as generated; failure is reported apart */
		}
		ssize_t w = send(x->fd, x->pend + x->pend_off, x->pend_len - x->pend_off, MSG_NOSIGNAL);
		if (w > 0) {
			x->pend_off += (size_t)w;
		} else if (w < 0 && errno == EINTR) {
			continue;
		} else if (w < 0 && errno == EAGAIN) {
			return;
		} else {
			x->failed = true;
			x->err = errno;
			return;
		}
	}
}

/*
 * "sent N SHA recv N SHA" (+ " error MSG" on failure); with xfer_verify also
 * " verify ok" or " first_diff OFFSET from OFFSET|-1".
 */
void xfer_report(struct xfer *x, char *out, size_t len)
{
	char s1[65], s2[65], v[96] = "";
	sha256_hex(&x->sent_sha, s1);
	sha256_hex(&x->recv_sha, s2);
	if (x->verify && x->first_diff == UINT64_MAX)
		snprintf(v, sizeof(v), " verify ok");
	else if (x->verify)
		snprintf(v, sizeof(v), " first_diff %" PRIu64 " from %" PRId64, x->first_diff,
			 xfer_diff_source(x));
	snprintf(out, len, "sent %" PRIu64 " %s recv %" PRIu64 " %s%s%s%s", x->sent, s1, x->recvd, s2,
		 x->failed ? " error " : "", x->failed ? strerror(x->err) : "", v);
}

static int hex_nibble(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

void pp_add_tlv(uint8_t *hdr, size_t *hlen, size_t cap, const char *spec)
{
	char *end;
	unsigned long type = strtoul(spec, &end, 0);
	const char *hex = end + 1;
	size_t vlen = *end == ':' ? strlen(hex) / 2 : 0, body;

	if (*end != ':' || type > 255 || strlen(hex) % 2)
		die("--pp2-tlv %s: want TYPE:HEX, e.g. 0xEE:0178563412", spec);
	if (*hlen < 16 || memcmp(hdr, pp2_sig, 12) || *hlen + 3 + vlen > cap)
		die("--pp2-tlv %s: needs a v2 header before it, and room", spec);
	hdr[*hlen] = (uint8_t)type;
	hdr[*hlen + 1] = (uint8_t)(vlen >> 8);
	hdr[*hlen + 2] = (uint8_t)vlen;
	for (size_t i = 0; i < vlen; i++) {
		int hi = hex_nibble(hex[2 * i]), lo = hex_nibble(hex[2 * i + 1]);

		if (hi < 0 || lo < 0)
			die("--pp2-tlv %s: bad hex digit", spec);
		hdr[*hlen + 3 + i] = (uint8_t)(hi << 4 | lo);
	}
	*hlen += 3 + vlen;
	body = *hlen - 16;
	hdr[14] = (uint8_t)(body >> 8);
	hdr[15] = (uint8_t)body;
}
