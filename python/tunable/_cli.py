"""`tunable` on the PATH of a pip install: the bundled command-line program (tunable/bin/tunable)."""
import os
import sys


def main():
    exe = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "tunable")
    if not os.access(exe, os.X_OK):
        sys.exit(f"tunable: the command-line program is missing from this install ({exe})")
    os.execv(exe, [exe] + sys.argv[1:])
