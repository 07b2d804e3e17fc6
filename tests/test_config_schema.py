"""The whole ``youyou.toml`` (``youyou.config.schema``): the format, the defaults, the checks
across sections and errors that name the key."""

from __future__ import annotations

from pathlib import Path

import platformdirs
import pytest

from youyou.config import (
    MEMORY_MODE_NAMES,
    McpServerSettings,
    McpTransport,
    OpenAIProviderSettings,
    ProviderType,
    load_settings,
    memory_mode_name,
)
from youyou.domain.config import MemoryMode, SummaryFailurePolicy, validate_agent_config
from youyou.domain.errors import AgentError, ErrorCode
from youyou.domain.model import ProviderCapability

SAMPLE = """
[server]
host = "127.0.0.1"          # default
port = 8000                 # default

[database]
url = "sqlite+aiosqlite:///./youyou.db"   # default: a file in the user's data directory

[agent]
default_model = "gpt-4o-mini"

[[providers]]
id = "openai"
type = "openai"             # "openai" (any OpenAI-compatible endpoint) | "anthropic" | "local" | "scripted"
base_url = "http://127.0.0.1:11434/v1"
api_key_env = "OPENAI_API_KEY"

[[providers.models]]
id = "gpt-4o-mini"
display_name = "GPT-4o mini"
context_window = 128000
capabilities = ["tool_use", "vision", "streaming"]
"""  # noqa: E501 (the sample is kept verbatim, long comments included)


def write(tmp_path: Path, text: str, name: str = "youyou.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def config_error(tmp_path: Path, text: str) -> str:
    with pytest.raises(AgentError) as info:
        load_settings(write(tmp_path, text), environ={})
    assert info.value.code is ErrorCode.INVALID_CONFIG
    return info.value.message


def test_no_configuration_gives_the_offline_defaults() -> None:
    settings = load_settings(environ={})

    assert (settings.server.host, settings.server.port) == ("127.0.0.1", 8000)
    assert settings.server.registration_mode == "open" and settings.server.registration_open
    data_dir = Path(platformdirs.user_data_dir("youyou"))
    assert settings.database.url == f"sqlite+aiosqlite:///{data_dir / 'youyou.db'}"
    assert [(p.id, p.type) for p in settings.providers] == [("scripted", ProviderType.SCRIPTED)]
    assert settings.default_model == "youyou-demo"
    assert settings.compaction.mode is MemoryMode.EVERY_N_TURNS
    assert (
        settings.compaction.every_n_turns,
        settings.compaction.context_percent,
        settings.compaction.hard_limit,
    ) == (30, 0.70, 0.95)
    assert settings.mcp_servers == ()


def test_the_documented_sample_parses_exactly(tmp_path: Path) -> None:
    settings = load_settings(write(tmp_path, SAMPLE), environ={})

    assert settings.database.url == "sqlite+aiosqlite:///./youyou.db"
    assert settings.default_model == "gpt-4o-mini"
    (provider,) = settings.providers
    assert isinstance(provider, OpenAIProviderSettings)
    assert (provider.id, provider.type, provider.base_url, provider.api_key_env) == (
        "openai",
        ProviderType.OPENAI,
        "http://127.0.0.1:11434/v1",
        "OPENAI_API_KEY",
    )
    (model,) = provider.model_infos()
    assert (model.model_id, model.display_name, model.context_window) == (
        "gpt-4o-mini",
        "GPT-4o mini",
        128000,
    )
    assert model.capabilities == {
        ProviderCapability.TOOL_USE,
        ProviderCapability.VISION,
        ProviderCapability.STREAMING,
    }


FULL = """
[server]
host = "0.0.0.0"
registration = false

[agent]
default_model = "claude-sonnet"
system_instructions = ["Always cite runbooks."]
memory_namespace = "sre"
tool_timeout_ms = 30000
compact_threshold = 0.75
compact_model = "gpt-4o-mini"
max_tool_calls_per_turn = 12
memory_checkpoint_interval = 5
memory_max_items = 8

[memory]
enabled = false

[compaction]
mode = "context_70_percent"
context_percent = 0.6
hard_limit = 0.9

[[providers]]
id = "openai"
type = "openai"
[[providers.models]]
id = "gpt-4o-mini"
context_window = 128000

[[providers]]
id = "claude"
type = "anthropic"
api_key_env = "ANTHROPIC_API_KEY"
max_tokens = 8192
headers = { "anthropic-beta" = "x" }
[[providers.models]]
id = "claude-sonnet"
api_name = "claude-sonnet-4-5"
context_window = 200000

[[mcp_servers]]
name = "prometheus"
command = "prom-mcp"
args = ["--read-only"]

[[mcp_servers]]
name = "grafana"
url = "http://127.0.0.1:9000/mcp"
"""


def test_optional_sections(tmp_path: Path) -> None:
    text = FULL
    settings = load_settings(write(tmp_path, text), environ={})

    assert settings.server.host == "0.0.0.0" and settings.server.registration == "closed"
    assert settings.memory.enabled is False
    assert settings.compaction.mode is MemoryMode.CONTEXT_PERCENT
    assert settings.mcp_servers == (
        McpServerSettings(
            name="prometheus",
            transport=McpTransport.STDIO,
            command="prom-mcp",
            args=("--read-only",),
        ),
        McpServerSettings(
            name="grafana", transport=McpTransport.HTTP, url="http://127.0.0.1:9000/mcp"
        ),
    )
    assert settings.providers[1].models[0].api_name == "claude-sonnet-4-5"
    config = settings.agent_config()
    assert config.default_model == "claude-sonnet"
    assert config.system_instructions == ("Always cite runbooks.",)
    assert (
        config.tool_timeout_ms,
        config.compact_threshold,
        config.max_tool_calls_per_turn,
        config.memory_checkpoint_interval,
        config.memory_max_items,
    ) == (30000, 0.75, 12, 5, 8)
    assert config.compaction.hard_limit == 0.9
    assert config.compaction.on_summary_failure is SummaryFailurePolicy.FAIL
    validate_agent_config(config, lambda model: model in settings.model_ids())


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('[server]\nport = "eighty"\n', "server.port: Input should be a valid integer"),
        ('[server]\nhots = "x"\n', "server.hots: Extra inputs are not permitted"),
        ("[agent]\ntool_timeout_ms = 0\n", "agent.tool_timeout_ms: Input should be greater than 0"),
        ("[agent]\ncompact_threshold = 1.5\n", "agent.compact_threshold"),
        ('[agent]\nmemory_namespace = "  "\n', "agent.memory_namespace: must not be blank"),
        (
            '[agent]\ndefault_model = "nope"\n',
            "agent.default_model: 'nope' is not a model of any [[providers]] entry",
        ),
        ('[compaction]\nmode = "sometimes"\n', "compaction.mode"),
        ("[compaction]\ncontext_percent = 0.96\n", "context_percent must be below"),
        ('[[mcp_servers]]\nname = "x"\n', "mcp_servers[0]: exactly one of command"),
        (
            '[[providers]]\nid = "a"\ntype = "openai"\n',
            "providers[0].models: at least one [[providers.models]] entry is required",
        ),
        (
            '[[providers]]\nid = "a"\ntype = "gemini"\n',
            "providers[0].type: must be one of 'openai', 'anthropic', 'local', 'scripted'",
        ),
        (
            '[[providers]]\nid = "a"\n',
            "providers[0].type: must be one of 'openai', 'anthropic', 'local', 'scripted'",
        ),
        (
            '[[providers]]\nid = "a"\ntype = "openai"\napi_key = "sk-1"\n'
            '[[providers.models]]\nid = "m"\ncontext_window = 10\n',
            "api_key: keys are read from the environment only",
        ),
        (
            '[[providers]]\nid = "a"\ntype = "openai"\nscript_path = "s.json"\n'
            '[[providers.models]]\nid = "m"\ncontext_window = 10\n',
            "providers[0].script_path: applies only to type = 'scripted'",
        ),
        (
            '[[providers]]\nid = "a"\ntype = "anthropic"\nstream_usage = false\n'
            '[[providers.models]]\nid = "m"\ncontext_window = 10\n',
            "providers[0].stream_usage: applies only to type = 'openai'",
        ),
        (
            '[[providers]]\nid = "a"\ntype = "local"\ntimeout_s = 5\n'
            '[[providers.models]]\nid = "m"\ncontext_window = 10\n',
            "providers[0].timeout_s: applies only to type = 'openai' or 'anthropic'",
        ),
        (
            '[[providers]]\nid = "a"\ntype = "scripted"\nstream = true\n',
            "providers[0].stream: Extra inputs are not permitted",
        ),
        (
            '[[providers]]\nid = "a"\ntype = "openai"\n'
            '[[providers.models]]\nid = "m"\ncontext_window = 0\n',
            "providers[0].models[0].context_window: Input should be greater than 0",
        ),
        (
            '[[providers]]\nid = "a"\ntype = "scripted"\n'
            '[[providers]]\nid = "a"\ntype = "scripted"\n',
            "providers[].id: 'a' appears more than once",
        ),
        ("providers = 3\n", "providers: Input should be a valid"),
        ("[telemetry]\nsample_ratio = 1.5\n", "telemetry.sample_ratio: Input should be less"),
        ('[telemetry]\notlp_endpoint = "collector:4318"\n', "telemetry.otlp_endpoint: must be"),
        ("[telemetry]\nrecord_prompts = true\n", "telemetry.record_prompts: Extra inputs"),
        (
            '[[providers]]\nid = "a"\ntype = "openai"\n'
            '[[providers.models]]\nid = "m"\ncontext_window = 10\ninput_price_per_mtok = -1\n',
            "providers[0].models[0].input_price_per_mtok: Input should be greater than or equal",
        ),
    ],
)
def test_bad_input_names_the_key(tmp_path: Path, text: str, expected: str) -> None:
    assert expected in config_error(tmp_path, text)


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ("context_window = 0", "providers[0].models[0].context_window: Input should be greater"),
        ("", "providers[0].models[0].context_window: Field required"),
        ("context_window = 10\nbogus = 1", "providers[0].models[0].bogus: Extra inputs"),
    ],
)
def test_one_bad_model_field_is_the_only_problem_reported(
    tmp_path: Path, entry: str, expected: str
) -> None:
    text = f'[[providers]]\nid = "a"\ntype = "openai"\n[[providers.models]]\nid = "m"\n{entry}\n'
    message = config_error(tmp_path, text)
    assert expected in message
    assert "at least one" not in message and message.count(": ") == 2  # INVALID_CONFIG + one


def test_skills_dir_key(tmp_path: Path) -> None:
    config = tmp_path / "youyou.toml"
    config.write_text('[skills]\ndir = "/srv/runbooks"\n')
    assert load_settings(config, environ={}).skills.dir == Path("/srv/runbooks")
    assert load_settings(None, environ={}).skills.dir is None


def test_memory_mode_names_round_trip() -> None:
    for name, mode in MEMORY_MODE_NAMES.items():
        assert memory_mode_name(mode) == name
    assert set(MEMORY_MODE_NAMES.values()) == set(MemoryMode)


def test_access_lists_gather_users_and_groups_by_entry(tmp_path: Path) -> None:
    text = (
        '[[knowledge]]\nid = "ops"\npath = "runbooks"\nusers = ["Carol"]\n\n'
        '[[knowledge]]\nid = "open"\npath = "wiki"\n\n'
        '[[mcp_servers]]\nid = "grafana"\nurl = "http://127.0.0.1:1/mcp"\ngroups = ["sre"]\n'
    )
    settings = load_settings(write(tmp_path, text), environ={})
    assert settings.access_lists() == {
        "mcp_servers.grafana": (None, ("sre",)),
        "knowledge.ops": (("Carol",), None),
    }


def test_prices_and_telemetry(tmp_path: Path) -> None:
    text = (
        '[telemetry]\nenabled = true\notlp_endpoint = "http://127.0.0.1:4318/v1/traces"\n'
        "sample_ratio = 0.25\n\n"
        '[[providers]]\nid = "a"\ntype = "openai"\n'
        '[[providers.models]]\nid = "priced"\ncontext_window = 10\noutput_price_per_mtok = 8\n'
        '[[providers.models]]\nid = "free"\ncontext_window = 10\n'
    )
    settings = load_settings(write(tmp_path, text), environ={})
    assert settings.telemetry.enabled and settings.telemetry.sample_ratio == 0.25
    assert settings.telemetry.record_content is False
    prices = settings.model_prices()
    assert list(prices) == ["priced"]  # a model without prices has no cost
    assert prices["priced"].cost(1_000_000, 500_000) == 4.0  # no input price: input is free
