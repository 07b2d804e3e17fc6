"""The workbench: a FastAPI server for many users on top of the kernel.

``create_app(settings)`` builds the ASGI app (the agent and storages open in its lifespan);
``youyou serve`` runs it under uvicorn.

``create_app`` is imported on first use: the ``youyou users``/``groups``/``db`` commands use
the workbench's store and accounts without loading FastAPI and every route.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from youyou.workbench.app import create_app

__all__ = ["create_app"]


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from youyou.workbench.app import create_app

        return create_app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
