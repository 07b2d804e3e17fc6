"""Without OpenTelemetry installed the kernel, the CLI's bootstrap and the workbench still
import and run; only ``[telemetry] enabled = true`` needs the ``otel`` extra, and says so."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"

# ``sys.modules[name] = None`` makes every import of ``name`` (and of its submodules) fail
# with ImportError, as if the package were not installed.
BLOCKED = textwrap.dedent(
    """
    import sys
    for name in ("opentelemetry", "opentelemetry.trace", "opentelemetry.sdk"):
        sys.modules[name] = None
    """
)


def run(code: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", BLOCKED + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin", "HOME": "/tmp"},
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_the_kernel_runs_a_turn_without_opentelemetry() -> None:
    out = run(
        """
        import asyncio
        from youyou import AgentBuilder, AgentConfig, ScriptedProvider

        async def main():
            agent = await (
                AgentBuilder(AgentConfig(default_model="youyou-demo"))
                .register_model_provider(ScriptedProvider.demo())
                .build()
            )
            session = await agent.new_session()
            turn = await session.send_message("disk full on db-1")
            print((await turn.join()).status.value)
            await agent.shutdown()

        asyncio.run(main())
        import youyou.bootstrap, youyou.cli.main  # the CLI too (the server needs FastAPI,
        # which itself depends on the OpenTelemetry API)
        import youyou.adapters.telemetry
        print(sorted(n for n, m in sys.modules.items() if n.startswith("opentelemetry") and m))
        """
    )
    assert out.split() == ["completed", "[]"]


def test_enabling_telemetry_without_the_extra_names_the_extra() -> None:
    out = run(
        """
        from youyou.config import TelemetrySettings
        from youyou.adapters.telemetry import open_telemetry
        from youyou.domain.errors import AgentError

        try:
            open_telemetry(TelemetrySettings(enabled=True))
        except AgentError as err:
            print(err.code.value, "|", err.message)
        """
    )
    code, message = out.strip().split(" | ")
    assert code == "INVALID_CONFIG"
    assert "youyou-agent[otel]" in message
