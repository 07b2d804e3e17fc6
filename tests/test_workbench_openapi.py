"""Schemathesis against the real server's ``/openapi.json``: generated requests from every
documented operation, sent by a registered user, must never get a 5xx, and every response
must match the documented status codes, content types and schemas (the SSE route included).

The run is bounded (few examples per operation, no shrinking) so the file stays under a
minute; the server runs on SQLite with the fake OpenAI model answering ``ok``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import jsonschema_rs
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis import Case, GenerationMode, HookContext
from schemathesis.core.result import Ok
from schemathesis.schemas import APIOperation
from schemathesis.specs.openapi.checks import positive_data_acceptance
from schemathesis.specs.openapi.schemas import OpenApiSchema

from fakes.openai_server import FakeOpenAIServer, OpenAIStream, text_reply
from port_kit import free_port
from server_kit import Api, Frame, Server, answer_ok, parse_sse, write_config

EXAMPLES = 4
_REVOKING = ("/auth/logout", "/auth/logout-all", "/auth/password")
SKILL_MD = b"---\nname: disk-triage\ndescription: Triage a full disk.\n---\n# Steps\n1. df -h\n"


@dataclass(frozen=True)
class Target:
    server: Server
    model: FakeOpenAIServer
    token: str
    # Real ids of the user's things, so generated requests reach beyond 404 too.
    ids: dict[str, str]


def fresh_token(url: str) -> str:
    api = Api.signed_up(url, f"user-{uuid.uuid4().hex[:8]}")
    api.close()
    assert api.token is not None
    return api.token


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    root = tmp_path_factory.mktemp("openapi")
    with FakeOpenAIServer() as model:
        model.default = answer_ok
        # Every generated request comes from this one address: the per-address limits are
        # raised so that generated sign-ups and wrong passwords do not lock the test out.
        limits = "[server]\nregistration_attempts = 100000\naddress_login_attempts = 100000"
        config = write_config(
            root, f"sqlite+aiosqlite:///{root / 'youyou.db'}", model.base_url, extra=limits
        )
        server = Server(root, config, free_port()).start()
        try:
            api = Api.signed_up(server.url, "schemathesis")
            assert api.token is not None
            session = api.new_session(title="probe")
            api.send(session["id"], "hello")
            prompt = api.data("POST", "/chat/prompts", 201, json={"label": "p", "content": "c"})
            skill = api.data(
                "POST", "/chat/skills", 201, files={"file": ("SKILL.md", SKILL_MD, "text/markdown")}
            )
            ids = {"session_id": session["id"], "prompt_id": prompt["id"], "skill_id": skill["id"]}
            api.close()
            yield Target(server, model, api.token, ids)
        finally:
            server.kill()


@pytest.fixture(scope="module")
def api_schema(target: Target) -> OpenApiSchema:
    schema = schemathesis.openapi.from_url(f"{target.server.url}/openapi.json")

    @schema.hook
    def flatmap_path_parameters(
        context: HookContext, path_parameters: dict[str, object] | None
    ) -> st.SearchStrategy[dict[str, object] | None]:
        if not path_parameters:
            return st.just(path_parameters)
        real = {k: target.ids[k] for k in path_parameters if k in target.ids}
        return st.sampled_from([path_parameters, {**path_parameters, **real}])

    return schema


def _operations(schema: OpenApiSchema) -> list[APIOperation[Any, Any, Any, Any]]:
    return [result.ok() for result in schema.get_all_operations() if isinstance(result, Ok)]


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_every_documented_operation_conforms(
    api_schema: OpenApiSchema, target: Target, mode: GenerationMode
) -> None:
    """One Hypothesis run per operation; every failure is collected and reported at once.

    Not checked: that every schema-valid request is accepted. Some rules are the server's, not
    JSON Schema's (an id must name one of the user's prompts, SKILL.md's own rules, a cursor
    must be one the server issued); they are refused with the documented 400."""
    failures: list[str] = []
    for operation in _operations(api_schema):

        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            derandomize=True,
            database=None,
            phases=[Phase.explicit, Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        def run(case: Case[Any]) -> None:
            token = target.token
            if case.path in _REVOKING:  # these revoke the token: use another
                token = fresh_token(target.server.url)
            case.call_and_validate(
                headers={"Authorization": f"Bearer {token}"},
                excluded_checks=[positive_data_acceptance],
                timeout=30,
            )

        try:
            run()
        except Unsatisfiable:  # nothing to negate: an operation without parameters or body
            assert mode is GenerationMode.NEGATIVE, operation.label
        except (Exception, BaseExceptionGroup) as exc:  # collected, reported below
            failures.append(f"{operation.label}: {exc}")
    assert not failures, "\n\n".join(failures)


def test_a_real_turn_conforms_to_the_document(api_schema: OpenApiSchema, target: Target) -> None:
    """The streaming routes on their success paths: an SSE answer with a tool call (each
    event checked against the documented ``itemSchema``, each ``data`` against its documented
    ``contentSchema``), then nothing to re-attach."""
    auth = {"Authorization": f"Bearer {target.token}"}
    sid = {"session_id": fresh_session(target)}
    target.model.enqueue(
        OpenAIStream()
        .tool_calls(("call_1", "get_current_time", "{}"))
        .finish("tool_calls")
        .usage(20, 5)
        .reply(),
        text_reply("It is late."),
    )
    send = api_schema["/chat/sessions/{session_id}/messages"]["POST"].Case(
        path_parameters=sid, body={"content": "what time is it?"}, media_type="application/json"
    )
    answer = send.call_and_validate(headers=auth, timeout=30)
    assert answer.status_code == 200
    assert answer.headers["content-type"][0].startswith("text/event-stream")

    document = httpx.get(f"{target.server.url}/openapi.json").json()
    sse = document["paths"]["/chat/sessions/{session_id}/messages"]["post"]["responses"]["200"]
    documented = {
        branch["properties"]["event"]["const"]: branch["properties"]["data"]["contentSchema"]
        for branch in sse["content"]["text/event-stream"]["itemSchema"]["oneOf"]
    }
    frames = [f for f in parse_sse(iter(answer.text.splitlines())) if isinstance(f, Frame)]
    events = [f.event for f in frames]
    assert {"turn_started", "tool_call_start", "tool_call_end", "text_delta"} <= set(events)
    assert events[-1] == "turn_complete"
    for frame in frames:
        schema = {**documented[frame.event], "components": document["components"]}
        jsonschema_rs.validate(schema, frame.data)

    reattach = api_schema["/chat/sessions/{session_id}/stream"]["GET"].Case(path_parameters=sid)
    assert reattach.call_and_validate(headers=auth, timeout=30).status_code == 204
    messages = api_schema["/chat/sessions/{session_id}/messages"]["GET"].Case(path_parameters=sid)
    assert messages.call_and_validate(headers=auth, timeout=30).status_code == 200


def fresh_session(target: Target) -> str:
    api = Api(target.server.url, target.token)
    session_id: str = api.new_session()["id"]
    api.close()
    return session_id


def test_the_document_names_the_real_media_types_and_statuses(target: Target) -> None:
    document = httpx.get(f"{target.server.url}/openapi.json").json()
    send = document["paths"]["/chat/sessions/{session_id}/messages"]["post"]["responses"]
    assert list(send["200"]["content"]) == ["text/event-stream"]
    reattach = document["paths"]["/chat/sessions/{session_id}/stream"]["get"]["responses"]
    assert list(reattach["200"]["content"]) == ["text/event-stream"]
    skill = document["paths"]["/chat/skills/{skill_id}/content"]["get"]["responses"]
    assert list(skill["200"]["content"]) == ["text/markdown"]
    for path, item in document["paths"].items():
        for method, operation in item.items():
            # invalid input is 400 VALIDATION_INVALID_ARGUMENT, never FastAPI's 422
            assert "422" not in operation["responses"], (method, path)
            for status, response in operation["responses"].items():
                if status >= "400":  # errors are the JSON envelope, whatever the route streams
                    assert list(response["content"]) == ["application/json"], (method, path)
