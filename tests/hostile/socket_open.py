# expect: exception
# Tries to reach a server on the host's loopback and the internet.
import socket


class SocketOpen:
    def __call__(self, func, searchspace):
        reached = []
        for host, port in (("127.0.0.1", @@PORT@@), ("8.8.8.8", 53), ("1.1.1.1", 443)):
            try:
                with socket.create_connection((host, port), timeout=1) as s:
                    s.sendall(b"hello from the sandbox")
                    reached.append(host)
            except OSError:
                pass
        raise RuntimeError("REACHED " + " ".join(reached) if reached else "no network")
