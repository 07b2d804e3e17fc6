from sqlalchemy.ext.asyncio import create_async_engine


async def test_pg_url_is_a_fresh_database(pg_url: str) -> None:
    engine = create_async_engine(pg_url)
    async with engine.connect() as conn:
        result = await conn.exec_driver_sql(
            "select count(*) from information_schema.tables where table_schema='public'"
        )
        assert result.scalar_one() == 0
    await engine.dispose()
