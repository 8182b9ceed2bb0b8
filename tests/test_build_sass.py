"""Every family compiles for every arch of BUILD_ARCHS (sm_80 to sm_120a) and each case's SASS is what the manifest
claims there, or the case is compiled out where the arch lacks what it requires (real nvcc, cuobjdump)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
from helpers import ARCHS, BUILD_ARCHS, FLAGS, ROOT, assert_sass_claims, run_cli
from smdissect.core import catalog, tables
from smdissect.core.errors import SmdissectError
from smdissect.measure import build, protocol, sass
from smdissect.stages import static as static_stage


@pytest.mark.parametrize("arch", BUILD_ARCHS)
def test_every_case_matches_its_sass_claims(built: dict, arch: str) -> None:
    failed = []
    for (a, category, family), binary in built.items():
        if a != arch:
            continue
        cases = static_stage.family_cases(ROOT / "kernels", category, family)
        # the sass stage's checks, without its control-code table (test_controlcodes)
        _, _, rows, _ = static_stage.sass_rows(binary, binary.with_suffix(".json"), cases, arch, "test")
        checks = tables.frame("sass_checks", rows)
        listed = {e["case"] for e in json.loads(binary.with_suffix(".json").read_text()) if e["kernels"]}
        assert set(checks.case) == listed, f"{category}/{family}: a case with kernels has no SASS check"
        failed.append(checks[checks.verdict == "disagree"].assign(family=f"{category}/{family}"))
    failed = pd.concat(failed)
    assert failed.empty, failed[["family", "case", "kernel", "opcode", "expect", "scope", "count"]].to_string()


@pytest.mark.parametrize("arch", BUILD_ARCHS)
def test_every_family_builds_for_every_arch(built: dict, arch: str) -> None:
    """Each binary holds SASS for `arch`: a case the arch lacks is compiled out, never its whole family."""
    for (a, category, family), binary in built.items():
        if a == arch and catalog.family_source(ROOT / "kernels", category, family).suffix == ".cu":
            assert "Function :" in sass.dump(binary, arch), f"{category}/{family} holds no {arch} SASS"


def test_host_optimization_leaves_the_sass_unchanged(tmp_path: Path) -> None:
    """nvcc's -O is the host compiler's level: the device code, and so every measurement, is the same at -O0/-O3."""
    source = catalog.family_source(ROOT / "kernels", "latency", "sfu")
    texts = []
    for level in ("-O0", "-O3"):
        binary = tmp_path / level
        flags = build.merged_flags(FLAGS, [level])
        build.compile_family("nvcc", source, binary, ["sm_90a"], ROOT / "kernels" / "common", flags)
        texts.append(sass.dump(binary, "sm_90a"))
    assert texts[0] == texts[1] and "MUFU" in texts[0]


def test_a_family_level_replaces_the_configured_one() -> None:
    assert build.merged_flags(["-O0", "-lineinfo"], ["-O3"]) == ["-lineinfo", "-O3"]
    assert build.merged_flags(["-O0", "-lineinfo"], ["--use_fast_math"]) == ["-O0", "-lineinfo", "--use_fast_math"]


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
    listing = f'{{"protocol": {protocol.VERSION}, "case": "lib_call", "kernels": []}}'
    source.write_text(f"#!/usr/bin/env python3\nimport json\nprint(json.dumps({listing}))\n")
    binary = tmp_path / "build" / "lib"
    build.compile_family("nvcc", source, binary, ARCHS, ROOT / "kernels" / "common", FLAGS)
    build.write_listing(binary, binary.with_suffix(".json"))
    case = catalog.Case("t", "lib_call", "lib.py", "torch call", ("ms",), {"n": [1]}, {})
    out = tmp_path / "s"
    static_stage.sass_tables(binary, binary.with_suffix(".json"), [case], "sm_90a", "test", out / "s.parquet",
                         out / "c.parquet", out / "cc.parquet")  # fmt: skip
    assert tables.read("sass", out / "s.parquet").empty and tables.read("sass_checks", out / "c.parquet").empty
    assert tables.read("controlcodes", out / "cc.parquet").empty


# --- timed loops: the claimed instruction once per step inside the loop the clock reads time -----------------------
# Expectations in terms of `ops` are counted in one pass of the kernel's timed loop (sass.timed_loop); these tests
# pin the kernels whose timed work the compiler had changed while every whole-kernel count still passed.

FIXED = [("tensorcore", "mma"), ("pipelines", "integer"), ("memory", "atomics"), ("interconnect", "ping_pong"),
         ("cluster", "pingpong"), ("async", "stream")]  # fmt: skip


def loops_of(binary: Path, arch: str, prefix: str) -> dict[str, tuple[int, Counter[str]]]:
    """Kernel symbol -> (listed ops, opcode counts of one pass of its timed loop), for the kernels named prefix..."""
    code = sass.code(sass.dump(binary, arch))
    listed = {k["symbol"]: k["ops"] for e in json.loads(binary.with_suffix(".json").read_text()) for k in e["kernels"]}
    found = {s: (ops, sass.loop_opcodes(code[s])) for s, ops in listed.items() if s.startswith(prefix)}
    assert found, f"no kernel {prefix}... listed"
    return found


@pytest.mark.parametrize(("category", "family"), FIXED)
@pytest.mark.parametrize("arch", ARCHS)
def test_fixed_families_hold_their_claims_per_pass_of_the_timed_loop(compiled, arch: str, category: str,
                                                                      family: str) -> None:  # fmt: skip
    cases = catalog.families(catalog.load(ROOT / "kernels", category))[family]
    assert_sass_claims(compiled(arch, category, family), arch, cases)


@pytest.mark.parametrize("arch", ARCHS)
def test_fp8_mma_issues_its_emulation_inside_the_timed_loop(compiled, arch: str) -> None:
    """sm_90a emulates fp8 mma.sync (F2FP converts, 2 HMMA.16816, FADDs): with constant A and B ptxas hoisted the
    HMMAs and timed 4 FADDs a step. Each step now converts A and issues both HMMAs; sm_120a issues one QMMA."""
    binary = compiled(arch, "tensorcore", "mma")
    for fmt in ("E4m3", "E5m2"):
        for symbol, (ops, loop) in loops_of(binary, arch, f"tc_kernel<{fmt}F32,").items():
            if arch == "sm_90a":
                assert sass.count(loop, "HMMA.16816.F32") == 2 * ops and sass.count(loop, "QMMA") == 0, (symbol, loop)
                assert sass.count(loop, f"F2FP.F16.{fmt.upper()}.UNPACK_B") >= 8 * ops, (symbol, loop)  # all of A
                assert sass.count(loop, "FADD") == 4 * ops and sass.count(loop, "LOP3") == 4 * ops, (symbol, loop)
            else:
                assert sass.count(loop, "QMMA") == ops and sass.count(loop, "HMMA") == 0, (symbol, loop)
                assert sass.count(loop, "LOP3") == sass.count(loop, "F2FP") == 0, (symbol, loop)  # no sm_90 feed
    for symbol, (ops, loop) in loops_of(binary, arch, "tc_kernel<F16F32,").items():  # the formats around: untouched
        assert sass.count(loop, "HMMA") == ops and sass.count(loop, "LOP3") == sass.count(loop, "FADD") == 0, symbol


def test_a_hoisted_fp8_mma_fails_its_loop_claim(tmp_path: Path) -> None:
    """The kernel as it was (A and B constant): its whole-kernel HMMA count looks fine, the loop claim does not."""
    source = tmp_path / "hoisted.cu"
    source.write_text(
        f'#include "{ROOT}/kernels/tensorcore/ops.cuh"\n'
        'SMD_MMA424(E4m3Const, true, "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32", SMD_UNSCALED, 0,\n'
        "           0x20202020u, 0x20202020u, true, 16, 8, 32, tensor, 1);\n"
        'int main(int c, char** v) { return smd::family_main(c, v, {tc::warp_case<E4m3Const>("e4m3")}); }\n'
    )
    binary = tmp_path / "hoisted"
    build.compile_family("nvcc", source, binary, ["sm_90a"], ROOT / "kernels" / "common", FLAGS)
    build.write_listing(binary, binary.with_suffix(".json"))
    case = next(c for c in catalog.load(ROOT / "kernels", "tensorcore") if c.id == "mma_e4m3_f32")
    ops, loop = loops_of(binary, "sm_90a", "tc_kernel<E4m3Const,1,64>")["tc_kernel<E4m3Const,1,64>"]
    rows = [r for r in sass.check(case, sass.opcodes(sass.dump(binary, "sm_90a"))["tc_kernel<E4m3Const,1,64>"],
                                  ops, loop) if r["scope"] == "loop"]  # fmt: skip
    assert rows and all(r["verdict"] == "disagree" for r in rows if r["expect"] == ">= ops"), rows
    assert sass.count(loop, "FADD") == 4 * ops and sass.count(loop, "HMMA") < ops, loop  # the FADDs are all it times


@pytest.mark.parametrize("arch", ARCHS)
def test_iadd64_is_one_unfused_add_per_step(compiled, arch: str) -> None:
    """A chain x += a let ptxas fuse two add.u64 into one three-input IADD3 + IADD3.X: half the steps. The Fibonacci
    step x, y -> x + y, x keeps every sum: one 64-bit add per step (two halves on sm_90a, IADD.64 on sm_120a)."""
    for symbol, (ops, loop) in loops_of(compiled(arch, "pipelines", "integer"), arch, "chain_kernel<Iadd64,").items():
        if arch == "sm_90a":
            assert loop["IADD3"] == ops and loop["IMAD.X"] + loop["IADD3.X"] == ops, (symbol, loop)
        else:
            assert loop["IADD.64"] == ops and sass.count(loop, "IADD3") == 0, (symbol, loop)


def test_a_fused_add_chain_fails_its_loop_claim(tmp_path: Path) -> None:
    source = tmp_path / "fused.cu"
    source.write_text(
        '#include "chain.cuh"\n'
        "struct Add64 { using T = unsigned long long;\n"
        "  static void seed(T* in) { for (int i = 0; i < 10; ++i) in[i] = 3u * i + 1u; }\n"
        "  __device__ static T apply(T x, T a, T) {\n"
        '    asm volatile("add.u64 %0, %0, %1;" : "+l"(x) : "l"(a)); return x; } };\n'
        'int main(int c, char** v) { return smd::chain_main(c, v, {SMD_CHAIN_CASE("iadd64", Add64)}); }\n'
    )
    binary = tmp_path / "fused"
    build.compile_family("nvcc", source, binary, ["sm_90a"], ROOT / "kernels" / "common", FLAGS)
    build.write_listing(binary, binary.with_suffix(".json"))
    case = next(c for c in catalog.load(ROOT / "kernels", "pipelines") if c.id == "iadd64")
    symbol = "chain_kernel<Add64,1,512>"
    ops, loop = loops_of(binary, "sm_90a", symbol)[symbol]
    rows = sass.check(case, sass.opcodes(sass.dump(binary, "sm_90a"))[symbol], ops, loop)
    assert loop["IADD3"] == loop["IADD3.X"] == ops // 2, loop  # the fusion, as the H200 run timed it
    assert any(r["verdict"] == "disagree" and r["scope"] == "loop" for r in rows), rows


@pytest.mark.parametrize("arch", ARCHS)
def test_atomic_chains_time_the_bare_atomic(compiled, arch: str) -> None:
    """On a provably warp-uniform address nvcc made each u32 atomicAdd of the latency chain a warp-aggregated sequence
    (VOTE.ANY, SHFL.UP scan, a second atomic): the address now depends on threadIdx.x. The throughput kernel's
    atomics sit in an outer loop, so that where each is a CAS retry loop the timed loop is still all of them."""
    binary = compiled(arch, "memory", "atomics")
    for symbol, (ops, loop) in loops_of(binary, arch, "atomic_latency<").items():
        atoms = sass.count(loop, "ATOMG") + sass.count(loop, "ATOMS")
        assert atoms == ops and not (sass.count(loop, "VOTE") or sass.count(loop, "SHFL")), (symbol, loop)
    for symbol, (ops, loop) in loops_of(binary, arch, "atomic_throughput<Add,").items():
        atoms = sum(sass.count(loop, op) for op in ("ATOMS", "ATOMG", "REDG"))
        assert atoms == ops == 64, (symbol, loop)


@pytest.mark.parametrize("arch", ARCHS)
def test_ping_pong_times_whole_round_trips(compiled, arch: str) -> None:
    """The clock read that starts the timing sat inside the round loop, so the loop between the reads was the last
    round's poll loop; with the warm and the timed rounds in two loops, one pass is a poll and a release store."""
    binary = compiled(arch, "interconnect", "ping_pong")
    code = sass.code(sass.dump(binary, arch))["ping_pong"]
    first, last, what = sass.timed_loop(code)
    assert what == "loop between the clock reads"
    assert any(first <= a and b < last for a, b in sass.loops(code)), "the poll loop is inside the timed loop"
    loop = sass.loop_opcodes(code)
    assert loop["STG.E.STRONG.SYS"] == loop["LDG.E.STRONG.SYS"] == loop["MEMBAR.ALL.SYS"] == 1, loop


@pytest.mark.parametrize("arch", ARCHS)
def test_half_chains_name_the_forms_they_time(compiled, arch: str) -> None:
    """fma.rn.f16x2 is HFMA2 and HFMA2.MMA in turn on sm_90a in the latency and pipelines chains, but HFMA2 alone in
    the power kernel (its rate is one form's); add/mul chains alternate HADD2/HMUL2 with HFMA2 on both archs."""
    for category, family in (("latency", "float"), ("pipelines", "half")):
        for symbol, (ops, loop) in loops_of(compiled(arch, category, family), arch, "chain_kernel<Hfma2,").items():
            mma = loop["HFMA2.MMA"]
            assert loop["HFMA2"] + mma == ops and mma == (ops // 2 if arch == "sm_90a" else 0), (category, symbol)
    for name, other in (("Hadd2", "HADD2"), ("Hmul2", "HMUL2")):
        for symbol, (ops, loop) in loops_of(compiled(arch, "pipelines", "half"), arch, f"chain_kernel<{name},").items():
            assert loop[other] == sass.count(loop, "HFMA2") == ops // 2, (symbol, loop)
    for symbol, (ops, loop) in loops_of(compiled(arch, "power", "power"), arch, "power_kernel<Hfma2>").items():
        assert loop["HFMA2"] == ops and loop["HFMA2.MMA"] == 0, (symbol, loop)
