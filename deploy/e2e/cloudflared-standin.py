"""A stand-in for cloudflared in the e2e compose test (no registry is
reachable, so the real image cannot be pulled).

It plays both of cloudflared's parts:
  * the metrics server on :20241: /quicktunnel answers the quick-tunnel
    hostname (exactly as cloudflared formats it), /ready and /healthcheck
    answer 200;
  * the tunnel on :8080: every request is forwarded to the origin
    (http://devspace:7676) with the public Host header, as Cloudflare's edge
    delivers it through a real tunnel.

Environment: STANDIN_HOSTNAME (default e2e-tunnel.trycloudflare.com),
STANDIN_ORIGIN (default devspace:7676).
"""
import http.client
import http.server
import os
import sys
import threading

HOSTNAME = os.environ.get("STANDIN_HOSTNAME", "e2e-tunnel.trycloudflare.com")
ORIGIN = os.environ.get("STANDIN_ORIGIN", "devspace:7676")
HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade", "host", "content-length"}


class Metrics(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/quicktunnel":
            body = ('{"hostname":"%s"}' % HOSTNAME).encode()
        elif self.path in ("/ready", "/healthcheck"):
            body = b'{"status":200,"readyConnections":1}'
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class Tunnel(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def forward(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP}
        headers["Host"] = HOSTNAME
        conn = http.client.HTTPConnection(ORIGIN, timeout=120)
        try:
            conn.request(self.command, self.path, body=body, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
        except OSError as e:
            self.send_error(502, str(e))
            return
        finally:
            conn.close()
        self.send_response(resp.status, resp.reason)
        for k, v in resp.getheaders():
            if k.lower() not in HOP:
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_DELETE = do_HEAD = forward

    def log_message(self, *args):
        pass


def serve(port, handler):
    http.server.ThreadingHTTPServer(("0.0.0.0", port), handler).serve_forever()


if __name__ == "__main__":
    threading.Thread(target=serve, args=(20241, Metrics), daemon=True).start()
    print("cloudflared stand-in: %s -> %s" % (HOSTNAME, ORIGIN), file=sys.stderr, flush=True)
    serve(8080, Tunnel)
