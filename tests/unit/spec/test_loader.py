"""``validate_workflow`` (archmax validate): hooks and sub-workflows validate clean, since they run."""

from archmax.spec import validate_workflow


def test_validate_reports_a_workflow_with_hooks_and_a_sub_workflow_clean(tmp_path):
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
    assert validate_workflow(folder) == []
