"""``python -m youyou``: the same commands as the ``youyou`` console script."""

from youyou.cli.main import app

app(prog_name="youyou")
