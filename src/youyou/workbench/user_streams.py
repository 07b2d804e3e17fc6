"""The SSE responses each user has open in this process, at most ``user_streams`` at once:
one user's followers cannot take the connections and memory the others need."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator

from youyou.workbench.errors import Localized, check_user_limit


class UserStreams:
    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._open: Counter[str] = Counter()

    def check(self, owner_id: str) -> None:
        """``USER_LIMIT_REACHED`` when the user has ``user_streams`` SSE responses open."""
        what = Localized("streams open", "打开的回答流")
        check_user_limit(self._open[owner_id], self._limit, what, "user_streams")

    def followed(self, owner_id: str, frames: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        """An SSE body counted among the user's open streams while it is read."""
        self.check(owner_id)
        return self._counted(owner_id, frames)

    async def _counted(self, owner_id: str, frames: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        self._open[owner_id] += 1
        try:
            async for chunk in frames:
                yield chunk
        finally:
            self._open[owner_id] -= 1
            if not self._open[owner_id]:
                del self._open[owner_id]
