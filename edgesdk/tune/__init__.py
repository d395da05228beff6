"""Schedule tuning: `edgesdk tune` searches per-layer choices (targets of borderline ops, cascade groups and
stripe heights, weight compression, paired FC layout) against the cost models and the emulator, and writes
a tuning log that `edgesdk build --tuning-log` applies as given (docs/performance.md, "Tuning").

    schedule.py  Schedule (the choices) and its JSON; schedule_of(compiled)
    search.py    candidates, predicted figures, the coordinate-descent search
    measure.py   firmware built and run on the emulator: measured figures
    tuner.py     tune(): search, measure, choose, the log's contents
    log.py       the tuning log file: write, read, check against a build

Code generators read the schedule's per-layer switches through their codegen context
(CodegenOptions.layer_choice, edgesdk/targets/api.py); they never import this package.
"""

from .schedule import CascadeChoice, LayerChoice, Schedule, schedule_of

__all__ = ["CascadeChoice", "LayerChoice", "Schedule", "schedule_of"]
