#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""gso-trains: an upstream that answers with GSO trains (UDP_SEGMENT), for
the UDP reply path's bound on pieces[] (user/udp/udp_reply.c).

  gso-trains.py -l 127.0.0.1:9000 --trains N [--seg-size B] [--min-segs 65]
                [--max-segs 128] [--go-file PATH]

Waits for one datagram, prints "peer ADDR PORT", then waits until PATH
exists (the test stops the proxy meanwhile, so every train is queued before
it reads one), sends N trains to that peer, the k-th of min + k % (max -
min + 1) segments of B bytes, prints "sent TRAINS SEGMENTS" and exits.
"""
import argparse
import os
import socket
import sys
import time

SOL_UDP = 17
UDP_SEGMENT = 103


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-l", required=True)
    ap.add_argument("--trains", type=int, default=100)
    ap.add_argument("--seg-size", type=int, default=16)
    ap.add_argument("--min-segs", type=int, default=65)
    ap.add_argument("--max-segs", type=int, default=128)
    ap.add_argument("--go-file")
    a = ap.parse_args()
    host, port = a.l.rsplit(":", 1)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
    s.bind((host, int(port)))
    print("listening", host, port, flush=True)
    _, peer = s.recvfrom(65536)
    print("peer", peer[0], peer[1], flush=True)
    while a.go_file and not os.path.exists(a.go_file):
        time.sleep(0.01)
    span = a.max_segs - a.min_segs + 1
    total = 0
    for k in range(a.trains):
        segs = a.min_segs + k % span
        data = bytes([k & 0xFF]) * (segs * a.seg_size)
        try:
            s.sendmsg([data], [(SOL_UDP, UDP_SEGMENT, a.seg_size.to_bytes(2, sys.byteorder))], 0, peer)
        except OSError as e:
            print("error train", k, "segs", segs, e, flush=True)
            return 1
        total += segs
    print("sent", a.trains, total, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
