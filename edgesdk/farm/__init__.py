"""Device farms: many builds and runs at once, on local worker processes or a Ray cluster (docs/farm.md).

    pool.py     where tasks run: serially here, local Ray workers (--workers N) or a cluster (--cluster ADDRESS);
                boards as Ray custom resources (board:<name>)
    regress.py  `edgesdk regress`: model x board x target list, built, run, checked, one summary table
    runners.py  how a row runs its firmware (--run-on)

`edgesdk tune --workers/--cluster` measures its candidates through pool.py (edgesdk/tune/tuner.py).
Ray comes with the [farm] extra; a serial run (--workers 1, the default) needs nothing more than the base install.
"""
