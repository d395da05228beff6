"""Issue 5's reference figures and goals, as written there (bytes, instructions, cycles)."""

MODELS = {  # short name -> file in ../shared/models/mlcommons_tiny/
    "kws": "kws_ref_model.tflite",
    "vww": "vww_96_int8.tflite",
    "ic": "pretrainedResnet_quant.tflite",
    "ad": "ad01_int8.tflite",
}
TITLES = {"kws": "KWS DS-CNN", "vww": "VWW MobileNetV1-0.25", "ic": "IC ResNet-8", "ad": "AD FC autoencoder"}

# Activation RAM (arena incl. inputs, outputs, scratch) from the table.
SRAM_GOAL = {"kws": 12_800, "vww": 39_300, "ic": 28_600, "ad": 768}
SRAM_FIELD = {  # TFLite Micro arena head, microTVM + CMSIS-NN workspace, Vela --optimise Size (issue table)
    "kws": {"tflm_head": 16_000, "microtvm": 17_232, "vela_size": 22_200},
    "vww": {"tflm_head": 73_728, "microtvm": 64_800, "vela_size": 49_152},
    "ic": {"tflm_head": 49_152, "microtvm": 66_112, "vela_size": 35_840},
    "ad": {"tflm_head": 768, "microtvm": 1_160, "vela_size": 770},
}
# Vela's estimated NPU cycles on U55-128, --optimise Performance: the goal is fewer.
VELA_CYCLES = {"kws": 89_900, "vww": 220_870, "ic": 201_747, "ad": 201_184}
# TFLite Micro reference kernels on an emulated RV32IMC core, instructions per inference: goal <= 1/3.
TFLM_INSTRUCTIONS = {"kws": 45_750_000, "vww": 114_560_000, "ic": 127_250_000, "ad": 2_510_000}
TFLM_TEXT_BYTES = 85_844  # goal: runtime + kernels code at most half
TFLM_ARENA = {"kws": 22_780, "vww": 100_668, "ic": 54_364, "ad": 2_380}  # its firmware's arena (issue)
