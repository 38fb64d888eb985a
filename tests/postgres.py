"""A throwaway PostgreSQL cluster for the tests: ``initdb`` and ``pg_ctl`` in a temporary folder,
on a free loopback port, trust authentication, no fsync; stopped and removed at the end.

The server binaries are found on PATH, in Debian's /usr/lib/postgresql/<version>/bin (`.ci/run`
installs the ``postgresql`` package), or else in the ``pgserver`` wheel from PyPI (the dev extra
installs it, so a machine with only Python and pip runs these tests too). Without them, or if the cluster does not start, the tests
that need it fail saying so: PostgreSQL is never skipped silently. PostgreSQL refuses to run as
root, so as root the cluster runs as the ``postgres`` user (Debian's package makes it), else
``nobody``.
"""

from __future__ import annotations

import contextlib
import glob
import importlib.util
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

BINARIES = ("initdb", "pg_ctl")
HOWTO = ("install PostgreSQL's server binaries (pip install pgserver, which the dev extra lists; Debian: "
         "apt-get install postgresql) or put initdb and pg_ctl on PATH")


class PostgresUnavailable(RuntimeError):
    """The cluster could not be made: the message says why and what to do."""


def find_bindir() -> Path:
    on_path = shutil.which("initdb")
    if on_path and shutil.which("pg_ctl"):
        return Path(os.path.realpath(on_path)).parent
    for found in sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), reverse=True):
        return Path(found).parent
    wheel = importlib.util.find_spec("pgserver")
    if wheel is not None and wheel.origin is not None:
        bundled = Path(wheel.origin).parent / "pginstall" / "bin"
        if all((bundled / name).exists() for name in BINARIES):
            return bundled
    raise PostgresUnavailable(f"PostgreSQL's initdb and pg_ctl were not found: {HOWTO}")


SECURED_ROLE, SECURED_PASSWORD = "secured", "pg-right-password"
"""The one role that must give a password (scram), for the tests of a wrong one; every other
connection is trusted."""
LIMITED_ROLE = "limited"
"""A role that may log in but not create databases."""


class PostgresCluster:
    """One cluster; :meth:`database` makes a fresh, empty database in it and returns its URL."""

    def __init__(self) -> None:
        self.bindir = find_bindir()
        self.root = Path(tempfile.mkdtemp(prefix="skills-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        self.user = "postgres"
        self._as: dict[str, Any] = {}
        if os.geteuid() == 0:
            account = _unprivileged_account()
            os.chown(self.root, account.pw_uid, account.pw_gid)
            self._as = {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []}

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(args, cwd=self.root, env={**os.environ, "HOME": str(self.root), "LC_ALL": "C"},
                              capture_output=True, text=True, timeout=120, **self._as)

    def start(self) -> PostgresCluster:
        init = self._run(str(self.bindir / "initdb"), "-D", str(self.data), "-A", "trust", "-U", self.user,
                         "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions")
        if init.returncode:
            raise PostgresUnavailable(f"initdb failed ({init.returncode}): {init.stderr.strip() or init.stdout}")
        hba = self.data / "pg_hba.conf"
        hba.write_text(f"host all {SECURED_ROLE} 127.0.0.1/32 scram-sha-256\n" + hba.read_text())
        options = (f"-c listen_addresses=127.0.0.1 -p {self.port} -c unix_socket_directories='' "
                   "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300")
        started = self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-l", str(self.root / "server.log"),
                            "-w", "-t", "60", "-o", options, "start")
        if started.returncode:
            log = (self.root / "server.log").read_text(errors="replace")[-2000:] if (self.root / "server.log").exists() else ""
            raise PostgresUnavailable(f"pg_ctl start failed ({started.returncode}): {started.stderr.strip()} {log}")
        import psycopg

        with psycopg.connect(self.url().replace("+psycopg", ""), autocommit=True) as conn:
            conn.execute(f"CREATE ROLE {SECURED_ROLE} LOGIN CREATEDB PASSWORD '{SECURED_PASSWORD}'")
            conn.execute(f"CREATE ROLE {LIMITED_ROLE} LOGIN NOCREATEDB")
        return self

    def stop(self) -> None:
        if (self.data / "postmaster.pid").exists():
            self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.root, ignore_errors=True)

    def url(self, database: str = "postgres", *, scheme: str = "postgresql+psycopg", user: str | None = None) -> str:
        return f"{scheme}://{user or self.user}@127.0.0.1:{self.port}/{database}"

    def database(self) -> str:
        """A new empty database's URL."""
        import psycopg

        name = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url().replace("+psycopg", ""), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)


def _unprivileged_account() -> pwd.struct_passwd:
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            return pwd.getpwnam(name)
    raise PostgresUnavailable("running as root and neither a 'postgres' nor a 'nobody' user exists to run PostgreSQL")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def running_cluster() -> Iterator[PostgresCluster]:
    cluster = PostgresCluster()
    try:
        yield cluster.start()
    finally:
        cluster.stop()
