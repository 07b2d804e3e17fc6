"""The web UI's files, served from memory: gzip-compressed for clients that accept it, and
cacheable without ever being stale.

Every reference between the files (``index.html`` → ``app.css``/``*.js``, and each module's
``import … from "./x.js"``) is rewritten at start-up to carry ``?v=<hash of all files>``. A
request with the current hash is cached for a year (``immutable``); anything else
(``index.html`` itself, an unversioned or old URL) is ``no-cache``, revalidated by its ETag
(304). A new release changes the hash, so browsers fetch the new files at once.

The files are answered by one ``GET``/``HEAD`` route, which never redirects, so the ``Host``
header a client sent is never reflected into a ``Location``.
"""

from __future__ import annotations

import gzip
import hashlib
import mimetypes
import re
from dataclasses import dataclass
from pathlib import Path

from fastapi import FastAPI, Request, Response
from starlette.exceptions import HTTPException

STATIC_DIR = Path(__file__).with_name("static")
INDEX = "index.html"
_IMMUTABLE = "public, max-age=31536000, immutable"
_REVALIDATE = "no-cache"
# "./x.js" after `from` or `import` in a module; href="x.css" / src="x.js" in the page.
_MODULE_REFERENCE = re.compile(r'((?:from|import)\s*\(?\s*")(\./[\w-]+\.js)(")')
_PAGE_REFERENCE = re.compile(r'((?:href|src)=")([\w-]+\.(?:js|css))(")')


@dataclass(frozen=True, slots=True)
class Asset:
    media_type: str
    body: bytes
    gzipped: bytes | None  # None when compressing does not make it smaller
    etag: str


@dataclass(frozen=True, slots=True)
class WebUi:
    version: str
    assets: dict[str, Asset]

    @classmethod
    def load(cls, directory: Path = STATIC_DIR) -> WebUi:
        files = {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file()}
        digest = hashlib.sha256()
        for name, content in files.items():
            digest.update(name.encode() + b"\0" + content + b"\0")
        version = digest.hexdigest()[:12]
        assets = {
            name: _asset(name, _versioned(name, content, version))
            for name, content in files.items()
        }
        return cls(version, assets)

    def respond(self, request: Request, path: str) -> Response:
        asset = self.assets.get(path or INDEX)
        if asset is None:
            raise HTTPException(404)
        current = path not in ("", INDEX) and request.query_params.get("v") == self.version
        headers = {
            "Cache-Control": _IMMUTABLE if current else _REVALIDATE,
            "Vary": "Accept-Encoding",
        }
        body, etag = asset.body, asset.etag
        if asset.gzipped is not None and "gzip" in request.headers.get("accept-encoding", ""):
            body, etag = asset.gzipped, asset.etag[:-1] + '-gzip"'
            headers["Content-Encoding"] = "gzip"
        headers["ETag"] = etag
        if etag in request.headers.get("if-none-match", ""):
            return Response(status_code=304, headers=headers)
        if request.method == "HEAD":
            headers["Content-Length"] = str(len(body))
            return Response(status_code=200, headers=headers, media_type=asset.media_type)
        return Response(body, headers=headers, media_type=asset.media_type)


def _versioned(name: str, content: bytes, version: str) -> bytes:
    pattern = _PAGE_REFERENCE if name == INDEX else _MODULE_REFERENCE
    if not name.endswith((".html", ".js")):
        return content
    text = pattern.sub(lambda m: f"{m[1]}{m[2]}?v={version}{m[3]}", content.decode("utf-8"))
    return text.encode("utf-8")


def _asset(name: str, body: bytes) -> Asset:
    media_type = mimetypes.guess_type(name)[0] or "application/octet-stream"
    if media_type.startswith("text/") or media_type.endswith("javascript"):
        media_type += "; charset=utf-8"
    gzipped = gzip.compress(body, compresslevel=9, mtime=0)
    etag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
    return Asset(media_type, body, gzipped if len(gzipped) < len(body) else None, etag)


def serve_web_ui(app: FastAPI, ui: WebUi) -> None:
    """The last route: any ``GET``/``HEAD`` no API route took is a file of the UI, or 404."""

    @app.api_route("/{path:path}", methods=["GET", "HEAD"], include_in_schema=False)
    async def web_file(path: str, request: Request) -> Response:
        return ui.respond(request, path)
