"""The in-memory session storage honours the same contract as the SQL one."""

from __future__ import annotations

import pytest

from storage_contract import SessionStorageContract, append_all, profile
from youyou.adapters.storage.memory import InMemorySessionStorage
from youyou.domain.ledger import Metadata


@pytest.fixture
def storage() -> InMemorySessionStorage:
    return InMemorySessionStorage()


class TestInMemorySessionStorage(SessionStorageContract):
    async def test_stored_events_are_isolated_from_the_caller(
        self, storage: InMemorySessionStorage
    ) -> None:
        value: dict[str, list[int]] = {"items": [1]}
        events, _ = await append_all(storage, "s-1", [profile(), Metadata(key="k", value=value)])
        value["items"].append(2)
        loaded = await storage.load_events("s-1", after_seq=1)
        assert isinstance(loaded[0].payload, Metadata)
        assert loaded[0].payload.value == {"items": [1]}
        assert loaded[0] is not events[1]
