"""Running segments: the run spec, one segment lifecycle, the local and the Ray engine, many-segment runs."""
