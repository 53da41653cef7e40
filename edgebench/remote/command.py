"""`edgebench remote`: run a sweep on one or many boards over ssh, in parallel, and fetch the results.

  edgebench remote --host user@orin1,user@orin2 [--device orin] -- --models resnet50 --batches 1,8
  edgebench remote status|attach|fetch --host user@orin1[,...]
  edgebench remote [ACTION] --inventory hosts.ini [--limit lab] -- <bench args>   (an Ansible inventory)

Each board runs its own sweep (its own run id); one failing or unreachable board is reported and the
others finish. Exit status: 0 when every board succeeded, 1 otherwise, 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import sys
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from edgebench.commands.options import EXIT_INTERRUPTED
from edgebench.errors import EdgebenchError, exc_text
from edgebench.remote.board import (
    BoardResult,
    RemoteOptions,
    attach_board,
    fetch_board,
    run_board,
    status_board,
)
from edgebench.remote.inventory import load_inventory
from edgebench.remote.sanitize import check_extras, printable
from edgebench.remote.ship import sweep_models
from edgebench.remote.ssh import check_host, remote_dir_arg

if TYPE_CHECKING:  # pragma: no cover
    from edgebench.remote.inventory import InventoryHost

ACTIONS = ("start", "status", "attach", "fetch")
FORBIDDEN_BENCH_ARGS = ("--out", "--resume")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="edgebench remote",
        description="Run `edgebench bench` on Jetson boards over ssh (OpenSSH client: ~/.ssh/config and "
                    "known_hosts apply) and fetch runs/<id> to <local-dir>/<board>/<id>/.",
        epilog="Everything after `--` goes to `edgebench bench` on every board.",
    )
    p.add_argument("action", nargs="?", choices=ACTIONS, default="start",
                   help="start (default): sync, start detached, follow, fetch; status: state of the last sweep; "
                        "attach: follow a running or finished sweep, then fetch; fetch: copy its run folder here")
    p.add_argument("--host", help="user@board or ssh alias; several comma-separated run in parallel")
    p.add_argument("--inventory", "-i", metavar="FILE",
                   help="an Ansible inventory (INI or YAML): its hosts are the boards; ansible_host/_user/_port/"
                        "_ssh_private_key_file and edgebench_device/_remote_dir/_remote_python are used per host")
    p.add_argument("--limit", "-l", metavar="PATTERN", help="with --inventory: only hosts matching this Ansible "
                                                           "pattern (a group, a host, 'lab:!broken', ...)")
    p.add_argument("--device", help="profile on the board (passed to bench as --device)")
    p.add_argument("--remote-dir", help="project folder on the board (default ~/edgebench, or the inventory's "
                                        "edgebench_remote_dir)")
    p.add_argument("--remote-python", help="an existing Python on the board with edgebench's dependencies "
                                           "(skips `make setup` there)")
    p.add_argument("--remote-extras", help="EXTRAS for `make setup` on the board (default: the Makefile's "
                                           "choice; on a Jetson ort,progress,dev with the system site-packages)")
    p.add_argument("--export", choices=["auto", "local", "remote"], default="auto",
                   help="where models are exported to ONNX: auto (here when the board has no torch), local, remote")
    p.add_argument("--remote-cache", help="EDGEBENCH_CACHE on the board (default there: ~/.cache/edgebench)")
    p.add_argument("--local-dir", default="remote-runs", help="fetched runs go to LOCAL_DIR/<board>/<run-id>/")
    p.add_argument("--ssh-config", "-F", help="ssh client config file (ssh -F)")
    p.add_argument("--connect-timeout", type=int, default=10, help="ssh ConnectTimeout in seconds")
    p.add_argument("--no-fetch", action="store_true", help="attach: follow only, do not fetch")
    return p


def split_argv(argv: list[str]) -> tuple[list[str], list[str]]:
    if "--" in argv:
        i = argv.index("--")
        return argv[:i], argv[i + 1:]
    return argv, []


def check_bench_args(bench_args: list[str]) -> None:
    for arg in bench_args:
        for bad in FORBIDDEN_BENCH_ARGS:
            if arg == bad or arg.startswith(bad + "="):
                raise EdgebenchError(f"edgebench remote: bench argument {bad} is not supported: a remote sweep "
                                     "writes runs/<id> in the remote folder, and is fetched from there")


class Printer:
    """Thread-safe lines, each prefixed with its board."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stdout
        self.lock = threading.Lock()

    def for_host(self, host: str) -> Callable[[str], None]:
        def say(line: str) -> None:
            with self.lock:  # board text never drives the terminal: control characters are shown, not sent
                print(printable(f"[{host}] {line}"), file=self.stream, flush=True)

        return say


def main(argv: list[str], cache: str | None = None) -> int:
    own, bench_args = split_argv(argv)
    args = build_parser().parse_args(own)
    if args.limit and not args.inventory:
        raise EdgebenchError("edgebench remote: --limit needs --inventory")
    if bool(args.host) == bool(args.inventory):
        raise EdgebenchError("edgebench remote: give --host user@board[,...] or --inventory FILE (one of them)")
    inventory: dict[str, InventoryHost] = {}
    if args.inventory:
        inventory = {h.name: h for h in load_inventory(args.inventory, args.limit)}
        hosts = list(inventory)
    else:
        hosts = [check_host(h.strip()) for h in args.host.split(",") if h.strip()]
    if not hosts:
        raise EdgebenchError("edgebench remote: --host needs at least one user@board")
    if len(set(hosts)) != len(hosts):
        raise EdgebenchError(f"edgebench remote: --host names a board twice: {args.host}")
    if args.action != "start" and bench_args:
        raise EdgebenchError(f"edgebench remote {args.action}: takes no bench arguments (got {' '.join(bench_args)})")
    if args.device:
        if any(a == "--device" or a.startswith("--device=") for a in bench_args):
            raise EdgebenchError("edgebench remote: --device given twice (before and after --)")
        bench_args = ["--device", args.device, *bench_args]
    check_bench_args(bench_args)
    if args.remote_extras is not None:
        check_extras(args.remote_extras)
    opts = RemoteOptions(
        remote_dir=remote_dir_arg(args.remote_dir or "~/edgebench"), local_dir=Path(args.local_dir),
        remote_python=args.remote_python, remote_extras=args.remote_extras, export=args.export,
        remote_cache=args.remote_cache, local_cache=cache, ssh_config=args.ssh_config,
        connect_timeout_s=args.connect_timeout,
    )
    where = f"--host {args.host}" if args.host else f"--inventory {args.inventory}" + \
        (f" --limit {args.limit}" if args.limit else "")
    host_opts = {h: opts for h in hosts}
    host_bench = {h: bench_args for h in hosts}
    given_device = any(a == "--device" or a.startswith("--device=") for a in bench_args)
    for name, inv in inventory.items():  # the command line wins over the inventory's vars
        host_opts[name] = replace(
            opts, ssh_options=inv.ssh_options(),
            remote_dir=opts.remote_dir if args.remote_dir or not inv.remote_dir else remote_dir_arg(inv.remote_dir),
            remote_python=args.remote_python or inv.remote_python)
        if inv.device and not given_device:
            host_bench[name] = ["--device", inv.device, *bench_args]
    if args.action == "start" and args.export != "remote":
        for distinct in {tuple(b) for b in host_bench.values()}:
            sweep_models(list(distinct))  # bad bench arguments, profiles or models fail here, before any board
    printer = Printer()
    results: dict[str, BoardResult] = {}

    def work(host: str) -> None:
        say = printer.for_host(host)
        try:
            if args.action == "start":
                res = run_board(host, host_opts[host], host_bench[host], say)
            elif args.action == "attach":
                res = attach_board(host, host_opts[host], say, fetch=not args.no_fetch)
            elif args.action == "fetch":
                res = fetch_board(host, host_opts[host], say)
            else:
                res = status_board(host, host_opts[host], say)
        except EdgebenchError as exc:  # e.g. a model that fails to export for this board
            res = BoardResult(host, ok=False, message=str(exc))
        except Exception as exc:  # one board's bug must not take the others down
            res = BoardResult(host, ok=False, message=exc_text(exc))
        results[host] = res

    threads = [threading.Thread(target=work, args=(h,), name=f"remote-{h}", daemon=True) for h in hosts]
    for t in threads:
        t.start()
    try:
        for t in threads:
            t.join()
    except KeyboardInterrupt:
        print("edgebench remote: interrupted here; sweeps already started go on on their boards: "
              f"`edgebench remote attach {where}` to follow, `... fetch` for the results", file=sys.stderr)
        return EXIT_INTERRUPTED
    for host in hosts:
        res = results[host]
        printer.for_host(host)(("OK: " if res.ok else "FAILED: ") + res.message)
    failed = [h for h in hosts if not results[h].ok]
    if failed:
        print(f"edgebench remote: {len(failed)} of {len(hosts)} boards failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0
