"""The `detect` command: parse arguments, build a `RunSpec`, call the library, print, exit.

The only package that knows argparse, prints or exits; one module per group of commands
(`jobs`: segment and run; `results`: eval, export, report, gif; `facts`: info and model), the
parser in `parser`, flag values and exit codes in `values`, the error mapping in `app`.
Exit codes: 0 all good; 1 some frames (or segments) failed and are listed in the manifest / run
file; 2 usage, input, model or output errors and unexpected ones (one line on stderr; the
traceback only with --debug); 130 interrupted.
"""

from detect.cli.app import main

__all__ = ["main"]
