#!/usr/bin/env python3
"""One connection to a nats-server port, plain or TLS, reporting whether the server let it in.

The deployment test proves that the rendered TLS holds: a client or a route that does not speak
TLS, or that has no certificate of the operator's CA where one is required, is refused. nats.c
switches to TLS by itself when the server asks for it, so a plain connection is made here by hand
with the NATS protocol (INFO from the server, CONNECT and PING from us, PONG when accepted).

usage: tls_probe.py plain|tls HOST PORT [CA_FILE [CERT_FILE KEY_FILE]] [-- USER PASSWORD]
       tls_probe.py route-plain|route-tls HOST PORT [CA_FILE [CERT_FILE KEY_FILE]]

The client port sends INFO first (its fields tls_required, tls_verify and connect_urls, the other
servers' addresses the cluster tells clients, are printed) and the
client upgrades to TLS; a plain client sends CONNECT and PING in clear. A route port of
nats-server 2.9 with TLS expects the handshake first: route-plain sends a CONNECT in clear
instead, route-tls makes the handshake and counts the server's INFO over it as accepted (the
cluster's own routes show that a real route gets further). Exit codes: 0 accepted (PONG, or
INFO over a route's TLS), 10 refused (an -ERR, a closed connection or a failed handshake),
1 anything else (no INFO, a timeout). Python standard library only.
"""
import json
import socket
import ssl
import sys

ACCEPTED, REFUSED, FAILED = 0, 10, 1


def read_line(sock):
    buf = b""
    while not buf.endswith(b"\r\n"):
        chunk = sock.recv(1)
        if not chunk:
            raise ConnectionAbortedError("connection closed by the server")
        buf += chunk
    return buf.decode(errors="replace").rstrip("\r\n")


def tls_wrap(sock, host, ca, cert, key):
    ctx = ssl.create_default_context(cafile=ca)
    ctx.check_hostname = False  # the deployment's nodes are named by address here
    if cert:
        ctx.load_cert_chain(cert, key)
    s = ctx.wrap_socket(sock, server_hostname=host)
    s.do_handshake()
    return s


def connect_line(tls, user, password):
    connect = {"verbose": False, "pedantic": False, "name": "tls_probe", "lang": "python",
               "version": "0", "protocol": 1, "tls_required": tls}
    if user:
        connect.update(user=user, **{"pass": password})
    return f"CONNECT {json.dumps(connect)}\r\nPING\r\n".encode()


def probe(mode, sock, host, files, user, password):
    ca, cert, key = (files + [None, None, None])[:3]
    if mode == "route-plain":
        sock.sendall(connect_line(False, user, password))
    elif mode == "route-tls":
        sock = tls_wrap(sock, host, ca, cert, key)
    line = read_line(sock)
    if not line.startswith("INFO "):
        print(f"no INFO from the server: {line!r}")
        return FAILED
    info = json.loads(line[5:])
    print(f"server INFO: tls_required={info.get('tls_required', False)} "
          f"tls_verify={info.get('tls_verify', False)} "
          f"connect_urls={','.join(info.get('connect_urls') or []) or '-'}")
    if mode == "route-tls":
        print("accepted: TLS handshake and INFO")
        return ACCEPTED
    if mode == "tls":
        sock = tls_wrap(sock, host, ca, cert, key)
    sock.sendall(connect_line(mode == "tls", user, password))
    while True:
        reply = read_line(sock)
        if reply == "PONG":
            print("accepted: PONG")
            return ACCEPTED
        if reply.startswith("-ERR"):
            print(f"refused: {reply}")
            return REFUSED
        if reply == "PING":  # INFO updates and PINGs may come first
            sock.sendall(b"PONG\r\n")


def main(argv):
    modes = ("plain", "tls", "route-plain", "route-tls")
    if len(argv) < 4 or argv[1] not in modes:
        print(__doc__, file=sys.stderr)
        return 2
    mode, host, port = argv[1], argv[2], int(argv[3])
    files, user, password = argv[4:], None, None
    if "--" in files:
        i = files.index("--")
        files, (user, password) = files[:i], files[i + 1:i + 3]
    sock = socket.create_connection((host, port), timeout=5)
    try:
        return probe(mode, sock, host, files, user, password)
    except socket.timeout:
        print("failed: no answer within 5 s")
        return FAILED
    except (ConnectionError, ssl.SSLError, OSError) as e:
        # A refused certificate shows as a failed handshake or, with TLS 1.3, at the first read;
        # a plain client on a TLS port as a closed connection.
        print(f"refused: {type(e).__name__}: {e}")
        return REFUSED
    finally:
        sock.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
