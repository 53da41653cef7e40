"""Ansible inventories for `edgebench remote --inventory` (parsed by ansible-core's own inventory code), and
the shipped playbook (ansible/edgebench.yml), both against the real OpenSSH server on 127.0.0.1."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from repo_paths import FIXTURES, REPO
from sshd_server import SshServer, missing_tools, start_sshd

from edgebench.remote.inventory import InventoryError, load_inventory

FIX = FIXTURES / "ansible"
SMOKE_FAST = ["--precisions", "fp32", "--batches", "1", "--instances", "1", "--duration", "0.3"]
ansible_missing = pytest.mark.skipif(
    __import__("importlib").util.find_spec("ansible") is None,
    reason="ansible-core is not installed (pip install ansible-core; it is in the dev extra)")
needs_sshd = pytest.mark.skipif(missing_tools() is not None, reason=str(missing_tools()))


# --------------------------------------------------------------------------- parsing (no ssh)

@ansible_missing
@pytest.mark.parametrize("name", ["lab.ini", "lab.yml"])
def test_ini_and_yaml_inventories_resolve_hosts_groups_and_vars(name):
    hosts = {h.name: h for h in load_inventory(FIX / name)}
    assert sorted(hosts) == ["nx1", "orin-a", "orin-b", "orin-c", "orin-d"]  # orin-[c:d] is a host range
    a, b, nx = hosts["orin-a"], hosts["orin-b"], hosts["nx1"]
    assert (a.address, a.user, a.port, a.device) == ("10.0.0.11", "nvidia", None, None)  # user from all:vars
    assert (b.port, b.device) == (2222, "orin-agx")
    assert (nx.user, nx.device, nx.remote_dir) == ("ubuntu", "orin-nx", "/opt/edgebench")  # host var wins
    assert nx.key_file == os.path.expanduser("~/.ssh/lab_key")
    assert nx.groups == ("lab", "nx") and a.groups == ("lab", "orin")
    assert b.ssh_options() == ("-o", "HostName=10.0.0.12", "-o", "User=nvidia", "-o", "Port=2222")


@ansible_missing
def test_limit_takes_ansible_patterns():
    assert [h.name for h in load_inventory(FIX / "lab.ini", "nx")] == ["nx1"]
    assert sorted(h.name for h in load_inventory(FIX / "lab.yml", "lab:!orin-b:!orin-c:!orin-d")) == ["nx1", "orin-a"]
    assert [h.name for h in load_inventory(FIX / "lab.ini", "orin-b")] == ["orin-b"]
    with pytest.raises(InventoryError, match=r"lab.ini: no host matches --limit xavier$"):
        load_inventory(FIX / "lab.ini", "xavier")


@ansible_missing
def test_the_ansible_inventory_command_gives_the_same_hosts_as_the_api():
    from edgebench.remote.inventory import _load_with_cli

    exe = shutil.which("ansible-inventory") or str(Path(sys.executable).parent / "ansible-inventory")
    if not os.access(exe, os.X_OK):
        pytest.skip("ansible-inventory command not found next to this Python")
    for name in ("lab.ini", "lab.yml"):
        assert sorted(_load_with_cli(exe, FIX / name, "all"), key=lambda h: h.name) == \
            sorted(load_inventory(FIX / name), key=lambda h: h.name)


@ansible_missing
def test_bad_inventories_fail_with_one_line_naming_the_file(tmp_path):
    with pytest.raises(InventoryError, match="no such file"):
        load_inventory(tmp_path / "nope.ini")
    bad = tmp_path / "bad.yml"
    bad.write_text("all:\n  hosts: [oops\n")
    with pytest.raises(InventoryError, match=r"bad.yml: not a usable Ansible inventory: YAML parsing failed") as info:
        load_inventory(bad)
    assert "\n" not in str(info.value)
    port = tmp_path / "port.ini"
    port.write_text("[g]\nh1 ansible_port=22x\n")
    with pytest.raises(InventoryError, match=r"port.ini: host h1: ansible_port '22x' is not a TCP port"):
        load_inventory(port)
    inject = tmp_path / "inject.ini"
    inject.write_text("[g]\nh1 ansible_user='x -oProxyCommand=touch'\n")
    with pytest.raises(InventoryError, match=r"host h1: ansible_user .* may not be empty or contain spaces"):
        load_inventory(inject)
    empty = tmp_path / "empty.ini"
    empty.write_text("[g]\n")
    with pytest.raises(InventoryError, match="lists no hosts"):
        load_inventory(empty)


def test_cli_refuses_host_and_inventory_together_and_limit_alone():
    from edgebench.cli import main

    assert main(["remote", "--host", "b", "--inventory", str(FIX / "lab.ini"), "status"]) == 2
    assert main(["remote", "--limit", "lab", "status"]) == 2


# --------------------------------------------------------------------------- against the real sshd

@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> SshServer:
    if missing_tools() is not None:
        pytest.skip(str(missing_tools()))
    server = start_sshd(tmp_path_factory.mktemp("sshd-inv"))
    yield server
    server.stop()


def lab_inventory(sshd: SshServer, tmp_path: Path) -> tuple[Path, Path]:
    """(inventory, ssh config): two boards reached only through inventory vars (address, port, user, key),
    host keys checked against the server's known_hosts; board `dead` listens nowhere."""
    inv = tmp_path / "lab.yml"
    key = sshd.root / "user_key"
    inv.write_text(f"""all:
  vars:
    ansible_host: 127.0.0.1
    ansible_user: {sshd.user}
    ansible_ssh_private_key_file: {key}
    ansible_ssh_common_args: "-o UserKnownHostsFile={sshd.known_hosts} -o StrictHostKeyChecking=yes"
    edgebench_remote_python: {sys.executable}
  children:
    lab:
      hosts:
        orin-a:
          ansible_port: {sshd.port}
          edgebench_device: smoke
          edgebench_remote_dir: {tmp_path / 'board-a'}
        dead:
          ansible_port: {sshd.dead_port}
""")
    cfg = tmp_path / "ssh_config"  # what the user's ~/.ssh/config would hold: known_hosts, no aliases
    cfg.write_text(f"Host *\n  UserKnownHostsFile {sshd.known_hosts}\n  StrictHostKeyChecking yes\n"
                   f"  GlobalKnownHostsFile {sshd.root / 'none'}\n  IdentitiesOnly yes\n")
    return inv, cfg


@ansible_missing
@needs_sshd
def test_remote_inventory_runs_the_group_end_to_end(sshd, tmp_path):
    inv, cfg = lab_inventory(sshd, tmp_path)
    cache = tmp_path / "board-cache"
    base = [sys.executable, "-m", "edgebench", "--cache", str(tmp_path / "cache"), "remote"]
    common = ["--inventory", str(inv), "--ssh-config", str(cfg), "--remote-cache", str(cache)]
    proc = subprocess.run([*base, *common, "--limit", "lab", "--export", "remote", "--", *SMOKE_FAST], cwd=tmp_path,
                          capture_output=True, text=True, timeout=240, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out  # one board of two is unreachable
    assert "[orin-a] OK: sweep finished (exit 0)" in proc.stdout, out
    assert f"[dead] FAILED: dead: unreachable while trying to create the remote folder (ssh: connect to host " \
           f"127.0.0.1 port {sshd.dead_port}: Connection refused)" in proc.stdout, out
    state = json.loads((tmp_path / "board-a" / ".edgebench-remote" / "state.json").read_text())
    assert state["argv"][state["argv"].index("--device") + 1] == "smoke"  # edgebench_device reached the board
    runs = [p for p in (tmp_path / "remote-runs" / "orin-a").iterdir() if not p.name.startswith(".")]
    assert len(runs) == 1 and runs[0].name.endswith("-smoke")
    with open(runs[0] / "results.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [(r["model"], r["status"] in ("ok", "invalid")) for r in rows] == [("tiny_cnn", True)]
    assert not (tmp_path / "remote-runs" / "dead").exists()

    status = subprocess.run([*base, "status", *common, "--limit", "orin-a"], cwd=tmp_path, capture_output=True,
                            text=True, timeout=60)
    assert status.returncode == 0, status.stdout + status.stderr
    assert f"[orin-a] OK: sweep finished (exit 0), run runs/{runs[0].name}" in status.stdout


@ansible_missing
@needs_sshd
@pytest.mark.slow
def test_the_shipped_playbook_runs_a_sweep_and_fetches_it(sshd, tmp_path):
    """ansible-playbook ansible/edgebench.yml against the loopback sshd: pack + unpack the checkout, start the
    sweep detached through edgebench's agent, poll, fetch runs/<id> to remote-runs/<host>/<id>/."""
    playbook_bin = Path(sys.executable).parent / "ansible-playbook"
    if not os.access(playbook_bin, os.X_OK):
        pytest.skip(f"ansible-playbook not found at {playbook_bin}")
    inv, _cfg = lab_inventory(sshd, tmp_path)
    local = tmp_path / "fetched"
    env = {**os.environ, "ANSIBLE_HOME": str(tmp_path / "ansible-home"), "ANSIBLE_LOCAL_TEMP": str(tmp_path / "lt"),
           "ANSIBLE_REMOTE_TEMP": str(tmp_path / "rt"), "ANSIBLE_NOCOLOR": "1", "ANSIBLE_RETRY_FILES_ENABLED": "0",
           "TMPDIR": str(tmp_path), "ANSIBLE_PYTHON_INTERPRETER": sys.executable}
    extra = {"edgebench_src": str(REPO), "edgebench_local_dir": str(local), "edgebench_poll_s": 1,
             "edgebench_remote_cache": str(tmp_path / "board-cache"),
             "edgebench_bench_args": SMOKE_FAST}
    proc = subprocess.run([str(playbook_bin), "-i", str(inv), str(REPO / "ansible" / "edgebench.yml"),
                           "-l", "orin-a", "-e", json.dumps(extra)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300, env=env)
    out = proc.stdout[-4000:] + proc.stderr[-2000:]
    assert proc.returncode == 0, out
    assert "orin-a                     : ok=" in proc.stdout and "failed=0" in proc.stdout, out
    runs = [p for p in (local / "orin-a").iterdir() if p.is_dir()]
    assert len(runs) == 1 and runs[0].name.endswith("-smoke"), out
    with open(runs[0] / "results.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 1 and rows[0]["status"] in ("ok", "invalid") and float(rows[0]["throughput_ips"]) > 0
    assert (tmp_path / "board-a" / "pyproject.toml").is_file()  # the checkout was unpacked on the board
