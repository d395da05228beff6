"""NPU-1 as the compiler sees it: register map (registers.py), command tables (cmdtable.py), timing model
(timing.py); the C model that executes tables lives in model/ (docs/npu-datasheet.md describes all of it)."""
