"""``crank run --image``: a real subprocess sends the image over real HTTP in the API's
shape; resuming a session whose image is a blob loads it for the next request; a file
that is no image is refused before any request."""

from __future__ import annotations

import base64
from pathlib import Path

from tests.support.images import png
from tests.support.model_server import ModelServer

from .test_run import clean_env, crank

BIG = png(100, 100, noise=True)


def test_an_image_goes_with_the_prompt_and_comes_back_on_resume(tmp_path: Path) -> None:
    (tmp_path / "shot.png").write_bytes(BIG)
    sessions = str(tmp_path / "s")
    with ModelServer({"replies": [{"text": "noise"}, {"text": "still noise"}]}) as server:
        env = clean_env(
            OPENAI_BASE_URL=server.url + "/v1", OPENAI_API_KEY="sk-x", CRANK_MODEL="gpt-4o"
        )
        done = crank(
            tmp_path, "run", "--session-dir", sessions, "--image", "shot.png", "what?", env=env
        )
        assert done.returncode == 0, done.stderr
        again = crank(tmp_path, "run", "--session-dir", sessions, "--continue", "and?", env=env)
        assert again.returncode == 0, again.stderr
        first, second = (r["body"]["messages"] for r in server.requests)
    for messages in (first, second):
        part = next(m for m in messages if m["role"] == "user")["content"][1]
        assert base64.b64decode(part["image_url"]["url"].split(",", 1)[1]) == BIG
    (session,) = Path(sessions).rglob("*.jsonl")
    assert session.stat().st_size < len(BIG)
    (blob,) = session.with_suffix(".blobs").iterdir()
    assert blob.name.endswith(".png") and blob.read_bytes() == BIG


def test_a_file_that_is_no_image_is_refused(tmp_path: Path) -> None:
    (tmp_path / "notes.png").write_text("text\n")
    with ModelServer({"replies": [{"text": "never"}]}) as server:
        env = clean_env(OPENAI_BASE_URL=server.url + "/v1", OPENAI_API_KEY="sk-x", CRANK_MODEL="m")
        done = crank(
            tmp_path,
            "run",
            "--session-dir",
            str(tmp_path / "s"),
            "--image",
            "notes.png",
            "x",
            env=env,
        )
        assert server.requests == []
    assert done.returncode == 1, "a failure, as the README's exit statuses say"
    assert "--image[0]" in done.stderr and "not a PNG, JPEG, GIF or WebP" in done.stderr
