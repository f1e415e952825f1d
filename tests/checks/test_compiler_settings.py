"""Two builds of one C source told apart by compiler setting (issue #47): the taint check and the disassembly
scan on native/leakage/toy/select.c compiled with gcc at -O0, -O2, -O3 and -Os.

pqlab_toy_select selects on a secret byte with ``s ? a : b``: a conditional jump at -O0, which memcheck
reports, a cmov at -O2, which it must not.  pqlab_toy_tomsg divides a secret-derived value by q = 3329 as
Kyber's poly_tomsg does: a ``div`` at -Os, a multiply at -O3, which only the disassembly tells apart.
"""
from __future__ import annotations

import platform
import shutil
import subprocess
from pathlib import Path

import pytest

from pqlab.checks import disassembly, taint
from pqlab.core.errors import BadInput, UnknownName

SOURCE = Path(__file__).resolve().parents[2] / "native" / "leakage" / "toy" / "select.c"
LEVELS = ("O0", "O2", "O3", "Os")

needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None,
                               reason="gcc is not installed (apt-get install gcc)")
needs_valgrind = pytest.mark.skipif(shutil.which("valgrind") is None,
                                    reason="valgrind is not installed (apt-get install valgrind)")
x86_64 = pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"),
                            reason="what gcc emits at each level was measured on x86-64")


@pytest.fixture(scope="module")
def libs(tmp_path_factory) -> dict[str, Path]:
    """select.c as a shared library per optimisation level, compiled with gcc."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed (apt-get install gcc)")
    out = tmp_path_factory.mktemp("toy")
    built = {}
    for level in LEVELS:
        built[level] = out / f"select-{level}.so"
        subprocess.run(["gcc", f"-{level}", "-shared", "-fPIC", "-o", str(built[level]), str(SOURCE)],
                       check=True, capture_output=True, timeout=60)
    return built


@pytest.fixture(scope="module")
def ready():
    """Skip (with the reason) where valgrind or a C compiler with valgrind/memcheck.h is missing."""
    why = taint.available(None)
    if why:
        pytest.skip(why)


@pytest.mark.slow
@needs_gcc
@needs_valgrind
@x86_64
def test_the_taint_check_flags_the_select_built_at_O0_and_not_at_O2(libs, ready):
    leaky = taint.check("pqlab_toy_select", kind="function", library=libs["O0"])
    assert leaky["branches"] >= 1 and leaky["exit_status"] == taint.ERROR_EXIT, leaky["findings"]
    assert leaky["secret_bytes"] == leaky["tainted_bytes"] == 32 and leaky["library"] == str(libs["O0"])
    assert leaky["findings"][0]["frames"][:2] == ["pick", "pqlab_toy_select"]
    clean = taint.check("pqlab_toy_select", kind="function", library=libs["O2"])
    assert clean["errors"] == 0 and clean["exit_status"] == 0, clean["findings"][:3]
    assert clean["phases"] == {"setup": 0, "function": 0}


@needs_gcc
@x86_64
def test_the_disassembly_lists_the_div_gcc_emits_at_Os_and_none_at_O3(libs):
    small = disassembly.divisions(libs["Os"], ["pqlab_toy_tomsg"])
    assert [d["function"] for d in small["divisions"]] == ["pqlab_toy_tomsg"]
    assert small["divisions"][0]["instruction"].startswith("div")
    assert small["entries"] == ["pqlab_toy_tomsg"] and small["objdump"]
    assert disassembly.divisions(libs["O3"], "pqlab_toy_tomsg")["divisions"] == []
    # the same -Os library from the select: tomsg's div is not reachable from it
    assert disassembly.divisions(libs["Os"], ["pqlab_toy_select"])["divisions"] == []


SYNTHETIC = """
0000000000001000 <entry>:
    1000:\tpush   %rbx
    1001:\tcall   1030 <helper@plt>
    1006:\tje     1010 <entry+0x10>
    1008:\tcall   *%rax
    100a:\tjmp    1100 <tail.part.0>
    1010:\tdivsd  %xmm1,%xmm0

0000000000001030 <helper@plt>:
    1030:\tjmp    *0x2fe2(%rip)        # 4018 <helper@Base>

0000000000001040 <unreached>:
    1040:\tidivq  %rcx

0000000000001050 <helper>:
    1050:\tdivl   %ecx
    1052:\tcall   *0x10(%rip)        # 2000 <unreached>

0000000000001100 <tail.part.0>:
    1100:\tidivl  (%rdi)
    1102:\tret
"""


def test_the_call_graph_follows_direct_calls_plt_stubs_and_tail_jumps_only():
    result = disassembly.scan(SYNTHETIC, ["entry"])
    assert [(d["function"], d["instruction"]) for d in result["divisions"]] == [
        ("helper", "divl %ecx"), ("tail.part.0", "idivl (%rdi)")]  # divsd is no integer division
    assert result["reachable"] == 3 and result["indirect_calls"] == 2  # entry, helper (its PLT stub), tail


@needs_gcc
def test_an_unknown_entry_is_refused_in_one_line_with_close_matches(libs):
    with pytest.raises(UnknownName) as info:
        disassembly.divisions(libs["Os"], ["pqlab_toy_tomsgg"])
    assert "pqlab_toy_tomsg" in info.value.matches and "\n" not in str(info.value)
    with pytest.raises(BadInput, match="not a file"):
        disassembly.divisions(libs["Os"].with_name("missing.so"), ["pqlab_toy_tomsg"])


def test_a_missing_objdump_is_one_line_naming_binutils(monkeypatch, tmp_path):
    library = tmp_path / "lib.so"
    library.write_bytes(b"\x7fELF")
    monkeypatch.setattr(disassembly.shutil, "which", lambda name: None)
    with pytest.raises(disassembly.DisassemblyUnavailable, match="apt-get install binutils") as info:
        disassembly.divisions(library, ["f"])
    assert "\n" not in str(info.value)


def test_library_is_required_for_kind_function_and_refused_for_the_others_before_valgrind(
        monkeypatch, tmp_path):
    def refuse(*args, **kwargs):
        raise AssertionError("valgrind or the harness was reached before the arguments were checked")

    monkeypatch.setattr(taint, "_valgrind", refuse)
    monkeypatch.setattr(taint, "harness", refuse)
    monkeypatch.setattr(taint, "_library", refuse)
    with pytest.raises(BadInput, match="needs library=") as info:
        taint.check("pqlab_toy_select", kind="function")
    assert "\n" not in str(info.value)
    with pytest.raises(BadInput, match="not a file"):
        taint.check("pqlab_toy_select", kind="function", library=tmp_path / "missing.so")
    library = tmp_path / "lib.so"
    library.write_bytes(b"")
    with pytest.raises(BadInput, match="nbytes"):
        taint.check("pqlab_toy_select", kind="function", library=library, nbytes=0)
    with pytest.raises(BadInput, match="kind='function' only"):
        taint.check("ML-KEM-768", kind="kem", library=library)
    with pytest.raises(BadInput, match="kind='function' only"):
        taint.check("leaky", kind="control", nbytes=32)
