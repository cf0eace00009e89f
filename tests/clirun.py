"""Run the real `linkwrap` console script (tests/cli/test_config.py, test_explain.py)."""
import os
import subprocess

from conftest import script


def linkwrap(*argv, cwd, env=None):
    return subprocess.run([script("linkwrap"), *map(str, argv)], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, **(env or {})})
