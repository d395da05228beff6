"""What a build and a run tell the user beyond pass/fail: per-layer figures, the profile of a run, the HTML
report and the CLI's tables.

* `layers` - report.json `layers`: per op its target, MACs, bytes moved, the cost model's cycles (or host
  instructions), the lower bound and its share of the estimated latency (Target.estimate_layers);
* `profile` - `edgesdk run --profile`: instructions and accelerator cycles measured per layer on the emulator;
* `tables` - the text tables `edgesdk build --verbose` and `edgesdk run --profile` print;
* `plots` / `html` - OUT/report.html, one self-contained page (SVG figures inline), and the
  memory_timeline.svg beside it.
"""
