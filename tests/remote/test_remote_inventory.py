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


# --------------------------------------------------------------------------- issue 21: a hostile board, EXTRAS

def _playbook_env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "ANSIBLE_HOME": str(tmp_path / "ansible-home"), "ANSIBLE_LOCAL_TEMP": str(tmp_path / "lt"),
            "ANSIBLE_REMOTE_TEMP": str(tmp_path / "rt"), "ANSIBLE_NOCOLOR": "1", "ANSIBLE_RETRY_FILES_ENABLED": "0",
            "TMPDIR": str(tmp_path), "ANSIBLE_PYTHON_INTERPRETER": sys.executable,
            "ANSIBLE_ROLES_PATH": str(REPO / "ansible" / "roles")}


def _playbook_bin() -> Path:
    path = Path(sys.executable).parent / "ansible-playbook"
    if not os.access(path, os.X_OK):
        pytest.skip(f"ansible-playbook not found at {path}")
    return path


def _fetch_only(sshd: SshServer, tmp_path: Path, run_dir: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    """The role's fetch tasks (tasks/fetch.yml, as the full play runs them) against board orin-a, whose agent
    reported `run_dir`; returns (ansible-playbook's result, the local folder of orin-a's runs)."""
    inv, _cfg = lab_inventory(sshd, tmp_path)
    play = tmp_path / "fetch.yml"
    play.write_text("- hosts: orin-a\n  gather_facts: false\n  tasks:\n"
                    "    - ansible.builtin.include_role: {name: edgebench, tasks_from: fetch}\n")
    local = tmp_path / "fetched"
    extra = {"edgebench_src": str(REPO), "edgebench_local_dir": str(local), "eb_dir": str(tmp_path / "board-a"),
             "eb_state": {"run_dir": run_dir, "status": "finished", "exit_code": 0}}
    proc = subprocess.run([str(_playbook_bin()), "-i", str(inv), str(play), "-e", json.dumps(extra)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, env=_playbook_env(tmp_path))
    return proc, local / "orin-a"


@ansible_missing
@needs_sshd
def test_the_playbook_fetch_never_recreates_a_boards_links_or_specials(sshd, tmp_path):
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "key").write_text("private")
    run = tmp_path / "board-a" / "runs" / "r1"
    (run / "rows" / "0000-h").mkdir(parents=True)
    (tmp_path / "board-a" / ".edgebench-remote").mkdir()
    (run / "results.csv").write_text("model,backend,precision,batch,status\ntiny_cnn,null,fp32,1,ok\n")
    (run / "rows" / "0000-h" / "row.json").write_text("{}")
    (run / "passwd").symlink_to("/etc/passwd")
    (run / "rows" / "home").symlink_to(secret)
    (run / "rows" / "0000-h" / "telemetry_host.csv").symlink_to(secret / "key")
    os.mkfifo(run / "pipe")
    proc, local = _fetch_only(sshd, tmp_path, "runs/r1")
    out = proc.stdout[-4000:] + proc.stderr[-2000:]
    assert proc.returncode == 0, out
    got = sorted(str(p.relative_to(local)) for p in local.rglob("*") if not p.name.startswith("."))
    assert got == ["r1", "r1/results.csv", "r1/rows", "r1/rows/0000-h", "r1/rows/0000-h/row.json"], out
    assert not any(p.is_symlink() for p in local.rglob("*"))
    assert "not fetched (symlinks and special files never are): r1/" in out
    for entry in ("r1/passwd (symlink -> /etc/passwd)", f"r1/rows/home (symlink -> {secret})", "r1/pipe (fifo)",
                  f"r1/rows/0000-h/telemetry_host.csv (symlink -> {secret / 'key'})"):
        assert entry in out, out
    report = subprocess.run([sys.executable, "-m", "edgebench", "report", str(local / "r1"), "--formats", "png"],
                            capture_output=True, text=True, cwd=REPO, timeout=300,
                            env={**os.environ, "PYTHONPATH": str(REPO), "MPLBACKEND": "Agg"})
    assert report.returncode == 0 and "Traceback" not in report.stderr, report.stderr


@ansible_missing
@needs_sshd
def test_the_playbook_refuses_a_run_folder_that_is_a_link(sshd, tmp_path):
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "results.csv").write_text("model\nstolen\n")
    (tmp_path / "board-a" / "runs").mkdir(parents=True)
    (tmp_path / "board-a" / ".edgebench-remote").mkdir()
    (tmp_path / "board-a" / "runs" / "linked").symlink_to(secret)
    proc, local = _fetch_only(sshd, tmp_path, "runs/linked")
    out = proc.stdout[-4000:] + proc.stderr[-2000:]
    assert proc.returncode != 0, out
    assert "linked in the archive is a symlink -> " in out and "not a folder; nothing unpacked" in out, out
    assert not (local / "linked").exists() and not (local / "linked").is_symlink()


@ansible_missing
@needs_sshd
def test_the_playbook_refuses_extras_that_are_not_names(sshd, tmp_path):
    marker = tmp_path / "pwned"
    inv, _cfg = lab_inventory(sshd, tmp_path)
    extra = {"edgebench_src": str(REPO), "edgebench_local_dir": str(tmp_path / "fetched"),
             "edgebench_make_extras": f"x]' ; touch {marker} ; '[", "edgebench_python": ""}
    proc = subprocess.run([str(_playbook_bin()), "-i", str(inv), str(REPO / "ansible" / "edgebench.yml"),
                           "-l", "orin-a", "-e", json.dumps(extra)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300, env=_playbook_env(tmp_path))
    out = proc.stdout[-4000:] + proc.stderr[-2000:]
    assert proc.returncode != 0, out
    assert "is not a comma-separated list of extras names" in out, out
    assert not marker.exists()
    assert not (tmp_path / "board-a").exists()  # refused before anything reached the board
