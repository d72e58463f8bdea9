"""A rank that finished leaves through :func:`fsdpcfg.train.entry.exit_rank`: its exit code is the one given, what
it printed is flushed, and nothing of the interpreter's teardown runs (a rank of a finished run was seen to abort
there, SIGABRT after its last step, which failed the whole run)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

_CHILD = textwrap.dedent(
    """
    import atexit, os, sys
    from fsdpcfg.train.entry import exit_rank

    atexit.register(os.abort)  # stands in for a teardown that aborts: exit_rank must not reach it
    print("last step's metrics")  # block-buffered: stdout is a pipe
    sys.stderr.write("a warning\\n")
    exit_rank(int(sys.argv[1]))
    """
)


def _run(code: int) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", _CHILD, str(code)], capture_output=True, text=True, timeout=120)


def test_exit_rank_skips_teardown_and_keeps_output_and_code():
    ok = _run(0)
    assert (ok.returncode, ok.stdout, ok.stderr) == (0, "last step's metrics\n", "a warning\n")
    failed = _run(3)
    assert (failed.returncode, failed.stdout) == (3, "last step's metrics\n")


def test_the_teardown_stand_in_does_abort_without_exit_rank():
    child = _CHILD.replace("exit_rank(int(sys.argv[1]))", "sys.exit(int(sys.argv[1]))")
    p = subprocess.run([sys.executable, "-c", child, "0"], capture_output=True, text=True, timeout=120)
    assert p.returncode == -6  # SIGABRT: the stand-in is a real abort, so the test above can fail
