"""Generate the records page (docs/records.md) from ``benchmarks/results/*.json``: every entry of every record
with its stamp (the commit it was measured at, the date, the CPU model, the load and the command), as
``benchmarks/results_file.py`` writes them. An entry without a stamp fails the build: a figure nobody can
place is not shown.
"""
from __future__ import annotations

import glob
import html
import json
import os
from typing import Dict, List, Optional

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESULTS_DIR = os.path.join(ROOT, 'benchmarks', 'results')
STAMPS = '_stamps'  # as benchmarks/results_file.py names them
STAMP_FIELDS = ('commit', 'date', 'cpu_model', 'load_average', 'command')
UNKNOWN = 'unknown'


class UnstampedEntries(RuntimeError):
    """Record entries without a complete stamp."""


def load(results_dir: str = RESULTS_DIR) -> Dict[str, dict]:
    """``{record name: record}`` of every JSON file, by name."""
    out = {}
    for path in sorted(glob.glob(os.path.join(results_dir, '*.json'))):
        with open(path) as f:
            out[os.path.splitext(os.path.basename(path))[0]] = json.load(f)
    return out


def stamp_of(record: dict, key: str) -> Optional[dict]:
    """An entry's stamp: the one ``merge_results`` keeps beside it, else the stamp fields the entry holds
    itself (a script that puts ``**stamp()`` into its entry), else the record's own when the whole file is one
    stamped run: its top level holds the fields (the CPU model and load perhaps under ``machine``), or one of its
    entries is the run's stamp (``"record": stamp()``); None when none is complete."""
    kept = record.get(STAMPS, {}).get(key)
    if kept is not None and all(field in kept for field in STAMP_FIELDS):
        return kept
    siblings = [value for name, value in record.items() if name != STAMPS and isinstance(value, dict)
                and set(value) == set(STAMP_FIELDS)]
    for holder in [record[key], record] + siblings[:1]:
        found = _fields(holder) if isinstance(holder, dict) else None
        if found is not None:
            return found
    return None


def _fields(holder: dict) -> Optional[dict]:
    """The stamp fields of ``holder``, looking into its ``machine`` for those it lacks; None if one is missing."""
    machine = holder.get('machine') if isinstance(holder.get('machine'), dict) else {}
    out = {}
    for field in STAMP_FIELDS:
        value = holder.get(field, machine.get(field))
        if field not in holder and field not in machine:
            return None
        out[field] = UNKNOWN if value is None else value
    return out


def unstamped(records: Dict[str, dict]) -> List[str]:
    """``'record: entry'`` for each entry without a complete stamp."""
    return [f'{name}: {key}' for name, record in records.items() for key in record
            if key != STAMPS and stamp_of(record, key) is None]


def render(results_dir: str = RESULTS_DIR) -> str:
    records = load(results_dir)
    missing = unstamped(records)
    if missing:
        raise UnstampedEntries(f'{len(missing)} record entries have no complete stamp ({", ".join(STAMP_FIELDS)}; '
                               f'benchmarks/results_file.py merge_results writes it): ' + '; '.join(missing))
    entries = sum(len([k for k in r if k != STAMPS]) for r in records.values())
    out = [f'{entries} entries in {len(records)} records.', '']
    for name, record in records.items():
        out += [f'## `{name}.json` {{ #{name.replace("_", "-")} }}', '',
                '| entry | commit | date | CPU | load | command |', '|---|---|---|---|---|---|']
        for key in record:
            if key == STAMPS:
                continue
            s = stamp_of(record, key)
            note = ' \\*' if s.get('backfilled') else ''  # stamped afterwards, from the record's history
            out.append(f'| {_code(key)} | {_code(_short(s["commit"]))}{note} | {_text(s["date"])} | '
                       f'{_text(s["cpu_model"])} | {_text(_load(s["load_average"]))} | {_code(s["command"])} |')
        out.append('')
    return '\n'.join(out)


def record_line(name: str, results_dir: str = RESULTS_DIR, page: str = 'results.md') -> str:
    """One line under a results section: the record it comes from, its entries' dates and CPUs, and a link to
    their stamps (``<!-- record: NAME -->`` on a page; ``page``, its path under docs/, places the link)."""
    records = load(results_dir)
    if name not in records:
        raise UnstampedEntries(f'a page names the record {name!r}; benchmarks/results has no {name}.json')
    record = records[name]
    stamps = [stamp_of(record, key) for key in record if key != STAMPS]
    if any(s is None for s in stamps):
        raise UnstampedEntries(f'{name}: {", ".join(unstamped({name: record}))} without a stamp')
    dates = sorted(str(s['date'])[:10] for s in stamps)
    cpus: Dict[str, int] = {}
    for s in stamps:
        cpus[str(s['cpu_model'])] = cpus.get(str(s['cpu_model']), 0) + 1
    span = dates[0] if dates[0] == dates[-1] else f'{dates[0]} to {dates[-1]}'
    cpu_text = ', '.join(f'{html.escape(cpu)} ({n})' for cpu, n in sorted(cpus.items(), key=lambda kv: -kv[1]))
    entries = f'{len(stamps)} entr{"y" if len(stamps) == 1 else "ies"}'
    return (f'*Record `benchmarks/results/{name}.json`: {entries}, dated {span}; CPU {cpu_text}; '
            f'[every entry\'s stamp]({"../" * page.count("/")}records.md#{name.replace("_", "-")}).*')


def _short(commit: str) -> str:
    """The first 10 hex digits of a commit (and ``+changes`` when the work tree had some)."""
    if commit == UNKNOWN:
        return commit
    head, plus, rest = commit.partition('+')
    return head[:10] + plus + rest


def _load(load) -> str:
    if isinstance(load, list):
        return ' / '.join(f'{x:.2f}' for x in load)
    return str(load)


def _code(text: str) -> str:
    """Text as code in a table cell: HTML, so that backticks and pipes inside it stay as written."""
    return '<code>' + html.escape(str(text)).replace('|', '&#124;') + '</code>'


def _text(text) -> str:
    return html.escape(str(text)).replace('|', '&#124;')
