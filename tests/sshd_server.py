"""A real OpenSSH server on 127.0.0.1 for the remote tests: throwaway host and user keys, a free port,
a known_hosts file holding the host key, and an ssh client config (-F) with aliases:

  board     the server, as the current user, host key verified against known_hosts
  badkey    the same server, but known_hosts holds a different key for it (a man in the middle)
  newboard  the same server, never connected before: its known_hosts file does not exist
  deadboard 127.0.0.1 on a port nobody listens on

`sshd -D -e -f CONFIG` runs as a child process and is killed by stop(). Root logins are allowed with a
key only (PermitRootLogin prohibit-password), as CI runs as root.
"""

from __future__ import annotations

import getpass
import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

SSHD_CANDIDATES = ("/usr/sbin/sshd", "/usr/local/sbin/sshd")


def find_sshd() -> str | None:
    found = shutil.which("sshd")
    if found:
        return found
    return next((c for c in SSHD_CANDIDATES if os.access(c, os.X_OK)), None)


def missing_tools() -> str | None:
    """Why the remote tests cannot run here, or None."""
    if find_sshd() is None:
        return "OpenSSH server (sshd) is not installed: apt-get install openssh-server (`make test` does it as root)"
    for tool in ("ssh", "ssh-keygen", "rsync"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed: apt-get install openssh-client rsync"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def keygen(path: Path) -> str:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "edgebench-test", "-f", str(path)],
                   check=True, capture_output=True)
    typ, key = path.with_suffix(".pub").read_text().split()[:2]
    return f"{typ} {key}"


@dataclass
class SshServer:
    root: Path
    port: int
    dead_port: int
    config: Path          # ssh -F file
    known_hosts: Path
    user: str
    proc: subprocess.Popen[bytes]
    log: Path

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def ssh(self, alias: str, command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["ssh", "-F", str(self.config), "-o", "BatchMode=yes", alias, command],
                              capture_output=True, text=True, timeout=30)


def start_sshd(root: Path) -> SshServer:
    sshd = find_sshd()
    assert sshd is not None, missing_tools()
    root.mkdir(parents=True, exist_ok=True)
    os.chmod(root, 0o700)
    host_pub = keygen(root / "host_key")
    wrong_pub = keygen(root / "wrong_host_key")  # never served: the key a MITM would "have"
    user_pub = keygen(root / "user_key")
    auth = root / "authorized_keys"
    auth.write_text(user_pub + "\n")
    auth.chmod(0o600)
    if os.geteuid() == 0:
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # sshd's privilege separation folder

    user = getpass.getuser()
    last_error = ""
    for _attempt in range(3):  # the free port may be taken between probing and binding
        port, dead_port = free_port(), free_port()
        cfg = root / "sshd_config"
        cfg.write_text("\n".join([
            f"Port {port}", "ListenAddress 127.0.0.1", f"HostKey {root / 'host_key'}",
            f"AuthorizedKeysFile {auth}", "PubkeyAuthentication yes", "PasswordAuthentication no",
            "KbdInteractiveAuthentication no", "PermitRootLogin prohibit-password", f"AllowUsers {user}",
            "UsePAM no", "StrictModes no", "PidFile none", "LogLevel VERBOSE", "",
        ]))
        log = root / "sshd.log"
        with open(log, "wb") as fh:
            proc = subprocess.Popen([sshd, "-D", "-e", "-f", str(cfg)], stdout=fh, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
            except OSError:
                time.sleep(0.05)
        if proc.poll() is None:
            break
        last_error = log.read_text(errors="replace")
    else:
        raise RuntimeError(f"sshd did not start: {last_error}")

    known = root / "known_hosts"
    known.write_text(f"[127.0.0.1]:{port} {host_pub}\n")
    wrong_known = root / "known_hosts_wrong"
    wrong_known.write_text(f"[127.0.0.1]:{port} {wrong_pub}\n")
    common = [f"  User {user}", f"  IdentityFile {root / 'user_key'}", "  IdentitiesOnly yes",
              "  StrictHostKeyChecking yes", f"  GlobalKnownHostsFile {root / 'no_global_known_hosts'}"]
    client = root / "ssh_config"
    client.write_text("\n".join([
        "Host board", "  HostName 127.0.0.1", f"  Port {port}", f"  UserKnownHostsFile {known}", *common,
        "Host badkey", "  HostName 127.0.0.1", f"  Port {port}", f"  UserKnownHostsFile {wrong_known}", *common,
        "Host newboard", "  HostName 127.0.0.1", f"  Port {port}", f"  UserKnownHostsFile {root / 'known_hosts_new'}",
        *common,
        "Host deadboard", "  HostName 127.0.0.1", f"  Port {dead_port}", f"  UserKnownHostsFile {known}", *common,
        "",
    ]))
    return SshServer(root, port, dead_port, client, known, user, proc, log)
