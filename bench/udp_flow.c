// SPDX-License-Identifier: GPL-2.0
/* udpgen building blocks: flow headers, sockets and payload tags. */
#include <endian.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <unistd.h>

#include "pattern.h"
#include "proxyhdr.h"
#include "udpgen.h"

#define SOCK_BUF (4 << 20)

size_t ug_build_header(const struct ug_config *cfg, unsigned int flow, uint8_t *buf)
{
	struct sockaddr_storage src;
	struct cidr def;

	if (cfg->proxy == HDR_NONE)
		return 0;
	if (cfg->have_clients) {
		cidr_client(&cfg->clients, cfg->client_offset + flow, &src);
	} else {
		cidr_parse("203.0.113.0/24", &def);
		cidr_client(&def, cfg->client_offset + flow, &src);
	}
	if (cfg->proxy == HDR_SPP)
		return proxyhdr_spp(buf, &src, &cfg->target);
	return proxyhdr_v2(buf, &src, &cfg->target, true);
}

static void grow_buffers(int fd)
{
	int v = SOCK_BUF;

	/* FORCE works as root and ignores rmem_max; fall back otherwise. */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof(v)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v));
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &v, sizeof(v)))
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v));
}

int ug_flow_socket(const struct ug_config *cfg)
{
	int fd, err;

	fd = socket(cfg->target.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	grow_buffers(fd);
	if (connect(fd, (const struct sockaddr *)&cfg->target, addr_len(&cfg->target))) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

int ug_bound_socket(const struct sockaddr_storage *ss)
{
	int fd, err, one = 1;

	fd = socket(ss->ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	grow_buffers(fd);
	setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
	if (ss->ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, (const struct sockaddr *)ss, addr_len(ss))) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

void ug_payload_put(uint8_t *tag, uint32_t flow, uint64_t seq)
{
	uint32_t magic = htobe32(UG_TAG_MAGIC), f = htobe32(flow);
	uint64_t s = htobe64(seq);

	memcpy(tag, &magic, 4);
	memcpy(tag + 4, &f, 4);
	memcpy(tag + 8, &s, 8);
}

const uint8_t *ug_payload_body(uint32_t flow, uint64_t seq)
{
	return pattern_at(pattern_origin(flow) + (seq & ~UG_SEQ_MEASURED));
}

bool ug_tag_get(const uint8_t *p, size_t len, uint32_t *flow, uint64_t *seq)
{
	uint32_t magic, f;
	uint64_t s;

	if (len < UG_TAG_LEN)
		return false;
	memcpy(&magic, p, 4);
	if (be32toh(magic) != UG_TAG_MAGIC)
		return false;
	memcpy(&f, p + 4, 4);
	memcpy(&s, p + 8, 8);
	*flow = be32toh(f);
	*seq = be64toh(s);
	return true;
}
