"""board.json: its schema (edgesdk/boards/board.schema.json, checked on load by edgesdk/schema.py), the
sanitizing of its strings where they reach generated files, and OUT/board.json, the copy a build records so
that `edgesdk run`, `hil` and `flash` use the board the firmware was built for (issue 12 items 12 and 14).
"""

from __future__ import annotations

import copy
import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, model_path
from edgesdk.board import BOARDS_DIR, SCHEMA_PATH, Board, build_board, load_board
from edgesdk.errors import UsageError
from edgesdk.firmware_build import render_board_files
from edgesdk.schema import SchemaError, check_schema, load_schema, validate

RISCV_NPU = BOARDS_DIR / "riscv-npu"
EXAMPLE_BOARD = REPO / "examples" / "edgesdk-lutaccel" / "edgesdk_lutaccel" / "boards" / "riscv-npu-lut" / "board.json"
INJECTION = "\n#error X\n"
HAS_TOOLCHAIN = shutil.which("riscv64-unknown-elf-gcc") is not None
HAS_ROBOT = importlib.util.find_spec("robot") is not None


def riscv_npu() -> dict:
    return json.loads((RISCV_NPU / "board.json").read_text())


def edgesdk(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "edgesdk", *map(str, args)], capture_output=True, text=True, cwd=cwd)


# ---- the schema -------------------------------------------------------------------------------------------

def test_shipped_boards_follow_the_schema():
    schema = load_schema(str(SCHEMA_PATH))
    for path in (RISCV_NPU / "board.json", EXAMPLE_BOARD):
        assert validate(json.loads(path.read_text()), schema) == [], path


# board.json edits -> the field the error must name
BAD_BOARDS = [
    (lambda b: b.update(name=INJECTION), "name"),
    (lambda b: b.update(name='a"b'), "name"),
    (lambda b: b["cpu"].update(isa='rv32imac"\n#define X'), "cpu.isa"),
    (lambda b: b["cpu"].update(march="rv32imac -fplugin=evil.so"), "cpu.march"),
    (lambda b: b["cpu"].update(mabi="ilp64"), "cpu.mabi"),
    (lambda b: b["cpu"].update(clock_hz="200000000u\n#error X"), "cpu.clock_hz"),
    (lambda b: b["toolchain"]["cflags"].append("-O2;-DX"), "toolchain.cflags[4]"),
    (lambda b: b["toolchain"].update(prefix="riscv64 -DX"), "toolchain.prefix"),
    (lambda b: b["memory"]["sram"].update(base="0x80000000 + 4"), "memory.sram.base"),
    (lambda b: b["memory"]["sram"].update(kind="flash"), "memory.sram.kind"),
    (lambda b: b["memory"].pop("flash"), "memory.flash"),
    (lambda b: b["peripherals"]["npu0"].update(irq=-1), "peripherals.npu0.irq"),
    (lambda b: b["peripherals"]["npu0"].update(irq=True and 3.5), "peripherals.npu0.irq"),
    (lambda b: b["peripherals"].update({"uart-1": b["peripherals"].pop("uart0")}), "peripherals.uart-1"),
    (lambda b: b.update(stack_size=4096), "stack_size"),
    (lambda b: b.update(description="two\nlines"), "description"),
    (lambda b: b["flashing"].update(openocd_config="../../etc/passwd"), "flashing.openocd_config"),
    (lambda b: b.update(default_targets="npu;c"), "default_targets"),
]


@pytest.mark.parametrize("edit, field", BAD_BOARDS, ids=[f for _, f in BAD_BOARDS])
def test_a_bad_field_is_named_with_its_allowed_form(tmp_path, edit, field):
    board = riscv_npu()
    edit(board)
    path = tmp_path / "board.json"
    path.write_text(json.dumps(board))
    with pytest.raises(UsageError) as err:
        load_board(str(path))
    message = str(err.value)
    assert f"{field}: " in message and "board.schema.json" in message, message
    assert "allowed" in message or "expected" in message or "known here" in message, message
    assert "\n" not in message  # the bad value is quoted as JSON, never printed raw


def test_validator_agrees_with_jsonschema_when_it_is_installed():
    jsonschema = pytest.importorskip("jsonschema")
    schema = load_schema(str(SCHEMA_PATH))
    jsonschema.Draft202012Validator.check_schema(schema)
    reference = jsonschema.Draft202012Validator(schema)
    cases = [riscv_npu(), json.loads(EXAMPLE_BOARD.read_text())]
    for edit, _ in BAD_BOARDS:
        board = riscv_npu()
        edit(board)
        cases.append(board)
    for board in cases:
        assert bool(validate(board, schema)) == (not reference.is_valid(board)), board


def test_validator_refuses_keywords_it_does_not_implement():
    with pytest.raises(SchemaError, match="oneOf"):
        check_schema({"type": "object", "properties": {"a": {"oneOf": [{"type": "string"}]}}})
    with pytest.raises(SchemaError, match=r"\$ref"):
        check_schema({"$ref": "other.json#/x"})


def test_error_x_board_is_refused_by_the_cli_and_writes_nothing(tmp_path):
    board = riscv_npu()
    board["name"] = INJECTION
    folder = tmp_path / "evil"
    folder.mkdir()
    (folder / "board.json").write_text(json.dumps(board))
    out = tmp_path / "out"
    proc = edgesdk("build", model_path("hello_world"), "--board", folder / "board.json", "-o", out, "--no-firmware")
    assert proc.returncode == 7, proc.stderr
    assert "is invalid: name:" in proc.stderr and "letters, digits" in proc.stderr
    assert not out.exists()


def test_generated_files_sanitize_board_strings(tmp_path):
    """Whoever builds the Board (a plugin, a test, a future loader), its strings cannot break out of the C
    string or comment they are written into."""
    good = load_board("riscv-npu")
    evil = Board(f'x"{INJECTION}*/ /* \\', tmp_path / "a*/b" / "board.json", "", {**good.cpu, "isa": f'rv32"{INJECTION}'},
                 good.memories, good.peripherals, good.stack_bytes, good.toolchain)
    render_board_files(evil, tmp_path / "src")
    for name in ("board.h", "link.ld"):
        text = (tmp_path / "src" / name).read_text()
        assert not [line for line in text.splitlines() if line.lstrip().startswith("#error")], name
        assert "*/ /*" not in text and "a*/b" not in text
    defines = [line for line in (tmp_path / "src" / "board.h").read_text().splitlines() if line.startswith("#define BOARD_")]
    name_line = next(line for line in defines if line.startswith("#define BOARD_NAME "))
    assert name_line.count('"') == 2 and "\\" not in name_line



def test_model_sources_sanitize_the_board_name(tmp_path):
    """The board's name also reaches model.c and model.h (a comment naming the board): same rule there."""
    from edgesdk.aot.render import render_sources
    from edgesdk.compiler import BuildOptions, compile_model

    compiled = compile_model(model_path("hello_world"), BuildOptions(target="c"))
    render_sources(compiled.executor, tmp_path, source="m.tflite", board=f'x"{INJECTION}*/ /* \\', rounding="ref")
    for name in ("model.c", "model.h", "model_data.c", "model_data.h"):
        text = (tmp_path / name).read_text()
        assert not [line for line in text.splitlines() if line.lstrip().startswith("#error")], name
        assert "*/ /*" not in text, name

# ---- OUT/board.json -----------------------------------------------------------------------------------------

def custom_board(folder: Path, name: str = "custom-npu", stack_bytes: int = 4096) -> Path:
    """A board of the user's own, outside edgesdk: riscv-npu's files renamed, its Renode script including
    edgesdk's C# peripherals by absolute path (the board is no longer beside edgesdk/renode/)."""
    folder.mkdir(parents=True)
    board = riscv_npu()
    board["name"], board["stack_bytes"] = name, stack_bytes
    (folder / "board.json").write_text(json.dumps(board, indent=2))
    shutil.copy(RISCV_NPU / "openocd.cfg", folder / "openocd.cfg")
    shutil.copy(RISCV_NPU / "riscv-npu.repl", folder / f"{name}.repl")
    renode_dir = (BOARDS_DIR.parent / "renode").resolve()
    resc = (RISCV_NPU / "riscv-npu.resc").read_text().replace("$ORIGIN/../../renode", str(renode_dir))
    (folder / f"{name}.resc").write_text(resc.replace("riscv-npu", name))
    return folder / "board.json"


@pytest.fixture(scope="module")
def custom_build(tmp_path_factory):
    if not HAS_TOOLCHAIN:
        pytest.skip("RISC-V cross compiler not installed")
    root = tmp_path_factory.mktemp("custom-board")
    board_json = custom_board(root / "my-boards" / "custom-npu")
    out = root / "out"
    proc = edgesdk("build", model_path("hello_world"), "--board", board_json, "-o", out, cwd=root)
    assert proc.returncode == 0, proc.stderr
    return board_json, out


def test_build_records_its_board(custom_build):
    board_json, out = custom_build
    assert (out / "board.json").read_bytes() == board_json.read_bytes()
    report = json.loads((out / "report.json").read_text())
    assert report["board"] == "custom-npu" and Path(report["board_file"]) == board_json.resolve()
    assert build_board(out, report).path == board_json.resolve()  # the original, with its .repl and .resc


def test_run_hil_and_flash_use_a_board_given_by_path(custom_build, tmp_path):
    _, out = custom_build
    elsewhere = tmp_path  # not the directory the build was made from
    proc = edgesdk("run", out, "--random-input", "0", "--check", cwd=elsewhere)
    assert proc.returncode == 0 and "bit-exact" in proc.stdout, proc.stderr
    proc = edgesdk("flash", out, "--probe", "emulator", cwd=elsewhere)
    assert proc.returncode == 0 and "exit code: 0" in proc.stdout, proc.stderr
    if HAS_ROBOT:
        proc = edgesdk("hil", out, "--suite", "boot", cwd=elsewhere)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "model hello_world_int8 on custom-npu" in (out / "hil" / "variables.py").read_text()


def test_the_recorded_copy_is_used_once_the_board_file_is_gone(custom_build, tmp_path):
    board_json, built = custom_build
    out = tmp_path / "out"
    shutil.copytree(built, out, ignore=shutil.ignore_patterns("hil"))
    moved = tmp_path / "moved"
    shutil.move(str(board_json.parent), moved)
    try:
        report = json.loads((out / "report.json").read_text())
        board = build_board(out, report)
        assert board.path == (out / "board.json") and board.stack_bytes == 4096
        proc = edgesdk("run", out, "--random-input", "1", "--check")
        assert proc.returncode == 0 and "bit-exact" in proc.stdout, proc.stderr
        proc = edgesdk("flash", out, "--probe", "emulator")
        assert proc.returncode == 0, proc.stderr
        proc = edgesdk("hil", out, "--suite", "boot")  # the Renode script was beside the original board.json
        assert proc.returncode == 7 and "no Renode script custom-npu.resc" in proc.stderr, proc.stderr
        proc = edgesdk("flash", out, "--probe", "openocd")
        assert proc.returncode == 7 and "openocd.cfg does not exist" in proc.stderr, proc.stderr
    finally:
        shutil.move(str(moved), board_json.parent)


def test_an_edited_board_file_does_not_change_a_finished_build(custom_build, tmp_path):
    """The firmware was linked for the recorded board: a later edit of the original is not used."""
    board_json, built = custom_build
    out = tmp_path / "out"
    shutil.copytree(built, out, ignore=shutil.ignore_patterns("hil"))
    original = board_json.read_text()
    try:
        edited = json.loads(original)
        edited["stack_bytes"] = 2048
        board_json.write_text(json.dumps(edited))
        board = build_board(out, json.loads((out / "report.json").read_text()))
        assert board.path == out / "board.json" and board.stack_bytes == 4096
    finally:
        board_json.write_text(original)


def test_a_build_without_a_recorded_board_is_looked_up_by_name(tmp_path):
    report = {"board": "riscv-npu"}
    assert build_board(tmp_path, report).path == (RISCV_NPU / "board.json").resolve()
    # a copy equal to a shipped board is loaded from edgesdk's folder (companion files beside it)
    (tmp_path / "board.json").write_bytes((RISCV_NPU / "board.json").read_bytes())
    assert build_board(tmp_path, {"board": "riscv-npu", "board_file": "/nonexistent/board.json"}).path == \
        (RISCV_NPU / "board.json").resolve()
    changed = copy.deepcopy(riscv_npu())
    changed["memory"]["sram"]["size"] = 262144
    (tmp_path / "board.json").write_text(json.dumps(changed))
    assert build_board(tmp_path, report).sram.size == 262144


# ---- default_targets: the board says which targets a build without --target uses -------------------------

def test_each_shipped_board_names_its_default_targets():
    from edgesdk.targets import default_target_list

    assert default_target_list(load_board("riscv-npu")) == "npu,c"  # what a build without --target always used
    assert default_target_list(load_board("riscv-npu-large")) == "npu,c"
    assert default_target_list(load_board("hifive1-revb")) == "c"  # no NPU: the host core


def test_without_default_targets_every_usable_target_applies_accelerators_first(tmp_path):
    from edgesdk.targets import all_targets, default_target_list, get_target

    board = riscv_npu()
    del board["default_targets"]
    path = tmp_path / "board.json"
    path.write_text(json.dumps(board))
    names = default_target_list(load_board(str(path))).split(",")
    usable = {t.name for t in all_targets() if not t.peripheral_types or t.peripheral_of(load_board(str(path)))}
    assert set(names) == usable and {"npu", "dsp", "c"} <= usable
    drives = [bool(get_target(name).peripheral_types) for name in names]
    assert drives == sorted(drives, reverse=True)  # every accelerator before every host-core target
    board["peripherals"] = {k: v for k, v in board["peripherals"].items() if k in ("uart0", "exit")}
    path.write_text(json.dumps(board))
    assert all(not get_target(n).peripheral_types for n in default_target_list(load_board(str(path))).split(","))


def test_inspect_without_target_uses_the_board_default():
    """riscv-npu's default is exactly --target npu,c; the HiFive1 (no NPU) builds for its host core instead of
    refusing a list naming hardware it does not have."""
    model = model_path("kws")
    default = edgesdk("inspect", model, "--json")
    assert default.returncode == 0, default.stderr
    assert default.stdout == edgesdk("inspect", model, "--json", "--target", "npu,c").stdout
    hifive = edgesdk("inspect", model, "--json", "--board", "hifive1-revb")
    assert hifive.returncode == 0, hifive.stderr
    assert {op["target"] for op in json.loads(hifive.stdout)["ops"]} == {"c"}


def test_a_board_text_checked_once_per_process_and_an_edit_checked_again(tmp_path, monkeypatch):
    """load_board checks a text against the schema once per process (the tuner loads the same board for every
    compile); the same file edited into an invalid board is a new text, checked and refused."""
    import edgesdk.board as board_module
    import edgesdk.schema as schema_module

    calls = []
    real = schema_module.validate
    def counted(value, *rest):  # validate recurses through the module's name: count the whole files only
        if isinstance(value, dict) and "peripherals" in value:
            calls.append(1)
        return real(value, *rest)

    monkeypatch.setattr(schema_module, "validate", counted)
    path = tmp_path / "board.json"
    board = riscv_npu()
    board["description"] = "checked once"  # a text no other test loaded
    path.write_text(json.dumps(board))
    load_board(str(path))
    load_board(str(path))
    assert len(calls) == 1 and path.read_text() in board_module._VALID_BOARD_TEXTS
    board["memory"]["sram"].update(kind="flash")
    path.write_text(json.dumps(board))
    with pytest.raises(UsageError, match="memory.sram.kind"):
        load_board(str(path))
    assert len(calls) == 2
