"""``validate_workflow`` (archmax validate): warnings for what this version loads but does not run."""

from archmax.spec import validate_workflow


def test_validate_warns_that_hooks_and_sub_workflows_are_loaded_but_not_run(tmp_path):
    folder = tmp_path / "hk"
    folder.mkdir()
    (folder / "workflow.yaml").write_text(
        "states:\n"
        "  a:\n"
        "    triggers: {manual: null}\n"
        "    before: {script: hooks/check.py}\n"
        "    tools: {allow: [archmax_workflow_child]}\n",
        encoding="utf-8",
    )
    found = [(d.path, d.severity) for d in validate_workflow(folder)]
    assert ("states.a.before", "warning") in found
    assert ("states.a.tools", "warning") in found
    assert all(severity == "warning" for _, severity in found)
