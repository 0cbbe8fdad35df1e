/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mmpt-inject: blind TCP segments, as an attacker who knows only a flow's
 * addresses and ports would send them (t18). Frames are written whole to an
 * interface (AF_PACKET), so any source address goes out where told, even
 * 127.0.0.1 on a veth.
 *
 *   mmpt-inject -i IFACE --dst-mac MAC --src ADDR:PORT --dst ADDR:PORT
 *               --flags FLAGS [--seq N | --random-seq] [--ack N]
 *               [--count K] [--seed S] [--payload N]
 *
 * FLAGS: letters S (SYN) R (RST) A (ACK) P (PSH) F (FIN). --random-seq:
 * each segment's seq is a guess from a generator seeded with S (default 1).
 * ADDR may be IPv6 ("[2001:db8::1]:80"). Prints "sent K" and exits 0, or an
 * error and exits 1.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

struct ep {
	int family;
	uint8_t addr[16];
	uint16_t port;
};

static int parse_ep(const char *s, struct ep *e)
{
	char buf[128];
	const char *colon = strrchr(s, ':');

	if (!colon || (size_t)(colon - s) >= sizeof(buf))
		return -1;
	memcpy(buf, s, colon - s);
	buf[colon - s] = 0;
	e->port = (uint16_t)atoi(colon + 1);
	if (buf[0] == '[') {
		size_t n = strlen(buf);

		if (n < 2 || buf[n - 1] != ']')
			return -1;
		buf[n - 1] = 0;
		e->family = 6;
		return inet_pton(AF_INET6, buf + 1, e->addr) == 1 ? 0 : -1;
	}
	e->family = 4;
	return inet_pton(AF_INET, buf, e->addr) == 1 ? 0 : -1;
}

static uint32_t sum16(const uint8_t *p, size_t n, uint32_t s)
{
	for (size_t i = 0; i + 1 < n; i += 2)
		s += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (n & 1)
		s += (uint32_t)p[n - 1] << 8;
	return s;
}

static uint16_t fold(uint32_t s)
{
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* Ethernet + IP + 20-byte TCP header + payload zeros into f; returns the length. */
static size_t build(uint8_t *f, const uint8_t dmac[6], const uint8_t smac[6], const struct ep *s,
		    const struct ep *d, uint8_t flags, uint32_t seq, uint32_t ack, size_t payload)
{
	size_t ip_hlen = s->family == 4 ? 20 : 40, tcp_len = 20 + payload;
	uint8_t *ip = f + 14, *t = ip + ip_hlen;
	uint32_t ps;

	memset(f, 0, 14 + ip_hlen + tcp_len);
	memcpy(f, dmac, 6);
	memcpy(f + 6, smac, 6);
	put16(f + 12, s->family == 4 ? ETHERTYPE_IP : ETHERTYPE_IPV6);
	if (s->family == 4) {
		ip[0] = 0x45;
		put16(ip + 2, (uint16_t)(ip_hlen + tcp_len));
		put16(ip + 6, 0x4000);
		ip[8] = 64;
		ip[9] = 6;
		memcpy(ip + 12, s->addr, 4);
		memcpy(ip + 16, d->addr, 4);
		put16(ip + 10, fold(sum16(ip, 20, 0)));
		ps = sum16(ip + 12, 8, 0);
	} else {
		ip[0] = 0x60;
		put16(ip + 4, (uint16_t)tcp_len);
		ip[6] = 6;
		ip[7] = 64;
		memcpy(ip + 8, s->addr, 16);
		memcpy(ip + 24, d->addr, 16);
		ps = sum16(ip + 8, 32, 0);
	}
	put16(t, s->port);
	put16(t + 2, d->port);
	put32(t + 4, seq);
	put32(t + 8, ack);
	t[12] = 5 << 4;
	t[13] = flags;
	put16(t + 14, flags & 0x04 ? 0 : 1024);
	ps += 6 + (uint32_t)tcp_len;
	put16(t + 16, fold(sum16(t, tcp_len, ps)));
	return 14 + ip_hlen + tcp_len;
}

static int usage(void)
{
	fprintf(stderr, "usage: mmpt-inject -i IFACE --dst-mac MAC --src ADDR:PORT --dst ADDR:PORT --flags SRAPF "
			"[--seq N | --random-seq] [--ack N] [--count K] [--seed S] [--payload N]\n");
	return 2;
}

int main(int argc, char **argv)
{
	const char *iface = NULL, *mac = NULL, *src = NULL, *dst = NULL, *fl = "R";
	uint32_t seq = 0, ack = 0, seed = 1;
	int count = 1, random_seq = 0, fd, ifindex, sent = 0;
	size_t payload = 0;
	uint8_t dmac[6], smac[6], frame[1600];
	struct ep s, d;
	struct ifreq ifr = { 0 };
	struct sockaddr_ll ll = { 0 };
	uint8_t flags = 0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--random-seq")) {
			random_seq = 1;
			continue;
		}
		if (!v)
			return usage();
		i++;
		if (!strcmp(a, "-i"))
			iface = v;
		else if (!strcmp(a, "--dst-mac"))
			mac = v;
		else if (!strcmp(a, "--src"))
			src = v;
		else if (!strcmp(a, "--dst"))
			dst = v;
		else if (!strcmp(a, "--flags"))
			fl = v;
		else if (!strcmp(a, "--seq"))
			seq = (uint32_t)strtoul(v, NULL, 0);
		else if (!strcmp(a, "--ack"))
			ack = (uint32_t)strtoul(v, NULL, 0);
		else if (!strcmp(a, "--count"))
			count = atoi(v);
		else if (!strcmp(a, "--seed"))
			seed = (uint32_t)strtoul(v, NULL, 0);
		else if (!strcmp(a, "--payload"))
			payload = (size_t)atoi(v);
		else
			return usage();
	}
	if (!iface || !mac || !src || !dst || payload > 1400 || parse_ep(src, &s) || parse_ep(dst, &d) ||
	    s.family != d.family ||
	    sscanf(mac, "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &dmac[0], &dmac[1], &dmac[2], &dmac[3], &dmac[4],
		   &dmac[5]) != 6)
		return usage();
	for (const char *c = fl; *c; c++)
		flags |= *c == 'F' ? 0x01 : *c == 'S' ? 0x02 : *c == 'R' ? 0x04 : *c == 'P' ? 0x08 : *c == 'A' ? 0x10 : 0;
	fd = socket(AF_PACKET, SOCK_RAW, 0);
	if (fd < 0) {
		fprintf(stderr, "mmpt-inject: socket(AF_PACKET): %s\n", strerror(errno));
		return 1;
	}
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", iface);
	if (ioctl(fd, SIOCGIFHWADDR, &ifr) || !(ifindex = (int)if_nametoindex(iface))) {
		fprintf(stderr, "mmpt-inject: interface %s: %s\n", iface, strerror(errno));
		return 1;
	}
	memcpy(smac, ifr.ifr_hwaddr.sa_data, 6);
	ll.sll_family = AF_PACKET;
	ll.sll_ifindex = ifindex;
	ll.sll_halen = 6;
	memcpy(ll.sll_addr, dmac, 6);
	srandom(seed);
	for (int i = 0; i < count; i++) {
		uint32_t q = random_seq ? (uint32_t)random() << 1 ^ (uint32_t)random() : seq;
		size_t len = build(frame, dmac, smac, &s, &d, flags, q, ack, payload);

		if (sendto(fd, frame, len, 0, (struct sockaddr *)&ll, sizeof(ll)) != (ssize_t)len) {
			fprintf(stderr, "mmpt-inject: sendto %s: %s\n", iface, strerror(errno));
			return 1;
		}
		sent++;
	}
	printf("sent %d\n", sent);
	close(fd);
	return 0;
}
