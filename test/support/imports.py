# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""What a Python file imports, read from its syntax tree (nothing runs): for the static checks."""

import ast
from pathlib import Path


def imported_modules(path: Path) -> set[str]:
    """Return the top-level modules a file imports by absolute name (``a.b`` gives ``a``)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding='utf-8'), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name.partition('.')[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.partition('.')[0])
    return names
