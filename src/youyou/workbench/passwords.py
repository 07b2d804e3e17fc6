"""The password policy of new passwords (sign-up and change): beyond the length the request
schema checks, no password from the shipped list of common passwords and none that is the
username with a few characters around it. Sign-in checks only the stored hash."""

from __future__ import annotations

from functools import lru_cache
from importlib.resources import files

from youyou.workbench.errors import ApiCode, ApiError

# ``carol`` → ``carol123`` or ``Carol!24`` is refused: the username plus this many characters.
AROUND_USERNAME = 4


@lru_cache(maxsize=1)
def common_passwords() -> frozenset[str]:
    """The shipped list, lower case (loaded on first use; about 11,600 entries)."""
    text = files("youyou.workbench").joinpath("common_passwords.txt").read_text("utf-8")
    return frozenset(
        line.strip().lower() for line in text.splitlines() if line and not line.startswith("#")
    )


def check_new_password(password: str, username: str) -> None:
    """Refuses with AUTH_PASSWORD_REJECTED (400), whose message names both rules."""
    folded, name = password.lower(), username.strip().lower()
    near_name = name and name in folded and len(folded) - len(name) <= AROUND_USERNAME
    if near_name or folded in common_passwords():
        raise ApiError(ApiCode.AUTH_PASSWORD_REJECTED)
