"""Just enough of the GDB remote serial protocol to drive QEMU's GDB server (edgesdk run --emulator qemu), or a
debug probe's (a board attached to a farm node, edgesdk/farm/attached.py).

Packets are `$payload#checksum`; each side acknowledges with `+`. The client sets and clears software
breakpoints (Z0/z0), continues (c) and single-steps (s), reads registers (p) and memory (m), writes registers (P)
and memory (M), runs server commands (qRcmd, `monitor`) and reads the target description (qXfer:features:read) to find a CSR's register number. A stop reply is
`T05...` (stopped by a breakpoint or a step) or `Wxx` (the program exited with status xx); when QEMU exits
without sending one (QEMU's sifive_test exit device calls exit()), the connection just closes.
"""

from __future__ import annotations

import re
import socket
import time

from .dataclass_cache import dataclass

MEMORY_CHUNK = 1024  # bytes per m/M packet (QEMU's packet buffer holds 4 KiB of hex)


class GdbRemoteError(Exception):
    """The GDB server closed the connection, answered with an error or did not answer in time."""


@dataclass(frozen=True)
class StopReply:
    exited: bool  # True: the program exited (W), `status` is its exit status
    status: int  # exit status (exited) or signal number (stopped)


class GdbRemote:
    def __init__(self, sock: socket.socket, deadline: float):
        self.sock = sock
        self.deadline = deadline
        self.buffer = b""

    @classmethod
    def connect_unix(cls, path, deadline: float, alive=lambda: True) -> "GdbRemote":
        """Connect to a server listening on the Unix socket `path`, retrying until it appears (or `alive()` says
        the server process is gone, or the deadline passes)."""
        while True:
            sock = socket.socket(socket.AF_UNIX)
            try:
                sock.connect(str(path))
                return cls(sock, deadline)
            except OSError as exc:
                sock.close()
                if not alive():
                    raise GdbRemoteError("the GDB server exited before it accepted a connection") from None
                if time.monotonic() > deadline:
                    raise GdbRemoteError(f"no GDB server answered on {path} ({exc.strerror})") from None
                time.sleep(0.05)

    @classmethod
    def connect_tcp(cls, host: str, port: int, deadline: float) -> "GdbRemote":
        """Connect to a server listening on HOST:PORT (a debug probe's, OpenOCD's, or QEMU's -gdb tcp::PORT)."""
        try:
            sock = socket.create_connection((host, port), timeout=max(0.1, deadline - time.monotonic()))
        except OSError as exc:
            raise GdbRemoteError(f"no GDB server answered on {host}:{port} ({exc.strerror or exc})") from None
        return cls(sock, deadline)

    def close(self) -> None:
        self.sock.close()

    # -- packets --

    def _receive(self) -> bytes:
        while True:
            match = re.search(rb"\$([^#]*)#[0-9a-fA-F]{2}", self.buffer)
            if match:
                self.buffer = self.buffer[match.end():]
                try:
                    self.sock.sendall(b"+")
                except OSError:
                    pass  # the server is gone (QEMU exits right after its W reply); the reply is still valid
                return match.group(1)
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise GdbRemoteError("the GDB server did not answer in time")
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:
                raise GdbRemoteError("the GDB server did not answer in time") from None
            except OSError as exc:
                raise GdbRemoteError(f"the connection to the GDB server failed ({exc.strerror})") from None
            if not chunk:
                raise EOFError("the GDB server closed the connection")
            self.buffer += chunk

    def command(self, payload: str) -> str:
        data = payload.encode("latin-1")  # binary packets (vFlashWrite) carry one byte per character
        try:
            self.sock.sendall(b"$" + data + b"#" + f"{sum(data) % 256:02x}".encode())
        except OSError as exc:
            raise EOFError(f"the GDB server closed the connection ({exc.strerror})") from None
        return self._receive().decode("latin-1")

    def _ok(self, payload: str) -> None:
        reply = self.command(payload)
        if reply != "OK":
            raise GdbRemoteError(f"the GDB server answered {reply!r} to {payload.split(':')[0][:20]!r}")

    # -- execution --

    @staticmethod
    def _stop(reply: str) -> StopReply:
        if reply[:1] in ("T", "S"):
            return StopReply(False, int(reply[1:3], 16))
        if reply[:1] in ("W", "X"):
            return StopReply(True, int(reply[1:3], 16))
        raise GdbRemoteError(f"unexpected stop reply {reply!r}")

    def cont(self) -> StopReply:
        return self._stop(self.command("c"))

    def step(self) -> StopReply:
        return self._stop(self.command("s"))

    def set_breakpoint(self, address: int) -> None:
        self._ok(f"Z0,{address:x},2")

    def clear_breakpoint(self, address: int) -> None:
        self._ok(f"z0,{address:x},2")

    # -- state --

    def register(self, number: int) -> int:
        reply = self.command(f"p{number:x}")
        if not re.fullmatch(r"[0-9a-fA-F]+", reply):
            raise GdbRemoteError(f"the GDB server answered {reply!r} for register {number}")
        return int.from_bytes(bytes.fromhex(reply), "little")

    def read_memory(self, address: int, length: int) -> bytes:
        data = b""
        while len(data) < length:
            n = min(MEMORY_CHUNK, length - len(data))
            reply = self.command(f"m{address + len(data):x},{n:x}")
            if not re.fullmatch(r"(?:[0-9a-fA-F]{2})+", reply) or len(reply) != 2 * n:
                raise GdbRemoteError(f"the GDB server answered {reply[:20]!r} reading {n} bytes at "
                                     f"{address + len(data):#x}")
            data += bytes.fromhex(reply)
        return data

    def write_register(self, number: int, value: int, size: int = 4) -> None:
        self._ok(f"P{number:x}={value.to_bytes(size, 'little').hex()}")

    def monitor(self, text: str) -> str | None:
        """Run a server command (GDB's `monitor TEXT`, qRcmd); its output, or None if the server has no such
        command (an empty reply)."""
        reply, output = self.command("qRcmd," + text.encode().hex()), ""
        while reply.startswith("O") and reply != "OK":  # console output, then the final reply
            output += bytes.fromhex(reply[1:]).decode(errors="replace")
            reply = self._receive().decode("latin-1")
        if reply == "":
            return None
        if reply != "OK":
            raise GdbRemoteError(f"the GDB server answered {reply!r} to 'monitor {text}'")
        return output

    def write_memory(self, address: int, data: bytes) -> None:
        for offset in range(0, len(data), MEMORY_CHUNK):
            chunk = data[offset:offset + MEMORY_CHUNK]
            self._ok(f"M{address + offset:x},{len(chunk):x}:{chunk.hex()}")

    def read_feature(self, annex: str) -> str:
        """A target-description file (qXfer:features:read), unescaped."""
        text = ""
        while True:
            reply = self.command(f"qXfer:features:read:{annex}:{len(text):x},800")
            if reply[:1] not in ("l", "m"):
                raise GdbRemoteError(f"the GDB server has no target description {annex} ({reply!r})")
            text += re.sub(r"\}(.)", lambda m: chr(ord(m.group(1)) ^ 0x20), reply[1:])
            if reply[0] == "l":
                return text

    def register_number(self, name: str) -> int:
        """The number of register `name` (e.g. "minstret") in the server's target description."""
        pattern = rf'<reg name="{re.escape(name)}"[^>]*regnum="(\d+)"'
        target = self.read_feature("target.xml")
        for annex in ["target.xml", *re.findall(r'href="([^"]+)"', target)]:
            text = target if annex == "target.xml" else self.read_feature(annex)
            found = re.search(pattern, text)
            if found:
                return int(found.group(1))
        raise GdbRemoteError(f"the GDB server's target description has no register {name}")
