#!/usr/bin/python3
"""The commit a binary records (spartan-sim microbench --out: build.commit) is the checkout's: in a clean tree,
`git rev-parse --short=12 HEAD` exactly; with uncommitted changes or untracked files, that hash followed by
"-dirty-" and 8 hex digits (the work tree's git tree object when the binary was built, so only its form is
checked). Exit 77 (skipped) when the source tree is not a git checkout git can read or has no commit.
Usage: test_build_info.py SOURCE_DIR BIN_DIR"""
import json
import os
import re
import subprocess
import sys
import tempfile


def git(src, *args):
    r = subprocess.run(["git", "-C", src, *args], capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else None


def main():
    src, bindir = sys.argv[1], sys.argv[2]
    top = git(src, "rev-parse", "--show-toplevel")
    if top is None or os.path.realpath(top) != os.path.realpath(src):
        print("skipped: %s is not the top of a git checkout git can read" % src)
        return 77
    head = git(src, "rev-parse", "--short=12", "HEAD")
    if head is None:
        print("skipped: %s has no commit yet" % src)
        return 77
    dirty = git(src, "status", "--porcelain")  # tracked changes and untracked files not ignored, as the build
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "mb.json")
        r = subprocess.run([os.path.join(bindir, "spartan-sim"), "microbench", "--gpu",
                            os.path.join(src, "hw/spartan/tests/data/tiny_gpu.yaml"), "--only", "chase", "--out", out],
                           capture_output=True, text=True)
        if r.returncode != 0:
            print("FAIL: spartan-sim microbench exited %d: %s" % (r.returncode, r.stderr.strip()))
            return 1
        commit = json.load(open(out))["build"]["commit"]
    ok = commit == head if not dirty else re.fullmatch(re.escape(head) + r"-dirty-([0-9a-f]{8}|unknown)", commit) is not None
    print("checkout %s%s, binary records %s" % (head, " (uncommitted changes)" if dirty else "", commit))
    if not ok:
        print("FAIL: the binary's commit does not match the checkout (a binary built from another tree: rebuild)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
