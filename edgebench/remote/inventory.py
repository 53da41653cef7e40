"""Ansible inventories for `edgebench remote --inventory FILE [--limit PATTERN]`.

A lab with many boards already lists them for Ansible: hosts, groups (`children`), and per-host or per-group
vars. edgebench reads that file with ansible-core's own inventory code (InventoryManager + VariableManager,
imported lazily), so INI and YAML inventories, group/host vars, `children`, host ranges (`orin[01:20]`) and
--limit patterns (`lab:!broken`, `orin*`) mean exactly what they mean to `ansible-playbook`. Without
ansible-core in this Python, the `ansible-inventory` command (e.g. a pipx install) is used instead.

Per host, these vars are used (others are ignored):
  ansible_host, ansible_user, ansible_port, ansible_ssh_private_key_file -> ssh -o HostName/User/Port/IdentityFile
  edgebench_device         -> `bench --device` on that board (unless --device is given on the command line)
  edgebench_remote_dir     -> --remote-dir for that board (unless given on the command line)
  edgebench_remote_python  -> --remote-python for that board (unless given on the command line)
The inventory host name is the board's name: its folder under remote-runs/ and its prefix in the output.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgebench.errors import EdgebenchError
from edgebench.remote.ssh import check_host

SAFE_VALUE = re.compile(r"^[^\s'\"\\]+$")  # values become `ssh -o Key=value` (also inside rsync -e)


class InventoryError(EdgebenchError):
    """The inventory cannot be used; the message names the file (and the host or var)."""


@dataclass(frozen=True)
class InventoryHost:
    name: str                                 # the inventory's host name
    address: str | None = None                # ansible_host
    user: str | None = None                   # ansible_user
    port: int | None = None                   # ansible_port
    key_file: str | None = None               # ansible_ssh_private_key_file
    device: str | None = None                 # edgebench_device
    remote_dir: str | None = None             # edgebench_remote_dir
    remote_python: str | None = None          # edgebench_remote_python
    groups: tuple[str, ...] = field(default_factory=tuple)

    def ssh_options(self) -> tuple[str, ...]:
        """`-o` options that reach this host as Ansible's ssh connection would (they override ~/.ssh/config)."""
        out: list[str] = []
        for key, value in (("HostName", self.address), ("User", self.user), ("Port", self.port),
                           ("IdentityFile", self.key_file)):
            if value is not None:
                out += ["-o", f"{key}={value}"]
        return tuple(out)


def _str_var(source: str, host: str, hv: dict[str, Any], key: str) -> str | None:
    value = hv.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise InventoryError(f"{source}: host {host}: {key} must be a string, got {type(value).__name__} {value!r}")
    text = str(value)
    if key == "ansible_ssh_private_key_file":
        text = os.path.expanduser(text)
    if not SAFE_VALUE.match(text):
        raise InventoryError(f"{source}: host {host}: {key} {text!r} may not be empty or contain spaces, quotes "
                             "or backslashes")
    return text


def host_from_vars(source: str, name: str, hv: dict[str, Any], groups: list[str]) -> InventoryHost:
    try:
        check_host(name)
    except EdgebenchError:
        raise InventoryError(f"{source}: host name {name!r} is not usable as a board name (letters, digits, . _ - "
                             "@ :)") from None
    port_raw = hv.get("ansible_port")
    port: int | None = None
    if port_raw is not None:
        try:
            port = int(port_raw)
        except (TypeError, ValueError):
            port = -1
        if isinstance(port_raw, bool) or not 0 < port < 65536:
            raise InventoryError(f"{source}: host {name}: ansible_port {port_raw!r} is not a TCP port (1-65535)")
    return InventoryHost(
        name=name, address=_str_var(source, name, hv, "ansible_host"), user=_str_var(source, name, hv, "ansible_user"),
        port=port, key_file=_str_var(source, name, hv, "ansible_ssh_private_key_file"),
        device=_str_var(source, name, hv, "edgebench_device"),
        remote_dir=_str_var(source, name, hv, "edgebench_remote_dir"),
        remote_python=_str_var(source, name, hv, "edgebench_remote_python"),
        groups=tuple(sorted(g for g in groups if g != "all")),
    )


def _why_unparsed(captured: str, path: Path) -> str:
    """The parse error of the plugin that matches the file (yaml for .yml/.yaml, else ini), one line."""
    want = "yaml" if path.suffix in (".yml", ".yaml") else "ini"
    lines = [ln for ln in captured.splitlines() if "Failed to parse inventory with" in ln]
    pick = next((ln for ln in lines if f"'{want}' plugin" in ln), lines[-1] if lines else "")
    return pick.split("plugin:", 1)[-1].strip() if pick else "not an INI or YAML inventory"


def _load_with_api(path: Path, pattern: str) -> list[InventoryHost]:
    from ansible.errors import AnsibleError
    from ansible.inventory.manager import InventoryManager
    from ansible.parsing.dataloader import DataLoader
    from ansible.vars.manager import VariableManager

    from ansible import constants as ansible_constants  # type: ignore[attr-defined]  # lazy: ansible-core is optional

    ansible_constants.INVENTORY_UNPARSED_IS_FAILED = True  # a file no plugin parses is an error, not 0 hosts
    captured = io.StringIO()
    with contextlib.redirect_stderr(captured), contextlib.redirect_stdout(captured):  # ansible's own warnings
        try:
            loader = DataLoader()
            inventory = InventoryManager(loader=loader, sources=[str(path)])
            variables = VariableManager(loader=loader, inventory=inventory)
            found = inventory.get_hosts(pattern)
            per_host = [(h.name, variables.get_vars(host=h, include_hostvars=False),
                         [g.name for g in h.get_groups()]) for h in found]
        except AnsibleError as exc:
            text = captured.getvalue()
            why = _why_unparsed(text, path) if "Failed to parse inventory with" in text else str(exc).splitlines()[0]
            raise InventoryError(f"{path}: not a usable Ansible inventory: {why}") from None
    return [host_from_vars(str(path), name, dict(hv), groups) for name, hv, groups in per_host]


def _load_with_cli(exe: str, path: Path, pattern: str) -> list[InventoryHost]:
    """`ansible-inventory -i FILE --list --limit PATTERN` (JSON: groups with hosts/children, _meta.hostvars)."""
    proc = subprocess.run([exe, "-i", str(path), "--list", "--limit", pattern], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "ANSIBLE_INVENTORY_UNPARSED_FAILED": "True"})
    if proc.returncode != 0:
        why = _why_unparsed(proc.stderr, path) if "Failed to parse inventory with" in proc.stderr else \
            (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        raise InventoryError(f"{path}: not a usable Ansible inventory ({exe}): {why}")
    data = json.loads(proc.stdout)
    hostvars = data.get("_meta", {}).get("hostvars", {})
    groups_of: dict[str, list[str]] = {}

    def walk(group: str, parents: list[str]) -> None:
        node = data.get(group, {})
        for h in node.get("hosts", []):
            groups_of.setdefault(h, [])
            groups_of[h] += [g for g in (*parents, group) if g not in groups_of[h]]
        for child in node.get("children", []):
            walk(child, [*parents, group])

    walk("all", [])
    return [host_from_vars(str(path), name, dict(hostvars.get(name, {})), groups_of[name]) for name in groups_of]


def load_inventory(path: str | Path, limit: str | None = None) -> list[InventoryHost]:
    """The hosts of an Ansible inventory file matching `limit` (an Ansible host pattern; default all), in the
    inventory's order. InventoryError for a missing/unparsable file, bad vars, or a limit matching nothing."""
    path = Path(path)
    if not path.is_file():
        raise InventoryError(f"--inventory {path}: no such file")
    pattern = limit or "all"
    try:
        import ansible  # noqa: F401 - only to know whether the API is here
    except ImportError:
        exe = shutil.which("ansible-inventory") or shutil.which("ansible-inventory", path=str(Path(sys.executable).parent))
        if exe is None:
            raise InventoryError("--inventory needs ansible-core: pip install ansible-core (or put `ansible-inventory` "
                                 "on PATH)") from None
        hosts = _load_with_cli(exe, path, pattern)
    else:
        hosts = _load_with_api(path, pattern)
    if not hosts:
        raise InventoryError(f"{path}: no host matches --limit {limit}" if limit else f"{path}: lists no hosts")
    return hosts
