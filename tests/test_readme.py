"""The README's Python examples run as shown (each ```python block, in order, in one namespace)."""

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks() -> list:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_readme_python_blocks_run():
    blocks = python_blocks()
    assert len(blocks) >= 2, "the README shows the protocol and the module use"
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, str(README), "exec"), namespace)
    # the protocol section's claims, as printed there
    assert namespace["state2"].counts.tolist() == [2, 3] and namespace["release"].branch == "rollback"
    assert sorted(namespace["run3"].deleted) == [5, 7, 30] and namespace["record3"].steps == (7, 30)
