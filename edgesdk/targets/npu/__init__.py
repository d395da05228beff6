"""The NPU target: op support with named constraints (supported.py) and IR ops -> NPU-1 commands (codegen.py)."""
