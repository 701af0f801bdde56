"""Loopback helpers shared by the test scripts (fuzz, interop, Lambda init time)."""

import socket


def free_port():
    """A TCP port on 127.0.0.1 nothing listens on now (the kernel's pick)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port
