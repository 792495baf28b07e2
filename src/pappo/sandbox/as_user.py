"""Run a command as an ordinary uid, as a researcher's account would (root only; for tests and benchmarks).

    python -m pappo.sandbox.as_user --uid 1001 --home DIR [--keep PATH]... [--cwd DIR] [--no-userns] -- CMD...

The interpreter and the project may live where that uid cannot go (e.g. under a 0700 /root).
Permissions cannot be widened without touching the host, so the command gets a private mount
namespace in which such directories are covered by a tmpfs with the interpreter, `sys.path` and
the `--keep` paths bound back: the same view a user has whose venv is in their own home. It then
drops to `--uid` with no supplementary groups and no capabilities, sets HOME and runs CMD.
`--no-userns` puts it in a user namespace whose `user.max_user_namespaces` is 0: a machine where
rootless namespaces are impossible (the sandbox must then fail closed).
"""

from __future__ import annotations

import argparse
import os
import sys

from pappo.sandbox import isolation, userns


def make_reachable(keep: list[str]) -> None:
    """A private mount namespace where the interpreter, sys.path and `keep` are reachable by anyone."""
    isolation.unshare(isolation.CLONE_NEWNS)
    isolation.mount(None, "/", None, isolation.MS_REC | isolation.MS_PRIVATE)
    needed = sorted({*isolation._needed_paths(), *(os.path.realpath(p) for p in keep)})
    needed = [p for p in needed if not any(p.startswith(q + "/") for q in needed if q != p)]
    for closed, paths in isolation._closed_groups(needed).items():
        isolation._cover(closed, "1m", paths)


def forbid_user_namespaces() -> None:
    """Enter a user namespace (host ids mapped 1:1) that allows no further user namespace."""
    ready_r, ready_w = os.pipe()
    done_r, done_w = os.pipe()
    helper = os.fork()
    if helper == 0:  # stays in the host namespace: only a privileged writer may map many ids
        os.read(ready_r, 1)
        parent = os.getppid()
        for name in ("uid_map", "gid_map"):
            with open(f"/proc/{parent}/{name}", "w") as f:
                f.write("0 0 4294967295")
        os.write(done_w, b"x")
        os._exit(0)
    userns._unshare_user()
    os.write(ready_w, b"x")
    os.read(done_r, 1)
    os.waitpid(helper, 0)
    with open("/proc/sys/user/max_user_namespaces", "w") as f:
        f.write("0")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--uid", type=int, required=True)
    ap.add_argument("--home", required=True, help="HOME of the command (owned by --uid).")
    ap.add_argument("--keep", action="append", default=[], help="Another path the command must reach.")
    ap.add_argument("--cwd", help="Working directory of the command (default: HOME).")
    ap.add_argument("--no-userns", action="store_true", help="Forbid user namespaces to the command.")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if os.geteuid() != 0 or not cmd:
        sys.exit("as_user: run as root, with a command after `--`")
    make_reachable(args.keep)
    if args.no_userns:
        forbid_user_namespaces()
    os.setgroups([])
    os.setresgid(args.uid, args.uid, args.uid)
    os.setresuid(args.uid, args.uid, args.uid)  # from root to non-root: every capability is dropped
    os.environ.update(HOME=args.home, USER=f"uid{args.uid}", LOGNAME=f"uid{args.uid}")
    os.chdir(args.cwd or args.home)
    os.execvp(cmd[0], cmd)


if __name__ == "__main__":
    main()
