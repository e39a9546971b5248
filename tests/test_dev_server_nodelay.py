"""Django's own server (make run's runserver, the tests' live server) sends each response
at once on a kept-alive connection: Nagle's algorithm is off on the sockets it accepts.
With it on, every request on a kept-alive connection (a browser's, schemathesis's) waited
about 40 ms for the client's delayed ACK."""

from __future__ import annotations

import socket

from django.core.servers.basehttp import WSGIRequestHandler


def test_the_dev_server_turns_nagle_off_on_each_connection() -> None:
    """Issue "Same result on every machine" (CI time): a connection accepted by Django's
    WSGIRequestHandler has TCP_NODELAY set, as gunicorn's do."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        client = socket.create_connection(listener.getsockname())
        accepted, _ = listener.accept()
        with client, accepted:
            assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 0
            handler = WSGIRequestHandler.__new__(WSGIRequestHandler)
            handler.request = accepted
            handler.setup()  # socketserver.StreamRequestHandler.setup: what a request runs
            try:
                assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
            finally:
                handler.rfile.close()
                handler.wfile.close()
