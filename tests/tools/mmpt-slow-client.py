#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""mmpt-slow-client: a transfer that pauses in its middle (t18, t19).

  mmpt-slow-client.py HOST PORT SIZE PAUSE_S [--pp2-local]

Connects, optionally writes a PROXY v2 LOCAL header (a health check: the proxy
connects unspoofed), sends SIZE/2 bytes of a deterministic stream, prints
"paused", sleeps PAUSE_S seconds, sends the rest and half-closes, while reading
and hashing everything the peer sends until its EOF. Prints "local ADDR PORT"
first and, like mmpt-client, "xfer sent N SHA recv N SHA [error E]" last.
Exit 0 when everything was sent and SIZE bytes came back.
"""
import hashlib
import random
import socket
import sys
import threading
import time

host, port, size, pause = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
s = socket.create_connection((host, port), timeout=30)
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
print("local %s %d" % s.getsockname()[:2], flush=True)
if "--pp2-local" in sys.argv[5:]:
    s.sendall(b"\r\n\r\n\x00\r\nQUIT\n" + bytes([0x20, 0x00, 0x00, 0x00]))
data = random.Random(1).randbytes(size)
got = hashlib.sha256()
n = [0]


def reader():
    try:
        while True:
            b = s.recv(65536)
            if not b:
                return
            n[0] += len(b)
            got.update(b)
    except OSError:
        return


t = threading.Thread(target=reader)
t.start()
err = ""
try:
    s.sendall(data[: size // 2])
    print("paused", flush=True)
    time.sleep(pause)
    s.sendall(data[size // 2:])
    s.shutdown(socket.SHUT_WR)
except OSError as e:
    err = " error " + str(e).replace(" ", "_")
t.join(30)
print("xfer sent %d %s recv %d %s%s" % (size, hashlib.sha256(data).hexdigest(), n[0], got.hexdigest(), err),
      flush=True)
sys.exit(0 if not err and n[0] == size else 1)
