"""The drill's own PostgreSQL and Redis servers, on free loopback ports in a scratch
folder, so it can stop, restart and cut them without touching the machine's services
(or a test run using them).

PostgreSQL refuses to run as root: as root the server runs as the ``postgres`` user.
Redis keeps nothing on disk (``--save "" --appendonly no``), so a restart loses every
queued message, as a crashed broker without persistence does.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path


class ServiceError(RuntimeError):
    pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _pg_bin(name: str) -> str:
    found = shutil.which(name) if name != "postgres" else None
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True)
    if candidates:
        return candidates[0]
    if found:
        return found
    raise ServiceError(f"{name} not found (install PostgreSQL's server package)")


class Postgres:
    """A throwaway PostgreSQL cluster (``initdb``, trust auth, fsync off)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.data = folder / "pgdata"
        self.port = free_port()
        self.log = folder / "postgres.log"
        self._as_postgres = os.geteuid() == 0

    @property
    def url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/chaos"

    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        command = list(args)
        if self._as_postgres:
            command = ["runuser", "-u", "postgres", "--", *command]
        result = subprocess.run(command, capture_output=True, text=True, timeout=120)
        if check and result.returncode != 0:
            raise ServiceError(f"{' '.join(args)}: {result.stderr.strip() or result.stdout}")
        return result

    def init(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        if self._as_postgres:
            shutil.chown(self.folder, "postgres")
        self._run(
            _pg_bin("initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres",
            "--no-sync", "-E", "UTF8",
        )  # fmt: skip
        self.start()
        self._run(_pg_bin("createdb"), "-h", "127.0.0.1", "-p", str(self.port), "chaos")

    def start(self) -> None:
        options = (
            f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c synchronous_commit=off -c max_connections=200"
        )
        self._run(
            _pg_bin("pg_ctl"), "-D", str(self.data), "-o", options, "-l", str(self.log),
            "-w", "start",
        )  # fmt: skip

    def stop(self, mode: str = "fast") -> None:
        self._run(_pg_bin("pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop", check=False)

    def restart(self, mode: str = "fast") -> None:
        self.stop(mode)
        self.start()


class Redis:
    """A throwaway Redis without persistence."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(
            [
                shutil.which("redis-server") or "redis-server",
                "--bind",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.folder),
            ],  # fmt: skip
            stdout=(self.folder / "redis.log").open("a"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.05)
        raise ServiceError(f"redis-server did not start on port {self.port}")

    def stop(self) -> None:
        """SIGKILL: queued messages are gone, as in a crash of a broker kept in memory."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)
        self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()
