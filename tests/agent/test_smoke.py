from crank.agent.harness import Harness
from crank.agent.scripted import ScriptedModel, call, say

from .helpers import assert_balanced, echo_tool


async def test_a_harness_needs_no_disk_project_or_editor() -> None:
    model = ScriptedModel([call("echo", {"text": "hi"}), say("done")])
    harness = Harness(system="X", tools=[echo_tool()], model=model)
    run = harness.prompt("go")
    events = [event async for event in run.events()]
    assert await run.wait() == "stop"
    assert_balanced(events)
    roles = [m["role"] for m in harness.messages]
    assert roles == ["user", "assistant", "toolResult", "assistant"]
    assert harness.messages[2]["content"] == "echo: hi"
    assert model.requests[0].system == "X"
