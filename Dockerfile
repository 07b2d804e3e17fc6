# YouYou's workbench server in a container: `youyou serve` on port 8000, data in /data.
#
#   docker build -t youyou .
#   docker run -p 8000:8000 -v youyou-data:/data youyou
#
# Build arguments:
#   BASE_IMAGE   the image both stages start from (default python:3.11-slim-bookworm). Any
#                Debian-like image with python3 (3.11 or newer, with its venv module) on PATH
#                works, e.g. one built from Debian's packages where no registry is reachable
#                (tests/container/base-image.sh builds one with debootstrap).
#   PIP_INDEX_URL, PIP_TRUSTED_HOST, PIP_CERT
#                how pip reaches the package index when it is not the default one (PIP_CERT:
#                a CA bundle path inside the image).
# Configuration: mount a youyou.toml and set YOUYOU_CONFIG to its path, and/or set
# YOUYOU_DATABASE_URL; API keys come from the environment variables the file names. See
# docs/deploy.md.

ARG BASE_IMAGE=python:3.11-slim-bookworm

FROM ${BASE_IMAGE} AS builder
ARG PIP_INDEX_URL
ARG PIP_TRUSTED_HOST
ARG PIP_CERT
# The dependencies first, in their own layer: it is reused while pyproject.toml is unchanged.
# Only the required ones: the `local` extra (llama.cpp, built from source) is not in the image.
COPY pyproject.toml /build/
RUN export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PIP_DEFAULT_TIMEOUT=120 \
    && python3 -m venv /opt/youyou \
    && python3 -c 'import tomllib; print("\n".join(tomllib.load(open("/build/pyproject.toml", "rb"))["project"]["dependencies"]))' >/build/requirements.txt \
    && /opt/youyou/bin/pip install --requirement /build/requirements.txt
COPY . /build/
RUN export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 \
    && /opt/youyou/bin/pip wheel --no-deps --wheel-dir /build/wheels /build \
    && /opt/youyou/bin/pip install --no-deps /build/wheels/*.whl \
    && /opt/youyou/bin/pip uninstall --yes pip setuptools \
    && /opt/youyou/bin/youyou --help >/dev/null

FROM ${BASE_IMAGE}
COPY --from=builder /opt/youyou /opt/youyou
RUN groupadd --gid 10001 youyou \
    && useradd --uid 10001 --gid youyou --home-dir /data --no-create-home \
        --shell /usr/sbin/nologin youyou \
    && mkdir -p /data && chown youyou:youyou /data && chmod 0700 /data
ENV PATH=/opt/youyou/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/data \
    XDG_DATA_HOME=/data \
    PYTHONUNBUFFERED=1 \
    YOUYOU_HEALTHCHECK_URL=http://127.0.0.1:8000/healthz
# The default database is /data/youyou/youyou.db (SQLite); set [database] url or
# YOUYOU_DATABASE_URL to a postgresql:// URL to share one database between containers.
VOLUME /data
WORKDIR /data
USER youyou
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python3", "-c", "import os, urllib.request; urllib.request.urlopen(os.environ['YOUYOU_HEALTHCHECK_URL'], timeout=4)"]
# youyou is process 1: SIGTERM (docker stop) ends the server gracefully, exit code 0.
ENTRYPOINT ["youyou"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8000", "--log-format", "json"]
