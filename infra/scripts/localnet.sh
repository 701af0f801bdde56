# Sourced by the shell scripts that start local servers (the Python ones use
# infra/pylib/localnet.py): loopback helpers, written once.

# A TCP port on 127.0.0.1 nothing listens on now (the kernel's pick).
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }
