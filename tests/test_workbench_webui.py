"""What every response of the server carries, and how the web UI's files are sent
(``workbench/webui.py``), through real HTTP: security headers everywhere, no server banner,
gzip and versioned caching for the UI, no interactive docs by default, and never a redirect
built from the client's ``Host`` header."""

from __future__ import annotations

import re
from collections.abc import Callable

import httpx
import pytest

from server_kit import Workbench

StartWorkbench = Callable[..., Workbench]
SECURITY_HEADERS = {
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
}


@pytest.fixture
def workbench_db(migrated_sqlite_url: str) -> str:
    """Headers and files do not depend on the database: SQLite only."""
    return migrated_sqlite_url


def assert_guarded(response: httpx.Response) -> None:
    for name, value in SECURITY_HEADERS.items():
        assert response.headers.get(name) == value, (response.url, name)
    policy = response.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in policy and "script-src 'self'" in policy
    assert "server" not in response.headers, response.headers["server"]


def test_every_kind_of_response_carries_the_security_headers(
    start_workbench: StartWorkbench,
) -> None:
    wb = start_workbench()
    api = wb.user("ada")
    session = api.new_session()
    http = httpx.Client(base_url=wb.url)
    page = http.get("/")
    assert 'http-equiv="Content-Security-Policy"' not in page.text  # the header carries it
    responses = [
        page,
        http.get("/app.css"),
        http.get("/healthz"),
        http.get("/openapi.json"),
        http.get("/no-such-file.js"),
        http.get("/auth/me"),
        http.post("/auth/login", content=b"x" * 40_000),
        api.http.get("/chat/sessions"),
    ]
    assert [r.status_code for r in responses] == [200, 200, 200, 200, 404, 401, 413, 200]
    with api.http.stream(
        "POST", f"/chat/sessions/{session['id']}/messages", json={"content": "hi"}
    ) as stream:
        stream.read()
        responses.append(stream)
    for response in responses:
        assert_guarded(response)
    http.close()


def test_the_web_ui_is_gzipped_and_cached_by_version(start_workbench: StartWorkbench) -> None:
    wb = start_workbench()
    http = httpx.Client(base_url=wb.url, headers={"Accept-Encoding": "gzip"})
    page = http.get("/")
    assert page.headers["content-encoding"] == "gzip"
    assert page.headers["cache-control"] == "no-cache"
    etag = page.headers["etag"]
    again = http.get("/", headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.content == b""
    # every file the page loads, and every module a module imports, carries the same version
    referenced = re.findall(r'(?:href|src)="([\w-]+\.(?:js|css))\?v=(\w+)"', page.text)
    assert {name for name, _ in referenced} >= {"app.css", "app.js", "chat.js", "sse.js"}
    [version] = {v for _, v in referenced}
    gzipped_js = 0
    for name, _ in referenced:
        asset = http.get(f"/{name}", params={"v": version})
        assert asset.status_code == 200
        assert asset.headers["cache-control"] == "public, max-age=31536000, immutable"
        assert asset.headers["content-encoding"] == "gzip"
        assert "accept-encoding" in asset.headers["vary"].lower()
        if name.endswith(".js"):
            gzipped_js += int(asset.headers["content-length"])
            imports = re.findall(r'from\s*"(\./[^"]+)"', asset.text)
            assert all(i.endswith(f".js?v={version}") for i in imports), (name, imports)
    assert gzipped_js < 60_000  # what docs/web.md states (measured: see there)
    stale = http.get("/app.js", params={"v": "old"})
    assert stale.headers["cache-control"] == "no-cache"
    plain = httpx.get(f"{wb.url}/app.js", headers={"Accept-Encoding": "identity"})
    assert "content-encoding" not in plain.headers
    zipped = http.get("/app.js")  # httpx decompresses it
    assert zipped.headers["content-encoding"] == "gzip" and zipped.content == plain.content
    assert int(zipped.headers["content-length"]) < len(plain.content) / 2
    head = http.head("/app.js")
    assert head.status_code == 200 and head.content == b""
    http.close()


def test_answer_streams_are_never_compressed(start_workbench: StartWorkbench) -> None:
    wb = start_workbench()
    api = wb.user("bo")
    session = api.new_session()
    with api.http.stream(
        "POST",
        f"/chat/sessions/{session['id']}/messages",
        json={"content": "hi"},
        headers={"Accept-Encoding": "gzip"},
    ) as stream:
        assert stream.headers["content-type"].startswith("text/event-stream")
        assert "content-encoding" not in stream.headers
        assert b"event: turn_complete" in stream.read()


def test_interactive_docs_are_off_unless_configured(start_workbench: StartWorkbench) -> None:
    default = start_workbench()
    assert httpx.get(f"{default.url}/openapi.json").status_code == 200
    assert httpx.get(f"{default.url}/docs").status_code == 404
    assert httpx.get(f"{default.url}/redoc").status_code == 404
    enabled = start_workbench(extra="[server]\napi_docs = true")
    docs = httpx.get(f"{enabled.url}/docs")
    assert docs.status_code == 200 and "/openapi.json" in docs.text


def test_the_host_header_never_becomes_a_redirect(start_workbench: StartWorkbench) -> None:
    wb = start_workbench()
    api = wb.user("cy")
    hostile = {"Host": "evil.example"}
    for method, path in (
        ("GET", "/%2e"),  # the current directory, which a static-files app redirects to "/./"
        ("GET", "/%2e%2e"),
        ("GET", "/chat/sessions/"),
        ("POST", "/chat/sessions/"),
        ("GET", "/auth/me/"),
        ("GET", "/index.html/"),
    ):
        response = api.http.request(method, path, headers=hostile, follow_redirects=False)
        assert not response.is_redirect, (path, response.headers.get("location"))
        assert response.status_code == 404, path
