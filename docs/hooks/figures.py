"""mkdocs hook: add the figures drawn from the benchmark records to the site as ``figures/<name>.svg``.

:mod:`figures` (in ``docs/gen/``) draws them with matplotlib from ``benchmarks/results/*.json`` at build
time; they are added as generated files, so a page links to them like any other file (``![...](
../figures/sac-pendulum.svg)``), ``--strict`` checks those links, and nothing drawn is committed. The example league run's
report page and pictures (:mod:`example_run`) go to ``figures/example-run/``.
"""
from __future__ import annotations

import os
import sys

from mkdocs.structure.files import File

GEN_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'gen')
FOLDER = 'figures'
EXAMPLE = 'example-run'  # the example league run's report page and pictures (docs/gen/example_run.py)


def on_files(files, config):
    if GEN_DIR not in sys.path:
        sys.path.insert(0, GEN_DIR)
    import example_run
    import figures
    for name, svg in figures.render_all().items():
        files.append(File.generated(config, f'{FOLDER}/{name}', content=svg))
    for name, text in example_run.render_example().items():
        files.append(File.generated(config, f'{FOLDER}/{EXAMPLE}/{name}', content=text))
    return files
