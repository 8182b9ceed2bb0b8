"""Every case compiles for sm_90a and sm_120a and its SASS is what the manifest claims (real nvcc, cuobjdump)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ARCHS, FLAGS, ROOT, run_cli
from smdissect import build, catalog, pipeline, protocol, sass, tables
from smdissect.errors import SmdissectError


@pytest.mark.parametrize("arch", ARCHS)
def test_every_case_matches_its_sass_claims(built: dict, arch: str, tmp_path: Path) -> None:
    for (a, category, family), binary in built.items():
        if a != arch:
            continue
        cases = pipeline.family_cases(ROOT / "kernels", category, family)
        out = tmp_path / family
        pipeline.sass_tables(binary, binary.with_suffix(".json"), cases, arch, "test", out / "s.parquet",
                             out / "c.parquet", out / "cc.parquet")  # fmt: skip
        checks = tables.read("sass_checks", out / "c.parquet")
        listed = {e["case"] for e in json.loads(binary.with_suffix(".json").read_text()) if e["kernels"]}
        assert set(checks.case) == listed, "a case with kernels has no SASS check"
        failed = checks[checks.verdict == "disagree"]
        assert failed.empty, failed[["case", "kernel", "opcode", "expect", "count"]].to_string()


def test_listing_matches_the_sass_kernels(built: dict) -> None:
    binary = built[("sm_90a", "latency", "float")]
    listing = json.loads(binary.with_suffix(".json").read_text())
    names = sass.opcodes(sass.dump(binary, "sm_90a"))
    for entry in listing:
        for k in entry["kernels"]:
            assert k["symbol"] in names
            ilp, depth = (int(x) for x in k["symbol"].rstrip(">").split(",")[1:])
            assert k["ops"] == ilp * depth


def test_ffma_chain_is_exactly_the_ffma_count(built: dict) -> None:
    counts = sass.opcodes(sass.dump(built[("sm_120a", "latency", "float")], "sm_120a"))
    assert counts["chain_kernel<Ffma,1,512>"]["FFMA"] == 512
    assert counts["chain_kernel<Ffma,8,64>"]["FFMA"] == 512


def test_a_chain_the_compiler_folds_away_is_caught(tmp_path: Path) -> None:
    """rcp(rcp(x)) is folded by ptxas: the SASS check must say the measurement is of nothing."""
    source = tmp_path / "folded.cu"
    source.write_text(
        '#include "chain.cuh"\n'
        "struct Rcp { using T = float; static void seed(T* in) { for (int i = 0; i < 10; ++i) in[i] = 2.0f; }\n"
        "  __device__ static T apply(T x, T, T) {\n"
        '    asm volatile("rcp.approx.ftz.f32 %0, %0;" : "+f"(x)); return x; } };\n'
        'int main(int c, char** v) { return smd::chain_main(c, v, {SMD_CHAIN_CASE("rcp", Rcp)}); }\n'
    )
    binary = tmp_path / "folded"
    build.compile_family("nvcc", source, binary, ["sm_90a"], ROOT / "kernels" / "common", FLAGS)
    counts = sass.opcodes(sass.dump(binary, "sm_90a"))["chain_kernel<Rcp,1,512>"]
    case = catalog.Case("t", "rcp", "folded.cu", "rcp", ("latency",), {"ilp": [1]}, {"MUFU.RCP": ["== ops"]})
    [row] = sass.check(case, counts, 512)
    assert row["count"] == 0 and row["verdict"] == "disagree"


@pytest.mark.parametrize(
    ("mangled", "plain"),
    [
        ("_ZN3smd12chain_kernelI4FfmaLi1ELi256EEEvPKNT_1TEPS3_PNS_5StampEii", "chain_kernel<Ffma,1,256>"),
        ("_Z12chain_kernelI5Hfma2Li8ELi64EEvPKT_", "chain_kernel<Hfma2,8,64>"),
        ("_Z3fooILin5EEvv", "foo<-5>"),
        ("plain_c_name", "plain_c_name"),
    ],
)
def test_demangle(mangled: str, plain: str) -> None:
    assert sass.demangle(mangled) == plain


@pytest.mark.parametrize(
    ("expect", "count", "ok"),
    [("== ops", 512, True), ("== ops", 511, False), (">= ops", 520, True), ("<= ops + 8", 520, True),
     ("<= ops + 8", 521, False), (">=256", 256, True), (">= 2*ops", 1024, True), ("< ops - 1", 510, True)],
)  # fmt: skip
def test_expectations(expect: str, count: int, ok: bool) -> None:
    assert sass.holds(expect, count, 512) is ok


def test_bad_expectation_is_one_line() -> None:
    with pytest.raises(SmdissectError, match="is not like"):
        sass.holds("about ops", 1, 1)


def test_matching_keeps_modifiers_and_skips_lookalikes() -> None:
    assert sass.matches("MUFU.RCP", "MUFU.RCP") and sass.matches("FFMA.FTZ", "FFMA")
    assert not sass.matches("UIADD3", "IADD3") and not sass.matches("MUFU.EX2", "MUFU.RCP")


def test_compile_error_is_one_line(tmp_path: Path) -> None:
    source = tmp_path / "bad.cu"
    source.write_text("int main() { return undefined_symbol; }\n")
    with pytest.raises(SmdissectError, match=r"nvcc failed on .*bad.cu for sm_90a: .*undefined_symbol") as err:
        build.compile_family("nvcc", source, tmp_path / "bad", ["sm_90a"], ROOT / "kernels" / "common", FLAGS)
    assert "\n" not in str(err.value) and not (tmp_path / "bad").exists()


def test_missing_tool_names_the_fix() -> None:
    with pytest.raises(SmdissectError, match="no-such-ncu not found: install Nsight Compute"):
        build.find_tool("no-such-ncu", "install Nsight Compute or set ncu: in config/config.yaml")


class TestProtocol:
    """The binary's command line, without a GPU: --list works, bad arguments are one line with exit 2."""

    def test_list_needs_no_gpu(self, built: dict) -> None:
        proc = run_cli(str(built[("sm_120a", "latency", "sfu")]), "--list")
        assert proc.returncode == 0
        cases = [json.loads(line) for line in proc.stdout.splitlines()]
        assert {c["case"] for c in cases} == {"mufu_ex2", "mufu_rcp"}
        assert all(len(c["kernels"]) == 8 for c in cases)  # ilp 1, 2, 4, 8 x short, long

    @pytest.mark.parametrize(
        ("args", "message"),
        [
            (["--case", "ffma", "--param", "ilp=x"], "error: --param ilp: 'x' is not an integer"),
            (["--bogus"], "error: unknown argument '--bogus'"),
            ([], "error: no --case given (see --list)"),
            (["--case", "ffma", "--param", "depth=3"], "error: unknown parameter 'depth'"),
            # every group of a --then line is checked before the GPU is touched (there is none here)
            (["--case", "ffma", "--then"], "error: no --case given (see --list)"),
            (["--case", "ffma", "--then", "--case", "nope"], "error: unknown case 'nope' (see --list)"),
            (["--case", "ffma", "--then", "--case", "ffma", "--param", "depth=3"], "error: unknown parameter 'depth'"),
        ],
    )
    def test_bad_arguments(self, built: dict, args: list[str], message: str) -> None:
        proc = run_cli(str(built[("sm_90a", "latency", "float")]), *args)
        assert proc.returncode == 2 and proc.stdout == ""  # nothing ran, not even an earlier group
        assert proc.stderr.strip().startswith(message) and len(proc.stderr.strip().splitlines()) == 1

    @pytest.mark.parametrize(
        ("args", "message"),
        [
            (["--case", "ok", "--then"], "error: no --case given (see --list)"),
            (["--then", "--case", "ok"], "error: no --case given (see --list)"),
            (["--case", "ok", "--then", "--case", "nope"], "error: unknown case 'nope' (see --list)"),
            (
                ["--case", "ok", "--repeats", "0", "--then", "--case", "ok", "--repeats", "3"],
                "error: --repeats must be",
            ),
        ],
    )
    def test_a_python_family_reads_then_groups_as_the_harness_does(
        self, capsys: pytest.CaptureFixture[str], args: list[str], message: str
    ) -> None:
        ran = []
        with pytest.raises(SystemExit) as exit_:
            protocol.main({"ok": lambda *point: ran.append(point)}, args)
        assert exit_.value.code == 2 and not ran and capsys.readouterr().err.strip().startswith(message)


def test_a_python_family_is_its_own_executable_with_no_sass(tmp_path: Path) -> None:
    """A library call (torch) measured through the same protocol: built by copying, listed, no SASS rows."""
    source = tmp_path / "lib.py"
    source.write_text('#!/usr/bin/env python3\nimport json\nprint(json.dumps({"case": "lib_call", "kernels": []}))\n')
    binary = tmp_path / "build" / "lib"
    build.compile_family("nvcc", source, binary, ARCHS, ROOT / "kernels" / "common", FLAGS)
    build.write_listing(binary, binary.with_suffix(".json"))
    case = catalog.Case("t", "lib_call", "lib.py", "torch call", ("ms",), {"n": [1]}, {})
    out = tmp_path / "s"
    pipeline.sass_tables(binary, binary.with_suffix(".json"), [case], "sm_90a", "test", out / "s.parquet",
                         out / "c.parquet", out / "cc.parquet")  # fmt: skip
    assert tables.read("sass", out / "s.parquet").empty and tables.read("sass_checks", out / "c.parquet").empty
    assert tables.read("controlcodes", out / "cc.parquet").empty
