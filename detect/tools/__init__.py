"""Developer tools that need the checkout or dev packages: benchmarks, the demo, synthetic segments."""
