"""The case runner drives every model call from a case's script (BEHAVIOUR.md §10.4)."""


def test_a_scripted_case_replaces_a_state_s_own_provider_model_so_it_runs_offline(tmp_path, run_one):
    folder = tmp_path / "workflows" / "pinned"
    folder.mkdir(parents=True)
    (folder / "workflow.yaml").write_text(
        "states:\n"
        "  chat:\n"
        "    model: openai:gpt-4o-mini\n"  # would need a key and the network if it were built
        "    triggers: {manual: null}\n",
        encoding="utf-8",
    )
    doc = {
        "title": "Offline",
        "description": "The script answers even where the state names a provider model.",
        "model": [{"say": "Hello from the script."}],
        "steps": [{"send": "hi"}, {"reply": {"includes": ["Hello from the script."]}}],
    }
    result = run_one(folder, doc)
    assert result.verdict.status == "passed", result.verdict.failures
