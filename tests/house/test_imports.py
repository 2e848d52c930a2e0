"""The house's floors: imports run downward (config, policy, worker, league, dizoo, framework) and never in a circle.

Every ``import`` of a ``sparring`` module is counted, module-level and deferred alike: a deferred
import is still a dependency, it only fails later.

Module size is a warning, not a gate: a module is cut by responsibility, and a cap invites cutting a class
into modules that share its state. A module past :data:`MODULE_LINES_NOTE` lines is named in the test
report (a ``pytest`` warning), as a prompt to look for a second idea in it.
"""
import ast
import os
import warnings
from typing import Dict, List, Set

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FLOORS = ('config', 'policy', 'worker', 'league', 'dizoo', 'framework')
MODULE_LINES_NOTE = 600  # generous: past this, a module likely holds two ideas


def package_modules() -> Dict[str, str]:
    """``{'sparring.league.player': path}`` for every module the package installs."""
    modules = {}
    for floor in FLOORS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, floor)):
            dirnames[:] = [d for d in dirnames if not d.startswith(('.', '__'))]
            for name in filenames:
                if name.endswith('.py'):
                    rel = os.path.relpath(os.path.join(dirpath, name), ROOT)[:-3].replace(os.sep, '.')
                    modules['sparring.' + rel.removesuffix('.__init__')] = os.path.join(dirpath, name)
    return modules


def imports_of(module: str, path: str, known: Set[str]) -> Set[str]:
    """The sparring modules ``module`` imports (``from package import name`` counts the submodule when it is one)."""
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    is_package = path.endswith('__init__.py')
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ''
            if node.level:
                parts = module.split('.')
                parts = parts if is_package else parts[:-1]
                parts = parts[:len(parts) - (node.level - 1)]
                base = '.'.join(parts + ([base] if base else []))
            names = [f'{base}.{alias.name}' if f'{base}.{alias.name}' in known else base for alias in node.names]
        else:
            continue
        for name in names:
            while name and name not in known:
                name = name.rpartition('.')[0]
            if name.startswith('sparring.') and name != module:
                found.add(name)
    return found


MODULES = package_modules()
GRAPH = {m: imports_of(m, p, set(MODULES)) for m, p in MODULES.items()}


def floor_of(module: str) -> int:
    return FLOORS.index(module.split('.')[1])


def test_imports_run_downward():
    upward = sorted(f'{m} imports {d}' for m, deps in GRAPH.items() for d in deps if floor_of(d) > floor_of(m))
    assert not upward, 'imports that go up a floor:\n' + '\n'.join(upward)


def test_no_import_cycle():
    cycles: List[List[str]] = []
    state: Dict[str, int] = {}  # 1 on the current path, 2 done
    stack: List[str] = []

    def visit(module: str) -> None:
        state[module] = 1
        stack.append(module)
        for dep in sorted(GRAPH[module]):
            if state.get(dep) == 1:
                cycles.append(stack[stack.index(dep):] + [dep])
            elif dep not in state:
                visit(dep)
        stack.pop()
        state[module] = 2

    for module in sorted(GRAPH):
        if module not in state:
            visit(module)
    assert not cycles, 'import cycles:\n' + '\n'.join(' -> '.join(c) for c in cycles[:10])


class LargeModule(UserWarning):
    """A module past :data:`MODULE_LINES_NOTE` lines (a note, not a failure)."""


def test_large_modules_are_noted():
    for module, path in sorted(MODULES.items()):
        with open(path) as f:
            lines = sum(1 for _ in f)
        if lines > MODULE_LINES_NOTE:
            warnings.warn(LargeModule(f'{module} has {lines} lines (over {MODULE_LINES_NOTE}): does it hold more '
                                      f'than one idea?'), stacklevel=1)


# A config is data (a nested dict): filling in its missing values is not reaching into another object's state.
CONFIG_FILLERS = ('complete_league_config(cfg)',)


def fields_assigned_through_first_argument(path: str) -> List[str]:
    """Module-level functions that assign a field of the object they take first (``def f(obj): obj.x = ...``)."""
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    found = []
    for node in tree.body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or not node.args.args:
            continue
        first = node.args.args[0].arg
        for inner in ast.walk(node):
            targets = inner.targets if isinstance(inner, ast.Assign) else \
                [inner.target] if isinstance(inner, (ast.AugAssign, ast.AnnAssign)) else []
            if any(isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == first
                   for t in targets):
                found.append(f'{node.name}({first}) assigns {first}.<field> (line {inner.lineno})')
                break
    return found


def test_no_function_assigns_the_fields_of_the_object_it_is_given():
    """A part of a class is an object with its own state that the class owns and calls, not a module of functions
    that take the class's object and assign its fields (the state stays shared, only harder to find)."""
    found = [f'{m}: {what}' for m, p in sorted(MODULES.items()) if m.startswith('sparring.framework.')
             for what in fields_assigned_through_first_argument(p) if not what.startswith(CONFIG_FILLERS)]
    assert not found, 'functions that assign the fields of their first argument:\n' + '\n'.join(found)
