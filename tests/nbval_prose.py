"""A pytest plugin for the nbval run of ``make test-notebooks`` (``-p nbval_prose``): every Markdown output a
notebook cell displays (the studies' generated sentences) is read as it comes from the kernel, and a factor
printed without its interval fails that cell (:func:`pqlab.core.quoted.bare_factors`), unless its sentence
says why (a published value, no interval and why).  The quick profile measures in rounds, so every ratio it
prints has an interval to show; issue #45 found 44 numbers quoted without one."""
from __future__ import annotations

import pytest

from pqlab.core.quoted import bare_factors


def markdown_outputs(outputs) -> list[str]:
    """The text/markdown data of a cell's outputs (nbval's NotebookNodes or plain dicts)."""
    out = []
    for o in outputs or []:
        data = o.get("data") or {}
        text = data.get("text/markdown")
        if text:
            out.append("".join(text) if isinstance(text, list) else str(text))
    return out


def problems(outputs) -> list[str]:
    return [hit for text in markdown_outputs(outputs) for hit in bare_factors(text)]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    result = yield
    outputs = getattr(item, "test_outputs", None)
    if outputs:
        hits = problems(outputs)
        if hits:
            raise AssertionError(f"{item.name}: a generated sentence prints a factor without its interval "
                                 "(give it with fmt_factor_ci, or say in the sentence why it has none):\n"
                                 + "\n".join(hits))
    return result
