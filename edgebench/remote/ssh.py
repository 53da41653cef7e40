"""The OpenSSH client as edgebench uses it: `ssh` and `rsync -e ssh`, so ~/.ssh/config (aliases, keys,
ProxyJump) and known_hosts apply exactly as they do for the user.

Host keys are verified the way OpenSSH does it; edgebench never turns that off. BatchMode=yes makes a
missing key or an unknown host fail at once instead of waiting for a prompt no one can answer (boards
run in parallel threads): log in with a key (`ssh-copy-id user@board`) and connect once by hand to
check and record the board's host key.

Every remote command is one string built with shlex.quote per argument, so a model name such as
"x; rm -rf ~" reaches edgebench on the board as that literal text.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

from edgebench.errors import EdgebenchError

SSH_FAILED = 255  # ssh's own exit status for connection / authentication errors
HOST_RE = re.compile(r"^[A-Za-z0-9_.@%:\[\]-]+$")


class RemoteError(EdgebenchError):
    """A board could not be used; the message names the board."""


class HostKeyError(RemoteError):
    """The board's host key is unknown or does not match known_hosts: nothing was run."""


class UnreachableError(RemoteError):
    """No ssh connection to the board (refused, timed out, unknown name)."""


class AuthError(RemoteError):
    """ssh reached the board but could not log in."""


def check_host(host: str) -> str:
    """A host as ssh takes it (user@name, name, alias); never something ssh would read as an option."""
    if not host or host.startswith("-") or not HOST_RE.match(host):
        raise RemoteError(f"host {host!r}: expected user@board or an ssh config alias (letters, digits, . _ - @ :)")
    return host


def classify(host: str, what: str, stderr: str) -> RemoteError:
    """The RemoteError for ssh's own failure (exit status 255), with what to do about it."""
    text = stderr.strip()
    last = text.splitlines()[-1] if text else "no message from ssh"
    if "REMOTE HOST IDENTIFICATION HAS CHANGED" in text or "Host key for" in text and "has changed" in text:
        return HostKeyError(
            f"{host}: host key does NOT match known_hosts (a different machine answers, or the board was "
            f"reinstalled); refused, nothing was run. If the board was reinstalled, check its new key, then "
            f"`ssh-keygen -R <host>` and connect once with `ssh {host}`. ssh said: {last}")
    if "Host key verification failed" in text or "No ED25519 host key is known" in text \
            or "host key is known" in text:
        return HostKeyError(
            f"{host}: host key not verified (not in known_hosts); refused, nothing was run. Connect once with "
            f"`ssh {host}` to check and record it. ssh said: {last}")
    if "Permission denied" in text or "Too many authentication failures" in text:
        return AuthError(f"{host}: login refused ({last}); edgebench needs key-based login (ssh-copy-id {host})")
    unreachable = ("Connection refused", "Connection timed out", "timed out", "No route to host",
                   "Could not resolve hostname", "Network is unreachable", "Name or service not known",
                   "Connection closed", "Connection reset", "kex_exchange_identification")
    if any(u in text for u in unreachable):
        return UnreachableError(f"{host}: unreachable while trying to {what} ({last})")
    return RemoteError(f"{host}: ssh failed while trying to {what} ({last})")


@dataclass(frozen=True)
class Ssh:
    """How to reach one board."""

    host: str
    ssh_config: str | None = None  # passed as `ssh -F FILE`
    connect_timeout_s: int = 10
    extra_options: tuple[str, ...] = ()  # e.g. ("-o", "HostName=10.0.0.5", "-o", "Port=2222") from an inventory

    def __post_init__(self) -> None:
        check_host(self.host)
        if self.ssh_config is not None and re.search(r"[\s'\"\\]", self.ssh_config):
            raise RemoteError(f"--ssh-config {self.ssh_config!r}: the path may not contain spaces, quotes or "
                              "backslashes (it is passed to rsync -e)")

    def options(self) -> list[str]:
        opts = ["ssh"]
        if self.ssh_config:
            opts += ["-F", self.ssh_config]
        return opts + [*self.extra_options, "-o", "BatchMode=yes", "-o", f"ConnectTimeout={self.connect_timeout_s}",
                       "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=6"]

    def argv(self, remote_cmd: str) -> list[str]:
        """ssh argv running `remote_cmd` (already a quoted shell string) on the board."""
        return [*self.options(), "-T", "--", self.host, remote_cmd]

    def run(self, remote_cmd: str, what: str, timeout_s: float = 120.0) -> subprocess.CompletedProcess[str]:
        """Run a command; RemoteError when ssh itself failed, else the completed process (any exit status)."""
        try:
            proc = subprocess.run(self.argv(remote_cmd), capture_output=True, text=True, timeout=timeout_s,
                                  stdin=subprocess.DEVNULL)
        except FileNotFoundError:
            raise RemoteError("the OpenSSH client `ssh` is not installed (apt-get install openssh-client)") from None
        except subprocess.TimeoutExpired:
            raise UnreachableError(f"{self.host}: no answer within {timeout_s:g} s while trying to {what}") from None
        if proc.returncode == SSH_FAILED:
            raise classify(self.host, what, proc.stderr)
        return proc

    def check(self, remote_cmd: str, what: str, timeout_s: float = 120.0) -> str:
        """Run a command that must succeed; its stdout."""
        proc = self.run(remote_cmd, what, timeout_s)
        if proc.returncode != 0:
            tail = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-5:]) or "no output"
            raise RemoteError(f"{self.host}: could not {what} (exit {proc.returncode}): {tail}")
        return proc.stdout

    def rsync_argv(self, *args: str) -> list[str]:
        # -s (--protect-args): file names travel inside the rsync protocol, never through the remote shell
        return ["rsync", "-s", "-e", shlex.join(self.options()), *args]

    def rsync(self, args: Sequence[str], what: str, timeout_s: float = 900.0) -> subprocess.CompletedProcess[str]:
        try:
            proc = subprocess.run(self.rsync_argv(*args), capture_output=True, text=True, timeout=timeout_s,
                                  stdin=subprocess.DEVNULL)
        except FileNotFoundError:
            raise RemoteError("rsync is not installed here (apt-get install rsync)") from None
        except subprocess.TimeoutExpired:
            raise RemoteError(f"{self.host}: rsync did not finish within {timeout_s:g} s while trying to {what}") from None
        if proc.returncode != 0:
            err = proc.stderr
            if "command not found" in err or "rsync: not found" in err:
                raise RemoteError(f"{self.host}: rsync is missing on the board (sudo apt-get install rsync)")
            if "Host key" in err or "host key" in err or "Permission denied" in err or "Connection" in err:
                raise classify(self.host, what, err)
            tail = " | ".join(err.strip().splitlines()[-3:]) or f"exit {proc.returncode}"
            raise RemoteError(f"{self.host}: rsync failed while trying to {what}: {tail}")
        return proc

    def remote(self, path: str) -> str:
        """rsync's HOST:PATH for a path on the board."""
        return f"{self.host}:{path}"


def remote_dir_arg(text: str) -> str:
    """The remote folder as edgebench passes it: '~/x' becomes 'x' (ssh and rsync start in the home folder;
    a quoted '~' would not expand)."""
    if not text or "\n" in text or "\0" in text:
        raise RemoteError(f"--remote-dir {text!r}: expected a folder path")
    if text == "~" or text == "~/":
        raise RemoteError("--remote-dir ~: give a folder inside the home folder, e.g. ~/edgebench")
    if text.startswith("~/"):
        text = text[2:]
    elif text.startswith("~"):
        raise RemoteError(f"--remote-dir {text!r}: ~user paths are not supported; use an absolute path")
    text = text.rstrip("/")
    if text in ("", ".", "/") or text.startswith("../") or text == "..":
        raise RemoteError(f"--remote-dir {text or '/'!r}: give a folder of its own, e.g. ~/edgebench")
    return text
