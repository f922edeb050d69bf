# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""The scripts of tools/, imported as modules for their tests (tools/ is not a package)."""

import importlib.util
import os
import sys
from types import ModuleType

TOOLS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), 'tools')


def load_tool(name: str) -> ModuleType:
    """Import ``tools/<name>.py`` as the module ``acres_<name>`` (once per test process)."""
    module_name = f'acres_{name}'
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name,
                                                  os.path.join(TOOLS, f'{name}.py'))
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module
