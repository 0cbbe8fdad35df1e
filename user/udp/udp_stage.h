/* SPDX-License-Identifier: GPL-2.0 */
/* The staged payloads of a UDP listener thread's flows (udp_stage.c). */
#ifndef MMP_UDP_STAGE_H
#define MMP_UDP_STAGE_H

#include <stdint.h>

struct udp_flow;
struct udp_worker;

/* Queue len bytes at p for f's upstream socket; flushes first when the stage is full. */
void udp_stage_payload(struct udp_worker *w, struct udp_flow *f, const uint8_t *p, uint32_t len);
/* Send every staged payload now. */
void udp_relay_flush_forward(struct udp_worker *w);

#endif
