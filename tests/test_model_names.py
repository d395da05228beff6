"""`edgesdk build --name NAME` (edgesdk/model_name.py): which names are accepted, and how a named build's
sources differ from a default build's (every symbol, macro, header guard and file of the model prefixed)."""

from __future__ import annotations

import re

import pytest

from conftest import REPO
from edgesdk.errors import UsageError
from edgesdk.model_name import check_model_name, defined_symbols, rename_api_text, rename_sources
from test_cli_errors import edgesdk

KWS = REPO / "examples" / "models" / "kws_ref_model.tflite"
REENTRANCY = re.compile(r"^ \* Re-entrancy: .*?\n \*\n", re.MULTILINE | re.DOTALL)


@pytest.mark.parametrize("name", ["default", "kws", "kws2", "kws_cpu", "person_detect_v2", "a" * 32])
def test_valid_names(name):
    assert check_model_name(name) == name


@pytest.mark.parametrize("name", ["", "Kws", "2kws", "_kws", "kws_", "kws__cpu", "kws-cpu", "kws.cpu", "kws cpu",
                                  "a" * 33, "ké"])
def test_names_that_are_no_c_identifier_fragment_are_refused(name):
    with pytest.raises(UsageError, match="lower-case letters, digits and single '_'") as err:
        check_model_name(name)
    assert err.value.exit_code == 7


@pytest.mark.parametrize("name, what", [("npu", "driver of target 'npu'"), ("c", "driver of target 'c'"),
                                        ("harness", "edgesdk's own firmware"), ("arena", "edgesdk's own firmware"),
                                        ("softmax", "library of target 'c'"), ("conv2d", "library of target 'c'")])
def test_names_whose_symbols_would_meet_edgesdk_s_own_are_refused(name, what):
    """edgesdk_npu_run is the NPU driver's, edgesdk_softmax_* the kernel library's: a model of that name could
    define the same symbol."""
    with pytest.raises(UsageError, match=re.escape(what)):
        check_model_name(name)


def test_defined_symbols_are_the_external_definitions():
    text = ("const uint8_t weights_1[4] __attribute__((aligned(4))) = {\n    1, 2, 3, 4,\n};\n"
            "static const int8_t table[2] = {0, 1};\n__attribute__((noinline)) static int helper(void)\n{\n}\n"
            "uint32_t edgesdk_arena_block[8]\n    __attribute__((section(\".noinit\")));\n"
            "__asm__(\".globl edgesdk_arena\");\nextern const uint8_t other[3];\n_Static_assert(1, \"x\");\n"
            "int32_t edgesdk_default_run(const struct edgesdk_default_inputs *inputs)\n{\n    int32_t x = 0;\n}\n"
            "EDGESDK_DEFAULT_TVM_DLL void tvmgen_leaky_relu_12(int8_t* p0_data) {\n}\n")
    assert defined_symbols(text) == ["weights_1", "edgesdk_arena_block", "edgesdk_default_run", "tvmgen_leaky_relu_12"]


def test_rename_prefixes_api_arena_data_guards_and_files():
    files = {
        "model.h": "#ifndef EDGESDK_MODEL_H\n#define EDGESDK_MODEL_H\n#define EDGESDK_MODEL_NAME \"m\"\n"
                   "#define EDGESDK_DEFAULT_ARENA_BYTES 64u\nstruct edgesdk_default_inputs {\n    int8_t *weights;\n};\n"
                   "extern uint8_t edgesdk_arena[EDGESDK_DEFAULT_ARENA_BYTES];\n#endif /* EDGESDK_MODEL_H */\n",
        "model_data.h": "#ifndef EDGESDK_MODEL_DATA_H\n#define EDGESDK_MODEL_DATA_H\nextern const int8_t weights[4];\n#endif\n",
        "model_data.c": '#include "model_data.h"\nconst int8_t weights[4] = {1, 2, 3, 4};\n',
        "model.c": '#include "model.h"\n#include "model_data.h"\n#include "edgesdk_softmax.h"\n'
                   "void edgesdk_default_arena_io(struct edgesdk_default_inputs *inputs)\n{\n"
                   "    inputs->weights = (int8_t *)(edgesdk_arena + 16); /* weights */\n"
                   "    edgesdk_softmax_s8(weights, edgesdk_arena);\n}\n",
        "edgesdk_harness_targets.h": "#ifndef EDGESDK_HARNESS_TARGETS_H\n#define EDGESDK_HARNESS_TARGETS_H\n#endif\n",
    }
    out = rename_sources(files, "kws")
    assert sorted(out) == ["edgesdk_harness_targets.h", "kws_model.c", "kws_model.h", "kws_model_data.c",
                           "kws_model_data.h"]
    assert out["edgesdk_harness_targets.h"] == files["edgesdk_harness_targets.h"]  # the harness's, not the model's
    header = out["kws_model.h"]
    assert "#ifndef EDGESDK_KWS_MODEL_H\n#define EDGESDK_KWS_MODEL_H\n" in header
    assert '#define EDGESDK_KWS_MODEL_NAME "m"' in header and "EDGESDK_KWS_ARENA_BYTES 64u" in header
    assert "struct edgesdk_kws_inputs {\n    int8_t *weights;" in header  # a field is no symbol: unchanged
    assert "extern uint8_t edgesdk_kws_arena[EDGESDK_KWS_ARENA_BYTES];" in header
    assert "extern const int8_t edgesdk_kws__weights[4];" in out["kws_model_data.h"]
    assert "const int8_t edgesdk_kws__weights[4] = " in out["kws_model_data.c"]
    source = out["kws_model.c"]
    assert '#include "kws_model.h"\n#include "kws_model_data.h"\n#include "edgesdk_softmax.h"' in source
    assert "inputs->weights = (int8_t *)(edgesdk_kws_arena + 16);" in source
    assert "edgesdk_softmax_s8(edgesdk_kws__weights, edgesdk_kws_arena);" in source  # the kernel stays shared
    assert "void edgesdk_kws_arena_io(struct edgesdk_kws_inputs *inputs)" in source
    assert rename_sources(files, "default") == files


def test_rename_api_text_for_an_export_readme():
    text = "`include/model.h`: call edgesdk_default_run(); EDGESDK_DEFAULT_INPUT_0_BYTES; edgesdk_arena."
    assert rename_api_text(text, "default") == text
    assert rename_api_text(text, "vww") == ("`include/vww_model.h`: call edgesdk_vww_run(); EDGESDK_VWW_INPUT_0_BYTES; "
                                            "edgesdk_vww_arena.")


def test_cli_refuses_a_bad_name_before_writing_anything(tmp_path):
    proc = edgesdk("build", KWS, "--name", "KWS-1", "-o", tmp_path / "out")
    assert proc.returncode == 7, proc.stderr
    assert "--name 'KWS-1' cannot be used" in proc.stderr and "lower-case letters" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_named_build_sources_keep_no_default_symbol(tmp_path):
    """The sources of a build named kws, compiled but not cross-compiled: each model file is prefixed, no
    default-build symbol is left, and the program is the default build's but for the names."""
    from edgesdk.compiler import BuildOptions, build

    build(KWS, tmp_path / "kws", BuildOptions(name="kws", compile_firmware=False))
    build(KWS, tmp_path / "default", BuildOptions(compile_firmware=False))
    named, default = tmp_path / "kws" / "src", tmp_path / "default" / "src"
    model_files = sorted(p.name for p in default.glob("model*"))
    assert model_files and sorted(p.name for p in named.glob("kws_model*")) == [f"kws_{f}" for f in model_files]
    assert not list(named.glob("model*")) and (named / "edgesdk_harness_main.c").is_file()
    for path in named.glob("kws_model*"):
        text = path.read_text()
        assert not re.search(r"\bedgesdk_default_|\bEDGESDK_DEFAULT_|\bedgesdk_arena\b|\bEDGESDK_MODEL_H\b", text), path
    # the same program: mapping the names back gives the default build's sources
    for file in model_files:
        text = (named / f"kws_{file}").read_text()
        text = re.sub(r"\bedgesdk_kws_arena(?!_io)", "edgesdk_arena", text)
        text = re.sub(r"\bedgesdk_kws_(?=run|reset|arena_io|inputs|outputs|read_input_rows)", "edgesdk_default_", text)
        text = re.sub(r"\bedgesdk_kws__(?=npu_)", "edgesdk_", text)
        text = re.sub(r"\bEDGESDK_KWS_(?=MODEL_NAME)", "EDGESDK_", text)
        text = re.sub(r"\bEDGESDK_KWS_(?=MODEL)", "EDGESDK_", text)
        text = re.sub(r"\bEDGESDK_KWS_", "EDGESDK_DEFAULT_", text).replace('#include "kws_', '#include "')
        want = (default / file).read_text()
        if file == "model.h":  # its re-entrancy paragraph says whether other models may share the firmware
            text, want = (REENTRANCY.sub("", t, count=1) for t in (text, want))
        assert text == want, file
    assert (tmp_path / "kws" / "report.json").read_text().count('"name": "kws"') == 1
    # edgesdk run finds the arena by the report's name: an edited one is refused, not looked up
    from edgesdk.run_io import check_report, load_report

    report = load_report(tmp_path / "kws")
    with pytest.raises(UsageError, match="'name' is 'kws; rm'"):
        check_report({**report, "name": "kws; rm"}, "report.json")


def test_private_symbols_of_two_names_never_meet():
    """kws's cpu_x and kws_cpu's x: with one underscore both would be edgesdk_kws_cpu_x."""
    from edgesdk.model_name import private_symbol

    assert private_symbol("kws", "cpu_x") == "edgesdk_kws__cpu_x" != private_symbol("kws_cpu", "x") == "edgesdk_kws_cpu__x"
    assert private_symbol("kws", "edgesdk_npu_table_0") == "edgesdk_kws__npu_table_0"
    assert private_symbol("kws", "edgesdk_w", taken={"edgesdk_kws__w"}) == "edgesdk_kws__edgesdk_w"  # a model's w, too


def test_link_refuses_builds_it_cannot_put_in_one_image(tmp_path, capsys):
    """`edgesdk link`: a build without --name, or two of one name, is a usage error (exit 7) and no image is
    written."""
    from edgesdk.cli import main
    from edgesdk.compiler import BuildOptions, build

    build(KWS, tmp_path / "default", BuildOptions(compile_firmware=False))
    build(KWS, tmp_path / "kws", BuildOptions(name="kws", compile_firmware=False))
    image = tmp_path / "image"
    assert main(["link", str(tmp_path / "default"), str(tmp_path / "kws"), "-o", str(image)]) == 7
    assert "was built without --name" in capsys.readouterr().err
    assert main(["link", str(tmp_path / "kws"), str(tmp_path / "kws"), "-o", str(image)]) == 7
    assert "Two builds are named 'kws'" in capsys.readouterr().err
    assert not image.exists()


def test_run_on_an_image_refuses_what_only_one_build_can_do(tmp_path, capsys):
    """`edgesdk run IMAGE` runs each model once: --steps and --profile are refused, --max-instructions on QEMU
    too, and --input must name each model (NAME=FILE), before anything runs."""
    import json

    import numpy as np

    from edgesdk.cli import main

    spec = {"name": "x", "dtype": "int8", "shape": [1, 4], "bytes": 4, "arena_offset": 0}
    report = {"io": {"inputs": [spec], "outputs": [spec]}, "rounding": "ref"}
    (tmp_path / "image.json").write_text(json.dumps({"models": [{"name": "kws", "build": "b", "report": report},
                                                                {"name": "ad", "build": "c", "report": report}]}))
    np.save(tmp_path / "x.npy", np.zeros((1, 4), np.int8))
    for extra, said in ((["--steps", "2", "--random-input", "0"], "--steps is for one model's build"),
                        (["--profile", "--random-input", "0"], "--profile is for one model's build"),
                        (["--emulator", "qemu", "--max-instructions", "9", "--random-input", "0"],
                         "--max-instructions is for the built-in emulator"),
                        ([], "give each its inputs with --input NAME=FILE"),
                        (["--input", f"vww={tmp_path / 'x.npy'}"], "NAME one of kws, ad"),
                        (["--input", f"kws={tmp_path / 'x.npy'}"], "No --input given for model(s) ad")):
        assert main(["run", str(tmp_path), *extra]) == 7, extra
        assert said in capsys.readouterr().err, extra
    assert not (tmp_path / "run").exists()
