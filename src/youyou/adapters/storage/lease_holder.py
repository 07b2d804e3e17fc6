"""Lease holders named so that any process can tell whether one has ended.

A holder reads ``<program>, pid <pid> on <host>``, maybe followed by `` (<tag>)``: people see it
in "in use by another process (…)" errors. A lease whose holder ran on this machine and whose
process is gone (SIGKILL, the out-of-memory killer, a crash) is taken over at once instead of
after its expiry, since nobody can be writing under it: a restarted server, or a ``youyou chat``
after a killed one, goes on at once (``SqlSessionLeases.acquire`` does the taking over, and
``SqlSessionLeases.holder`` does not name it). A holder on another machine, or one written in
another form, is left to expire. The ledger's own
sequence guard still refuses a second writer should two machines ever share a host name.
"""

from __future__ import annotations

import os
import re
import socket

_HOLDER = re.compile(r"youyou [a-z]+, pid (\d+) on (\S+)(?: \(.*\))?")


def local_holder(program: str, tag: str | None = None) -> str:
    """This process as a lease holder: ``program`` is how people know it (``youyou chat``)."""
    holder = f"{program}, pid {os.getpid()} on {socket.gethostname()}"
    return holder if tag is None else f"{holder} ({tag})"


def holder_has_ended(holder: str) -> bool:
    """Whether ``holder`` names a process of this machine that no longer runs."""
    match = _HOLDER.fullmatch(holder)
    if match is None or match[2] != socket.gethostname():
        return False
    try:
        os.kill(int(match[1]), 0)
    except ProcessLookupError:
        return True
    except OSError:  # alive, but another user's
        return False
    return False
