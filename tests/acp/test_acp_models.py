"""Zed and VS Code offer the same models: ACP's ``model`` option lists exactly what
``crank/models`` lists for the same configuration, the configured server's served
models included (before, ACP listed only the catalog's)."""

from __future__ import annotations

from pathlib import Path

from tests.lsp.helpers import running_server
from tests.support.model_server import ModelServer

from .helpers import RecordingClient, crank_acp

SERVED = {"data": [{"id": "test", "max_model_len": 32768}, {"id": "coder", "max_model_len": 4096}]}


async def test_acp_and_crank_models_list_the_same_models(tmp_path: Path) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    with ModelServer({"replies": []}) as model:
        model.routes["/v1/models"] = SERVED
        options = {
            "provider": {"api": "openai", "baseUrl": model.url + "/v1", "model": "test"},
            "sessionDir": str(tmp_path / "lsp-sessions"),
        }
        async with running_server(tmp_path, [folder], options) as lsp:
            listed = (await lsp.request("crank/models", {}))["models"]
        async with crank_acp(model, tmp_path, RecordingClient(), model_id="test") as conn:
            session = await conn.new_session(cwd=str(folder))
    lsp_models = [f"{m['api']}/{m['id']}" for m in listed]
    (option,) = session.config_options
    acp_models = [choice.value for choice in option.options]
    assert "openai/coder" in lsp_models, "the server's served models are listed"
    assert acp_models == lsp_models
    assert option.current_value == "openai/test"
