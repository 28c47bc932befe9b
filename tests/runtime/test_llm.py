"""LLMClient against a real HTTP fake of an OpenAI-compatible server, through the real openai client."""

from __future__ import annotations

import asyncio
import logging
import re
import socket
import time
from collections.abc import AsyncIterator, Callable

import aiohttp
import pytest
import pytest_asyncio

from app.config.settings import BackgroundLLMSection, LLMSection, Secrets
from app.runtime import llm as runtime_llm
from app.runtime.errors import FamiliarError
from app.runtime.llm import ChatMessage, LLMClient, LLMEndpoint, LLMError
from tests.fakes.llm_server import FakeLLM, ScriptedReply

pytestmark = pytest.mark.timeout(10)

FAST = 0.01  # retry_base_delay for tests

HELLO: list[ChatMessage] = [
    ChatMessage(role="system", content="You are a familiar."),
    ChatMessage(role="user", content="hi"),
]

MakeClient = Callable[..., LLMClient]


def endpoint_for(base_url: str, **overrides: object) -> LLMEndpoint:
    values: dict[str, object] = {
        "base_url": base_url,
        "api_key": "sk-test",
        "model": "tiny",
        "timeout": 2.0,
        "max_retries": 2,
        "max_concurrency": 2,
        "temperature": 0.3,
        "max_tokens": 50,
    }
    values.update(overrides)
    return LLMEndpoint(**values)  # type: ignore[arg-type]


def closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def assert_one_line(error: BaseException) -> str:
    text = str(error)
    assert text
    assert "\n" not in text
    assert isinstance(error, FamiliarError)
    return text


@pytest_asyncio.fixture
async def fake() -> AsyncIterator[FakeLLM]:
    server = FakeLLM(api_key="sk-test", models=("tiny", "other"))
    await server.start()
    try:
        yield server
    finally:
        async with asyncio.timeout(5):
            await server.close()


@pytest_asyncio.fixture
async def make_client(fake: FakeLLM) -> AsyncIterator[MakeClient]:
    clients: list[LLMClient] = []

    def make(base_url: str | None = None, **overrides: object) -> LLMClient:
        client = LLMClient(endpoint_for(base_url or fake.base_url, **overrides), retry_base_delay=FAST)
        clients.append(client)
        return client

    yield make
    async with asyncio.timeout(5):
        for client in clients:
            await client.aclose()


# -- normal completions ---------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_complete_returns_the_answer_and_sends_model_messages_limits_and_key(
    fake: FakeLLM, make_client: MakeClient
) -> None:
    fake.script("  Hello, traveller!  \n")
    client = make_client()

    answer = await client.complete(HELLO)

    assert answer == "Hello, traveller!"
    (request,) = await fake.wait_for_requests(1)
    assert request.model == "tiny"
    assert request.messages == [
        {"role": "system", "content": "You are a familiar."},
        {"role": "user", "content": "hi"},
    ]
    assert request.max_tokens == 50
    assert request.temperature == pytest.approx(0.3)
    assert request.headers["Authorization"] == "Bearer sk-test"
    assert fake.unhandled == []


@pytest.mark.asyncio
async def test_complete_per_call_overrides_max_tokens_and_temperature(fake: FakeLLM, make_client: MakeClient) -> None:
    client = make_client()

    answer = await client.complete([ChatMessage(role="user", content="what now?")], max_tokens=7, temperature=0.0)

    assert answer == "echo: what now?"  # the fake's default reply
    (request,) = await fake.wait_for_requests(1)
    assert request.max_tokens == 7
    assert request.temperature == 0.0


@pytest.mark.asyncio
async def test_blank_api_key_sends_a_placeholder_for_keyless_local_servers(make_client: MakeClient) -> None:
    keyless = FakeLLM()
    await keyless.start()
    try:
        client = make_client(keyless.base_url, api_key="")
        assert await client.complete(HELLO) == "echo: hi"
        (request,) = await keyless.wait_for_requests(1)
        assert request.headers["Authorization"] == "Bearer not-needed"
    finally:
        await keyless.close()


@pytest.mark.asyncio
async def test_check_reports_model_url_and_latency(fake: FakeLLM, make_client: MakeClient) -> None:
    fake.script("pong")
    client = make_client()

    message = await client.check()

    assert re.fullmatch(rf"OK: model 'tiny' at {re.escape(fake.base_url)} answered in \d+ ms", message)
    (request,) = await fake.wait_for_requests(1)
    assert request.messages == [{"role": "user", "content": "ping"}]
    assert request.max_tokens is not None
    assert 1 <= request.max_tokens <= 5


@pytest.mark.asyncio
async def test_check_succeeds_when_a_reasoning_model_only_starts_thinking(
    fake: FakeLLM, make_client: MakeClient
) -> None:
    fake.script(ScriptedReply(content="<think>The user says ping", finish_reason="length"))

    assert (await make_client().check()).startswith("OK: model 'tiny'")


@pytest.mark.asyncio
async def test_check_raises_the_same_errors_as_complete(make_client: MakeClient) -> None:
    with pytest.raises(LLMError, match=r"has no model 'missing' \(404\)"):
        await make_client(model="missing").check()


# -- retries --------------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_server_errors_are_retried_then_succeed(fake: FakeLLM, make_client: MakeClient) -> None:
    fake.script(ScriptedReply(status=500), ScriptedReply(status=503), "third time lucky")
    client = make_client(max_retries=2)

    assert await client.complete(HELLO) == "third time lucky"
    assert len(fake.requests) == 3


@pytest.mark.asyncio
async def test_rate_limit_is_retried(fake: FakeLLM, make_client: MakeClient) -> None:
    fake.script(ScriptedReply(status=429), "after the wait")

    assert await make_client(max_retries=1).complete(HELLO) == "after the wait"
    assert len(fake.requests) == 2


@pytest.mark.asyncio
async def test_retries_back_off(fake: FakeLLM) -> None:
    fake.script(*[ScriptedReply(status=500)] * 3)
    client = LLMClient(endpoint_for(fake.base_url, max_retries=2), retry_base_delay=0.05)
    try:
        with pytest.raises(LLMError):
            await client.complete(HELLO)
    finally:
        await client.aclose()

    first, second, third = (r.received_at for r in fake.requests)
    # Nominal delays 0.05 s then 0.1 s, jittered to 50%..150%.
    assert second - first >= 0.025
    assert third - second >= 0.05


@pytest.mark.asyncio
async def test_server_error_every_time_gives_up_after_max_retries_plus_one(
    fake: FakeLLM, make_client: MakeClient
) -> None:
    fake.script(*[ScriptedReply(status=500, error_message="CUDA out of memory")] * 10)
    client = make_client(max_retries=2)

    with pytest.raises(LLMError) as caught:
        await client.complete(HELLO)

    text = assert_one_line(caught.value)
    assert text.startswith(f"The LLM endpoint {fake.base_url} answered with an error 500 after 3 attempts.")
    assert "CUDA out of memory" in text
    assert len(fake.requests) == 3


@pytest.mark.asyncio
async def test_no_retries_means_one_attempt(fake: FakeLLM, make_client: MakeClient) -> None:
    fake.script(ScriptedReply(status=502), "never reached")

    with pytest.raises(LLMError, match=r"error 502 after 1 attempt\."):
        await make_client(max_retries=0).complete(HELLO)
    assert len(fake.requests) == 1


# -- failures -------------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_slow_answer_times_out(fake: FakeLLM, make_client: MakeClient) -> None:
    fake.script(ScriptedReply(content="too late", delay=3.0))
    client = make_client(timeout=0.2, max_retries=0)

    started = time.perf_counter()
    with pytest.raises(LLMError) as caught:
        await client.complete(HELLO)

    assert time.perf_counter() - started < 1.5
    text = assert_one_line(caught.value)
    assert text.startswith(f"The LLM endpoint {fake.base_url} did not answer within 0.2 s")
    assert len(fake.requests) == 1


@pytest.mark.asyncio
async def test_hanging_server_times_out_on_every_attempt(fake: FakeLLM, make_client: MakeClient) -> None:
    fake.hang_next()
    fake.hang_next()
    client = make_client(timeout=0.15, max_retries=1)

    with pytest.raises(LLMError, match=r"did not answer within 0\.15 s \(2 attempts\)"):
        await client.complete(HELLO)
    assert len(fake.requests) == 2


@pytest.mark.asyncio
async def test_timeout_then_success(fake: FakeLLM, make_client: MakeClient) -> None:
    fake.hang_next()
    fake.script("recovered")

    assert await make_client(timeout=0.15, max_retries=1).complete(HELLO) == "recovered"


@pytest.mark.asyncio
async def test_connection_refused(make_client: MakeClient) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    client = make_client(url, max_retries=1)

    with pytest.raises(LLMError) as caught:
        await client.complete(HELLO)

    assert assert_one_line(caught.value) == (
        f"Cannot reach the LLM endpoint {url} (connection refused). Is the server running?"
    )


@pytest.mark.asyncio
async def test_wrong_api_key_is_not_retried(fake: FakeLLM, make_client: MakeClient) -> None:
    client = make_client(api_key="sk-wrong")

    with pytest.raises(LLMError) as caught:
        await client.complete(HELLO)

    assert assert_one_line(caught.value) == (
        f"The LLM endpoint {fake.base_url} rejected the API key (401). Check the key in Settings."
    )
    assert len(fake.requests) == 1
    assert fake.requests[0].headers["Authorization"] == "Bearer sk-wrong"


@pytest.mark.asyncio
async def test_unknown_model(fake: FakeLLM, make_client: MakeClient) -> None:
    client = make_client(model="huge-70b")

    with pytest.raises(LLMError) as caught:
        await client.complete(HELLO)

    text = assert_one_line(caught.value)
    assert text.startswith(f"The LLM endpoint {fake.base_url} has no model 'huge-70b' (404).")
    assert len(fake.requests) == 1


@pytest.mark.asyncio
async def test_url_without_v1_points_at_the_url(fake: FakeLLM, make_client: MakeClient) -> None:
    root = fake.base_url.removesuffix("/v1")
    client = make_client(root)

    with pytest.raises(LLMError) as caught:
        await client.complete(HELLO)

    text = assert_one_line(caught.value)
    assert f"The LLM endpoint {root} has no chat completions API (404)" in text
    assert "/v1" in text
    assert fake.unhandled == ["POST /chat/completions"]


@pytest.mark.asyncio
async def test_bad_request_shows_the_server_message(fake: FakeLLM, make_client: MakeClient) -> None:
    fake.script(ScriptedReply(status=400, error_message="context length exceeded:\n 9000 > 8192"))

    with pytest.raises(LLMError) as caught:
        await make_client().complete(HELLO)

    text = assert_one_line(caught.value)
    assert "refused the request (400)" in text
    assert "context length exceeded: 9000 > 8192" in text
    assert len(fake.requests) == 1


@pytest.mark.parametrize(
    "reply",
    [
        ScriptedReply(content=""),
        ScriptedReply(content="  \n\t "),
        ScriptedReply(content=None),
        ScriptedReply(content="<think>only reasoning, no answer</think>\n"),
    ],
    ids=["empty", "whitespace", "null", "think-only"],
)
@pytest.mark.asyncio
async def test_empty_answer(fake: FakeLLM, make_client: MakeClient, reply: ScriptedReply) -> None:
    fake.script(reply)

    with pytest.raises(LLMError) as caught:
        await make_client().complete(HELLO)

    assert assert_one_line(caught.value) == f"The LLM endpoint {fake.base_url} returned an empty answer."
    assert len(fake.requests) == 1


@pytest.mark.asyncio
async def test_empty_answer_cut_off_at_the_token_limit_says_so(fake: FakeLLM, make_client: MakeClient) -> None:
    fake.script(ScriptedReply(content="<think>Let me consider", finish_reason="length"))

    with pytest.raises(LLMError, match=r"empty answer .*token limit.*max_tokens"):
        await make_client().complete(HELLO)


NOT_OPENAI = (
    "sent an answer that is not an OpenAI-style chat completion. Check that the URL is an OpenAI-compatible API"
)


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (ScriptedReply(body="{this is not json", content_type="application/json"), NOT_OPENAI),
        (ScriptedReply(body="<html><body>Welcome to nginx!</body></html>", content_type="text/html"), NOT_OPENAI),
        (ScriptedReply(body='{"hello": "world"}'), NOT_OPENAI),
        (ScriptedReply(body='{"choices": [{"message": 5}]}'), NOT_OPENAI),
        (ScriptedReply(body='{"choices": []}'), "returned an empty answer (no choices)."),
    ],
    ids=["broken-json", "html", "other-json", "bad-message", "no-choices"],
)
@pytest.mark.asyncio
async def test_garbage_body(fake: FakeLLM, make_client: MakeClient, reply: ScriptedReply, expected: str) -> None:
    fake.script(reply)

    with pytest.raises(LLMError) as caught:
        await make_client().complete(HELLO)

    assert assert_one_line(caught.value).startswith(f"The LLM endpoint {fake.base_url} {expected}")
    assert len(fake.requests) == 1  # a garbage answer is not retried


@pytest.mark.asyncio
async def test_settings_must_be_filled_in_before_any_request(make_client: MakeClient) -> None:
    with pytest.raises(LLMError, match=r"^Set the LLM endpoint and the LLM model in Settings first\.$"):
        await make_client(" ", model="").complete(HELLO)
    with pytest.raises(LLMError, match=r"^Set the LLM model in Settings first\.$"):
        await make_client(model="  ").check()


@pytest.mark.asyncio
async def test_url_without_scheme(make_client: MakeClient) -> None:
    with pytest.raises(LLMError, match=r"must start with http:// or https://"):
        await make_client("127.0.0.1:11434/v1").complete(HELLO)


@pytest.mark.asyncio
async def test_closed_client_refuses_politely(make_client: MakeClient) -> None:
    client = make_client()
    assert await client.complete(HELLO) == "echo: hi"
    await client.aclose()

    with pytest.raises(LLMError, match="closed"):
        await client.complete(HELLO)


# -- concurrency ----------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_concurrency_cap(fake: FakeLLM, make_client: MakeClient) -> None:
    fake.script(*[ScriptedReply(content=f"answer {i}", delay=0.1) for i in range(5)])
    client = make_client(max_concurrency=2)

    async with asyncio.timeout(5):
        answers = await asyncio.gather(*(client.complete(HELLO) for _ in range(5)))

    assert sorted(answers) == [f"answer {i}" for i in range(5)]
    assert len(fake.requests) == 5
    assert fake.max_in_flight == 2


@pytest.mark.asyncio
async def test_concurrency_cap_of_one_serialises(fake: FakeLLM, make_client: MakeClient) -> None:
    fake.script(*[ScriptedReply(content="x", delay=0.05) for _ in range(3)])
    client = make_client(max_concurrency=1)

    async with asyncio.timeout(5):
        await asyncio.gather(*(client.complete(HELLO) for _ in range(3)))

    assert fake.max_in_flight == 1


STUCK: list[ChatMessage] = [ChatMessage(role="user", content="a prompt the endpoint never answers")]


@pytest.mark.asyncio
async def test_the_cap_is_counted_per_place(fake: FakeLLM, make_client: MakeClient) -> None:
    """A stalled request holds its own place's slot, never another place's."""
    fake.stall("never answers")
    client = make_client(max_concurrency=1, timeout=30.0, max_retries=0)

    async with asyncio.timeout(5):
        stuck = asyncio.create_task(client.complete(STUCK, place="guild:1/10"))
        await fake.wait_for_stalled(1)
        behind = asyncio.create_task(client.complete(HELLO, place="guild:1/10"))
        # Another place's request goes out at once, though the cap of 1 is taken where the stall is.
        assert await client.complete(HELLO, place="guild:1/20") == "echo: hi"
        assert await client.complete(HELLO, place="dm:7") == "echo: hi"
        # The stalled place's next request is still waiting for its own place's slot: never sent.
        assert len(fake.requests) == 3
        assert not behind.done()
        stuck.cancel()  # the stalled request ends: its place's next one goes
        with pytest.raises(asyncio.CancelledError):
            await stuck
        assert await behind == "echo: hi"
    assert fake.max_in_flight == 2


@pytest.mark.asyncio
async def test_places_do_not_wait_for_each_other_and_each_keeps_its_cap(fake: FakeLLM, make_client: MakeClient) -> None:
    fake.script(*[ScriptedReply(content="x", delay=0.3) for _ in range(8)])
    client = make_client(max_concurrency=1)

    async with asyncio.timeout(5):
        # Four places, two requests each: the four firsts are in flight together, each place's second after.
        await asyncio.gather(*(client.complete(HELLO, place=f"guild:1/{n % 4}") for n in range(8)))

    assert fake.max_in_flight == 4


# -- reasoning blocks -----------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_think_blocks_are_stripped_from_answers(fake: FakeLLM, make_client: MakeClient) -> None:
    fake.script("<think>\nThe user greets me.\nI should greet back.\n</think>\n\n  Hello again!  ")

    assert await make_client().complete(HELLO) == "Hello again!"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("plain answer", "plain answer"),
        ("  padded \n", "padded"),
        ("<think>a</think>answer", "answer"),
        ("<think>a</think>\n<think>b</think>\n answer", "answer"),
        ("<THINK>shout</THINK> answer", "answer"),
        ("<thinking>x</thinking>answer", "answer"),
        ("reasoning whose opening tag was in the prompt</think>\nanswer", "answer"),
        ("<think>cut off mid-thought", ""),
        ("answer that <think>mentions</think> tags", "answer that <think>mentions</think> tags"),
        ("<think>a</think>answer with </think> later", "answer with </think> later"),
    ],
)
def test_strip_reasoning(raw: str, expected: str) -> None:
    assert runtime_llm.strip_reasoning(raw) == expected


# -- endpoints from settings ----------------------------------------------------------------------


def test_for_replies_takes_the_llm_section_and_the_key() -> None:
    llm = LLMSection(
        base_url=" http://127.0.0.1:11434/v1 ",
        model="llama3",
        timeout=30.0,
        max_retries=4,
        max_concurrency=3,
        temperature=0.5,
        max_tokens=256,
        background=BackgroundLLMSection(base_url="http://10.0.0.2:8000/v1", model="small"),
    )

    endpoint = LLMEndpoint.for_replies(llm, Secrets(llm_api_key="sk-1"))

    assert endpoint == LLMEndpoint(
        base_url="http://127.0.0.1:11434/v1",
        api_key="sk-1",
        model="llama3",
        timeout=30.0,
        max_retries=4,
        max_concurrency=3,
        temperature=0.5,
        max_tokens=256,
    )
    assert "sk-1" not in repr(endpoint)


def test_for_background_overrides_url_and_model_when_set() -> None:
    llm = LLMSection(
        base_url="http://127.0.0.1:11434/v1",
        model="llama3",
        background=BackgroundLLMSection(base_url="http://10.0.0.2:8000/v1", model="small"),
    )

    endpoint = LLMEndpoint.for_background(llm, Secrets(llm_api_key="sk-1"))

    assert endpoint.base_url == "http://10.0.0.2:8000/v1"
    assert endpoint.model == "small"
    assert endpoint.api_key == "sk-1"
    assert (endpoint.timeout, endpoint.max_retries, endpoint.max_tokens) == (llm.timeout, llm.max_retries, 600)


@pytest.mark.parametrize(
    ("background", "expected"),
    [
        (BackgroundLLMSection(), ("http://127.0.0.1:11434/v1", "llama3")),
        (BackgroundLLMSection(base_url="  ", model=" "), ("http://127.0.0.1:11434/v1", "llama3")),
        (BackgroundLLMSection(model="small"), ("http://127.0.0.1:11434/v1", "small")),
        (BackgroundLLMSection(base_url="http://other/v1"), ("http://other/v1", "llama3")),
    ],
)
def test_for_background_falls_back_to_the_reply_endpoint(
    background: BackgroundLLMSection, expected: tuple[str, str]
) -> None:
    llm = LLMSection(base_url="http://127.0.0.1:11434/v1", model="llama3", background=background)

    endpoint = LLMEndpoint.for_background(llm, Secrets())

    assert (endpoint.base_url, endpoint.model) == expected


@pytest.mark.parametrize(
    ("base_url", "model", "missing"),
    [
        ("http://127.0.0.1:11434/v1", "llama3", ()),
        ("", "llama3", ("LLM endpoint",)),
        ("http://127.0.0.1:11434/v1", " ", ("LLM model",)),
        (" ", "", ("LLM endpoint", "LLM model")),
    ],
)
def test_missing(base_url: str, model: str, missing: tuple[str, ...]) -> None:
    endpoint = LLMEndpoint.for_replies(LLMSection(base_url=base_url, model=model), Secrets())

    assert endpoint.missing() == missing


def test_default_settings_are_missing_both() -> None:
    assert LLMEndpoint.for_background(LLMSection(), Secrets()).missing() == ("LLM endpoint", "LLM model")


# -- the fake itself ------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_fake_lists_models_and_records_unknown_routes(fake: FakeLLM) -> None:
    headers = {"Authorization": "Bearer sk-test"}
    async with asyncio.timeout(5), aiohttp.ClientSession() as session:
        async with session.get(f"{fake.base_url}/models", headers=headers) as response:
            assert response.status == 200
            body = await response.json()
        async with session.get(f"{fake.base_url}/models") as response:
            assert response.status == 401
        async with session.get(f"{fake.base_url}/embeddings", headers=headers) as response:
            assert response.status == 404

    assert [m["id"] for m in body["data"]] == ["tiny", "other"]
    assert fake.unhandled == ["GET /v1/embeddings"]


@pytest.mark.asyncio
async def test_fake_answers_a_proper_chat_completion(fake: FakeLLM) -> None:
    payload = {"model": "tiny", "messages": [{"role": "user", "content": "yo"}], "max_tokens": 3}
    url = f"{fake.base_url}/chat/completions"
    headers = {"Authorization": "Bearer sk-test"}
    async with (
        asyncio.timeout(5),
        aiohttp.ClientSession() as session,
        session.post(url, json=payload, headers=headers) as response,
    ):
        assert response.status == 200
        body = await response.json()

    assert body["object"] == "chat.completion"
    assert body["model"] == "tiny"
    assert body["id"]
    assert isinstance(body["created"], int)
    assert body["choices"][0]["message"] == {"role": "assistant", "content": "echo: yo"}
    assert body["choices"][0]["finish_reason"] == "stop"
    assert set(body["usage"]) == {"prompt_tokens", "completion_tokens", "total_tokens"}


@pytest.mark.asyncio
async def test_fake_delay_does_not_block_other_requests(fake: FakeLLM, make_client: MakeClient) -> None:
    fake.script(ScriptedReply(content="slow", delay=0.5), "fast")
    client = make_client(max_concurrency=2)

    async with asyncio.timeout(5):
        slow = asyncio.create_task(client.complete(HELLO))
        await fake.wait_for_requests(1)
        assert await client.complete(HELLO) == "fast"
        assert not slow.done()
        assert await slow == "slow"


@pytest.mark.asyncio
async def test_fake_closes_while_a_request_hangs(make_client: MakeClient) -> None:
    server = FakeLLM()
    await server.start()
    server.hang_next()
    client = make_client(server.base_url, timeout=5.0, max_retries=0)
    call = asyncio.create_task(client.complete(HELLO))
    await server.wait_for_requests(1)

    started = time.perf_counter()
    async with asyncio.timeout(3):
        await server.close()
        with pytest.raises(LLMError):
            await call
    assert time.perf_counter() - started < 2.0


@pytest.mark.asyncio
async def test_fake_wait_for_requests_times_out(fake: FakeLLM) -> None:
    with pytest.raises(AssertionError, match="expected 1"):
        await fake.wait_for_requests(1, timeout=0.05)


# -- the model list ---------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_list_models_lists_the_endpoints_models_sorted_with_the_key(
    fake: FakeLLM, make_client: MakeClient
) -> None:
    client = make_client(model="")  # no model needed to ask which there are

    assert await client.list_models() == ("other", "tiny")
    assert [headers["Authorization"] for headers in fake.model_list_requests] == ["Bearer sk-test"]
    assert fake.requests == [], "listing models sends no chat request"


@pytest.mark.asyncio
async def test_list_models_with_a_wrong_key_says_so(fake: FakeLLM, make_client: MakeClient) -> None:
    client = make_client(api_key="sk-wrong")

    with pytest.raises(LLMError) as raised:
        await client.list_models()
    assert (
        assert_one_line(raised.value) == f"The LLM endpoint {fake.base_url} rejected the API key (401). Check the key."
    )


@pytest.mark.asyncio
async def test_list_models_of_an_endpoint_that_is_down_says_it_cannot_reach_it(make_client: MakeClient) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    client = make_client(url)

    with pytest.raises(LLMError) as raised:
        await client.list_models()
    assert assert_one_line(raised.value) == (
        f"Cannot reach the LLM endpoint {url} (connection refused). Is the server running?"
    )


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("status", "body", "says"),
    [
        (404, None, "has no model list (404). Check the URL (it usually ends in /v1), or type the model name."),
        (500, None, "answered with an error 500. The server said: Scripted error 500."),
        (200, "<html>hello</html>", "sent a model list that is not OpenAI-style."),
        (200, '{"data": 3}', "sent a model list that is not OpenAI-style."),
    ],
)
async def test_list_models_explains_what_went_wrong(
    fake: FakeLLM, make_client: MakeClient, status: int, body: str | None, says: str
) -> None:
    fake.models_status, fake.models_body = status, body
    client = make_client()

    with pytest.raises(LLMError) as raised:
        await client.list_models()
    assert says in assert_one_line(raised.value)


@pytest.mark.asyncio
async def test_list_models_refuses_what_is_not_a_web_address(make_client: MakeClient) -> None:
    with pytest.raises(LLMError, match="is not a web address"):
        await make_client("localhost:11434").list_models()
    with pytest.raises(LLMError, match="Set the LLM endpoint first"):
        await make_client(" ").list_models()


# -- a user and password in the address (a proxy that wants them): issue 19, item 4 ------------------------


@pytest_asyncio.fixture
async def proxy() -> AsyncIterator[FakeLLM]:
    server = FakeLLM(basic_auth=("user", "S3CRETPASS"), models=("tiny",))
    await server.start()
    try:
        yield server
    finally:
        async with asyncio.timeout(5):
            await server.close()


@pytest.mark.asyncio
async def test_a_password_in_the_address_reaches_the_proxy_and_no_text_or_request_line(
    proxy: FakeLLM, make_client: MakeClient, caplog: pytest.LogCaptureFixture
) -> None:
    """It went to familiar.log in the check's line, every error and an httpx line per request."""
    url = proxy.base_url.replace("http://", "http://user:S3CRETPASS@")
    shown = proxy.base_url.replace("http://", "http://[redacted]@")
    client = make_client(url, max_retries=0)
    caplog.set_level(logging.DEBUG)

    assert await client.complete(HELLO) == "echo: hi"
    assert shown in await client.check()
    assert await client.list_models() == ("tiny",)
    proxy.script(ScriptedReply(status=500), ScriptedReply(status=401))
    with pytest.raises(LLMError) as raised:
        await client.complete(HELLO)
    assert assert_one_line(raised.value).startswith(f"The LLM endpoint {shown} answered with an error 500")
    with pytest.raises(LLMError) as refused:
        await client.complete(HELLO)
    assert "rejected the API key (401)" in assert_one_line(refused.value)

    # The proxy got the user and password, as the HTTP client would have sent them from the address.
    assert {r.headers["Authorization"] for r in proxy.requests} == {"Basic dXNlcjpTM0NSRVRQQVNT"}
    requests = [r.getMessage() for r in caplog.records if r.name.startswith("httpx")]
    assert requests, "the HTTP client logged no request line"
    assert all("S3CRETPASS" not in line for line in requests), requests  # as the library wrote them
    assert not [r for r in caplog.records if "S3CRETPASS" in r.getMessage()]
    assert client.endpoint.secrets() == ("sk-test", "S3CRETPASS")


def test_the_address_of_an_endpoint_is_shown_without_its_password() -> None:
    endpoint = endpoint_for("http://me:p%40ss@10.0.0.2:8000/v1?key=AIzaX")
    assert endpoint.shown_url == "http://[redacted]@10.0.0.2:8000/v1?key=[redacted]"
    assert sorted(endpoint.secrets()) == ["p%40ss", "p@ss", "sk-test"]
