"""Tests of linkwrap/facts/. snap(): the probe's snapshot of a link writing output (the tests' one way in)."""
import os

from linkwrap.facts import probe
from linkwrap.request import args


def snap(output, inputs=(), cwd=None):
    argv = ["-o", output] if output is not None else []
    return probe.snapshot(args.parse([*argv, *inputs], cwd=cwd or os.getcwd()))
