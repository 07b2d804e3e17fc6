"""The workbench: a FastAPI server for many users on top of the kernel.

``create_app(settings)`` builds the ASGI app (the agent and storages open in its lifespan);
``youyou serve`` runs it under uvicorn.
"""

from youyou.workbench.app import create_app

__all__ = ["create_app"]
