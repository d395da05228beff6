"""BYOC-style partitioning: per-target op support with named constraints, regions, fallback."""
