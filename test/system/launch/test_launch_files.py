# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
What the launch files, the parameter files and the rviz configuration name exists.

Without importing ``launch`` (so these run on any prefix; test_launch_testing.py runs the
launch files with the real launch_testing): the launch files are read as Python syntax trees.
Every executable they start is a console script of setup.py, every parameter they set and every
value of the parameter files is one parameters.py declares for that executable (and valid),
every file they refer to is in the tree and installed by setup.py's data_files, and every topic
the rviz configuration shows is a topic of the contract. Then each launch file
runs against stand-ins of ``launch`` and ``launch_ros`` to check what its arguments make.
"""

import ast
from collections.abc import Iterator
import glob
import os
from pathlib import Path
import re
import sys
import types
from typing import Any

import pytest
from support.paths import ROOT
import yaml

LAUNCH_FILES = sorted((ROOT / 'launch').glob('*.launch.py'))
PACKAGE = 'acres_bridge'

# Which node each parameter file configures.
CONFIG_NODES = {
    'polaris.yaml': 'sensor_bridge',
    'maxxum.yaml': 'sensor_bridge',
    'acres_session.yaml': 'acres_bridge',
}
# Parameters every rclpy node has.
BUILTIN_PARAMETERS = {'use_sim_time'}
# The contract's topics: relative to an agent's namespace, and absolute.
AGENT_TOPICS = {
    'lidar/points', 'camera/image_raw', 'camera/camera_info', 'ins/fix', 'ins/imu',
    'ins/odometry', 'ground_truth/odometry', 'step_barrier',
}
SESSION_TOPICS = {'/clock', '/tf', '/tf_static', '/diagnostics', '/acres/episode'}
AGENTS = ('polaris', 'maxxum')
# The bridge's executables: one of them at most per launch file.
BRIDGE_EXECUTABLES = ('sensor_bridge', 'sim_control', 'acres_bridge')


def _setup_call() -> dict[str, Any]:
    """Run setup.py with a stand-in for setuptools and return the keywords of setup()."""
    captured: dict[str, Any] = {}
    fake = types.ModuleType('setuptools')
    fake.setup = lambda **keywords: captured.update(keywords)
    fake.find_packages = lambda *args, **keywords: []
    saved_module, saved_cwd = sys.modules.get('setuptools'), os.getcwd()
    sys.modules['setuptools'] = fake
    try:
        os.chdir(ROOT)
        source = (ROOT / 'setup.py').read_text()
        exec(compile(source, str(ROOT / 'setup.py'), 'exec'), {'__name__': '__main__'})
    finally:
        os.chdir(saved_cwd)
        if saved_module is None:
            del sys.modules['setuptools']
        else:
            sys.modules['setuptools'] = saved_module
    return captured


SETUP = _setup_call()
CONSOLE_SCRIPTS = {
    line.split('=')[0].strip(): line.split('=')[1].strip()
    for line in SETUP['entry_points']['console_scripts']}
INSTALLED = {str((ROOT / source).resolve()) for _, sources in SETUP['data_files']
             for source in sources}


def _parameters_module() -> types.SimpleNamespace:
    """Return the node parameter sets, each beside its node (a missing one fails the test)."""
    from acres_bridge.control import parameters as control
    from acres_bridge.sensors import parameters as sensors
    from acres_bridge.session import parameters as session
    return types.SimpleNamespace(
        SENSOR_BRIDGE_PARAMETERS=sensors.SENSOR_BRIDGE_PARAMETERS,
        SIM_CONTROL_PARAMETERS=control.SIM_CONTROL_PARAMETERS,
        BRIDGE_PARAMETERS=session.BRIDGE_PARAMETERS,
        sensor_bridge_parameters_from_values=sensors.sensor_bridge_parameters_from_values,
        bridge_parameters_from_values=session.bridge_parameters_from_values)


def _recorder_parameters_module() -> types.ModuleType:
    from acres_bridge.recording import parameters as recorder_parameters
    return recorder_parameters


def _declared(executable: str) -> set[str]:
    """Return the parameters that nodes/ declares for a node executable."""
    if executable == 'lidar_recorder':
        specs = _recorder_parameters_module().LIDAR_RECORDER_PARAMETERS
    else:
        parameters = _parameters_module()
        specs = {'sensor_bridge': parameters.SENSOR_BRIDGE_PARAMETERS,
                 'sim_control': parameters.SIM_CONTROL_PARAMETERS,
                 'acres_bridge': parameters.BRIDGE_PARAMETERS}[executable]
    return {spec.name for spec in specs}


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


def _calls(tree: ast.AST, name: str) -> Iterator[ast.Call]:
    """Yield the calls of a function or class by its plain name (Node, ExecutableInPackage)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            called = func.id if isinstance(func, ast.Name) else getattr(func, 'attr', None)
            if called == name:
                yield node


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((item.value for item in call.keywords if item.arg == name), None)


def _string(node: ast.expr | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _module_constants(tree: ast.Module) -> dict[str, Any]:
    """Return the module-level NAME = <literal> assignments that are plain literals."""
    constants = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(
                node.targets[0], ast.Name):
            try:
                constants[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                pass
    return constants


def _arguments(tree: ast.Module) -> dict[str, Any]:
    """Return the launch arguments of the ARGUMENTS-like tuples: name -> default (or None)."""
    declared = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name) and (
                node.targets[0].id.endswith('ARGUMENTS')):
            for item in node.value.elts:
                declared[_string(item.elts[0])] = _string(item.elts[1])
    return declared


def _ros_nodes(tree: ast.Module) -> list[tuple[str, str]]:
    """Return (package, executable) of every launch_ros Node with literal names."""
    nodes = []
    for call in _calls(tree, 'Node'):
        package = _keyword(call, 'package')
        package = _string(package) or (
            _module_constants(tree).get(package.id) if isinstance(package, ast.Name) else None)
        nodes.append((package, _string(_keyword(call, 'executable'))))
    return nodes


def _set_parameters(tree: ast.Module) -> set[str]:
    """Return every parameter name the file sets: `*_parameters` dicts, `overrides[...]`."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            target = node.targets[0]
            if isinstance(target, ast.Name) and target.id.endswith('_parameters') and (
                    isinstance(node.value, ast.Dict)):
                names.update(_string(key) for key in node.value.keys)
            if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) and (
                    target.value.id == 'overrides'):
                names.add(_string(target.slice))
    for call in _calls(tree, 'Node'):
        parameters = _keyword(call, 'parameters')
        for node in ast.walk(parameters) if parameters is not None else ():
            if isinstance(node, ast.Dict):
                names.update(_string(key) for key in node.keys)
    assert None not in names, 'a parameter name that is not a string literal'
    return names


def _referenced_files(tree: ast.Module) -> set[str]:
    return {node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and node.value.endswith(('.yaml', '.rviz', '.xml', '.launch.py'))
            and ' ' not in node.value and not node.value.startswith('.')}


def _ros_parameters(path: Path) -> dict[str, Any]:
    document = yaml.safe_load(path.read_text())
    assert list(document) == ['/**'], f'{path.name}: parameters for any node name (/**)'
    return document['/**']['ros__parameters']


def test_the_three_launch_files_are_there() -> None:
    assert {path.name for path in LAUNCH_FILES} == {
        'sensor_bridge.launch.py', 'acres_session.launch.py', 'emulator_session.launch.py'}


@pytest.mark.parametrize('path', LAUNCH_FILES, ids=lambda path: path.name)
def test_launch_file_is_installed_and_has_generate_launch_description(path: Path) -> None:
    tree = _tree(path)
    assert str(path.resolve()) in INSTALLED
    functions = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    assert 'generate_launch_description' in functions


@pytest.mark.parametrize('path', LAUNCH_FILES, ids=lambda path: path.name)
def test_every_executable_a_launch_file_starts_is_a_console_script(path: Path) -> None:
    tree = _tree(path)
    executables = []
    for package, executable in _ros_nodes(tree):
        assert executable, 'a Node without a literal executable'
        if package == PACKAGE:
            executables.append(executable)
        else:
            assert (package, executable) == ('rviz2', 'rviz2')
    for call in _calls(tree, 'ExecutableInPackage'):
        if _string(call.args[0]) is not None:    # not the lookup of require_executables()
            executables.append(_string(call.args[0]))
    assert executables
    for executable in executables:
        assert executable in CONSOLE_SCRIPTS, f'{executable} is not a console script'


@pytest.mark.parametrize('path', LAUNCH_FILES, ids=lambda path: path.name)
def test_every_parameter_a_launch_file_sets_is_declared_by_its_node(path: Path) -> None:
    tree = _tree(path)
    ours = [executable for package, executable in _ros_nodes(tree)
            if package == PACKAGE and executable in BRIDGE_EXECUTABLES]
    assert len(ours) <= 1, 'one bridge node per launch file keeps this test simple'
    names = _set_parameters(tree)
    if not ours:
        assert names <= BUILTIN_PARAMETERS
        return
    undeclared = names - _declared(ours[0]) - BUILTIN_PARAMETERS
    assert not undeclared, f'{ours[0]} does not declare {sorted(undeclared)}'


@pytest.mark.parametrize('path', LAUNCH_FILES, ids=lambda path: path.name)
def test_every_file_a_launch_file_names_exists_and_is_installed(path: Path) -> None:
    for name in _referenced_files(_tree(path)):
        folder = 'launch' if name.endswith('.launch.py') else 'config'
        target = ROOT / folder / name
        assert target.is_file(), f'{path.name} names {name}, missing in {folder}/'
        assert str(target.resolve()) in INSTALLED, f'{folder}/{name} is not installed'


def test_the_default_vehicle_of_the_sensor_bridge_launch_has_a_parameter_file() -> None:
    arguments = _arguments(_tree(ROOT / 'launch' / 'sensor_bridge.launch.py'))
    assert (ROOT / 'config' / f'{arguments["namespace"]}.yaml').is_file()
    for agent in AGENTS:
        assert (ROOT / 'config' / f'{agent}.yaml').is_file()


def test_the_emulator_launch_passes_only_arguments_the_session_launch_declares() -> None:
    emulator_tree = _tree(ROOT / 'launch' / 'emulator_session.launch.py')
    session = _arguments(_tree(ROOT / 'launch' / 'acres_session.launch.py'))
    passed = {item[0] for item in _module_constants(emulator_tree)['SESSION_ARGUMENTS']}
    passed |= {'port', 'sensor_ports'}
    assert passed <= set(session), sorted(passed - set(session))


def test_the_emulator_launch_uses_options_the_emulator_accepts() -> None:
    from acres_bridge.emulator import server
    tree = _tree(ROOT / 'launch' / 'emulator_session.launch.py')
    options = {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant)
               and isinstance(node.value, str) and node.value.startswith('--')}
    assert options >= {'--control-port', '--vehicles', '--mode', '--lockstep'}
    accepted = {option for action in server._parser()._actions
                for option in action.option_strings}
    assert options <= accepted, sorted(options - accepted)


def test_the_session_launch_sets_the_dds_profile_variables() -> None:
    tree = _tree(ROOT / 'launch' / 'acres_session.launch.py')
    variables = {_string(call.args[0]) for call in _calls(tree, 'SetEnvironmentVariable')}
    assert {'FASTRTPS_DEFAULT_PROFILES_FILE', 'FASTDDS_DEFAULT_PROFILES_FILE'} <= variables
    assert {'dds_profile', 'rviz', 'use_sim_time', 'namespace', 'port',
            'sensor_ports'} <= set(_arguments(tree))


def test_every_config_file_is_installed() -> None:
    for path in (ROOT / 'config').iterdir():
        if path.suffix in ('.yaml', '.xml', '.rviz'):
            assert str(path.resolve()) in INSTALLED, f'config/{path.name} is not installed'
    assert set(glob.glob(str(ROOT / 'config' / '*.yaml'))) == {
        str(ROOT / 'config' / name) for name in CONFIG_NODES}


@pytest.mark.parametrize('name', sorted(CONFIG_NODES))
def test_parameter_file_sets_only_declared_parameters_with_valid_values(name: str) -> None:
    node = CONFIG_NODES[name]
    values = _ros_parameters(ROOT / 'config' / name)
    undeclared = set(values) - _declared(node) - BUILTIN_PARAMETERS
    assert not undeclared, f'{name}: {node} does not declare {sorted(undeclared)}'
    parameters = _parameters_module()
    check = {'sensor_bridge': parameters.sensor_bridge_parameters_from_values,
             'acres_bridge': parameters.bridge_parameters_from_values}[node]
    settings = check({key: value for key, value in values.items()
                      if key not in BUILTIN_PARAMETERS})
    if node == 'sensor_bridge':
        agent = name.removesuffix('.yaml')
        assert settings.frame_prefix.strip('/') == agent


def test_only_the_first_agent_publishes_the_clock() -> None:
    assert _ros_parameters(ROOT / 'config' / 'polaris.yaml')['publish_clock'] is True
    assert _ros_parameters(ROOT / 'config' / 'maxxum.yaml')['publish_clock'] is False


def _rviz_topics(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == 'Topic':
                yield value['Value'] if isinstance(value, dict) else value
            else:
                yield from _rviz_topics(value)
    elif isinstance(node, list):
        for item in node:
            yield from _rviz_topics(item)


def test_every_topic_of_the_rviz_config_is_a_contract_topic() -> None:
    document = yaml.safe_load((ROOT / 'config' / 'acres.rviz').read_text())
    topics = list(_rviz_topics(document))
    assert '/polaris/lidar/points' in topics and '/polaris/camera/image_raw' in topics
    contract = SESSION_TOPICS | {f'/{agent}/{topic}' for agent in AGENTS
                                 for topic in AGENT_TOPICS}
    assert set(topics) <= contract, sorted(set(topics) - contract)


def test_the_rviz_config_shows_the_cloud_image_tf_and_odometry_in_a_known_frame() -> None:
    manager = yaml.safe_load((ROOT / 'config' / 'acres.rviz').read_text())[
        'Visualization Manager']
    classes = {display['Class'] for display in manager['Displays']}
    assert {'rviz_default_plugins/PointCloud2', 'rviz_default_plugins/Image',
            'rviz_default_plugins/TF', 'rviz_default_plugins/Odometry'} <= classes
    assert manager['Global Options']['Fixed Frame'] in ('world', 'polaris/base_footprint')
    # The fixed frame world needs world -> polaris/base_footprint on /tf.
    assert _ros_parameters(ROOT / 'config' / 'polaris.yaml')['publish_tf'] in ('ins', 'truth')


def test_the_demo_sets_only_parameters_its_nodes_declare() -> None:
    source = (ROOT / 'tools' / 'demo.py').read_text()
    names = set(re.findall(r"'-p', f?'(\w+):=", source))
    assert {'port', 'sensor_ports', 'frame_prefix', 'publish_clock', 'publish_tf'} <= names
    declared = set().union(*(_declared(executable) for executable in (
        *BRIDGE_EXECUTABLES, 'lidar_recorder')))
    declared.add('use_sim_time')        # rclpy's own, on every node (the demo's foxglove_view)
    assert names <= declared, sorted(names - declared)


# --- the launch files run against stand-ins of launch and launch_ros -----------------------------
#
# The syntax checks above cannot see what the launch logic computes from the arguments. These
# tests run generate_launch_description() and its OpaqueFunction with small stand-ins that
# record what they are given (FindPackageShare answers this source tree), then check the node
# each launch would start with the parameters a node would read.


class _Recorded:
    """A stand-in action or substitution: remembers its arguments."""

    def __init__(self, *args: Any, **keywords: Any) -> None:
        self.args = args
        self.keywords = keywords


class _Context:
    def __init__(self, configurations: dict[str, str]) -> None:
        self.launch_configurations = configurations


def _perform(value: Any, context: _Context) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        return ''.join(_perform(item, context) for item in value)
    return value.perform(context)


class _LaunchConfiguration(_Recorded):
    def perform(self, context: _Context) -> str:
        return _perform(context.launch_configurations[self.args[0]], context)


class _PathJoinSubstitution(_Recorded):
    def perform(self, context: _Context) -> str:
        return os.path.join(*(_perform(part, context) for part in self.args[0]))


class _FindPackageShare(_Recorded):
    def perform(self, context: _Context) -> str:
        assert self.args[0] == PACKAGE
        return str(ROOT)


class _ExecutableInPackage(_Recorded):
    missing: set[str] = set()       # the packages a test pretends are not installed

    def perform(self, context: _Context) -> str:
        executable, package = (_perform(part, context) for part in self.args)
        if package in self.missing:
            raise LookupError(f"package '{package}' not found")
        return f'<{package}/{executable}>'


def _load_launch_file(path: Any) -> types.ModuleType:
    """Stand in for launch's load_python_launch_file_as_module (with the stand-ins loaded)."""
    module = types.ModuleType(Path(path).name)
    exec(compile(Path(path).read_text(), str(path), 'exec'), module.__dict__)
    return module


def _stand_ins() -> dict[str, types.ModuleType]:
    names = {
        'launch': {'LaunchContext': _Context, 'LaunchDescription': _Recorded},
        'launch.actions': {name: type(name, (_Recorded,), {}) for name in (
            'DeclareLaunchArgument', 'OpaqueFunction', 'SetEnvironmentVariable',
            'ExecuteProcess', 'IncludeLaunchDescription')},
        'launch.substitutions': {'LaunchConfiguration': _LaunchConfiguration,
                                 'PathJoinSubstitution': _PathJoinSubstitution},
        'launch.launch_description_sources': {
            'PythonLaunchDescriptionSource': type('PythonLaunchDescriptionSource',
                                                  (_Recorded,), {}),
            'load_python_launch_file_as_module': _load_launch_file},
        'launch_ros': {},
        'launch_ros.actions': {'Node': type('Node', (_Recorded,), {})},
        'launch_ros.substitutions': {'FindPackageShare': _FindPackageShare,
                                     'ExecutableInPackage': _ExecutableInPackage},
    }
    modules = {}
    for name, attributes in names.items():
        module = types.ModuleType(name)
        module.__dict__.update(attributes)
        modules[name] = module
    return modules


def _run_launch(name: str, arguments: dict[str, str], monkeypatch: pytest.MonkeyPatch,
                missing: frozenset[str] = frozenset()) -> list[_Recorded]:
    """Return the actions a launch file's OpaqueFunction makes for the given arguments."""
    monkeypatch.setattr(_ExecutableInPackage, 'missing', set(missing))
    for module_name, module in _stand_ins().items():
        monkeypatch.setitem(sys.modules, module_name, module)
    namespace: dict[str, Any] = {'__name__': name}
    path = ROOT / 'launch' / name
    exec(compile(path.read_text(), str(path), 'exec'), namespace)
    description = namespace['generate_launch_description']()
    entities = description.args[0]
    configurations = {}
    for entity in entities:
        if type(entity).__name__ == 'DeclareLaunchArgument':
            configurations[entity.args[0]] = entity.keywords['default_value']
    unknown = set(arguments) - set(configurations)
    assert not unknown, f'{name} does not declare {sorted(unknown)}'
    configurations.update(arguments)
    opaque = [entity for entity in entities if type(entity).__name__ == 'OpaqueFunction']
    assert len(opaque) == 1
    return opaque[0].keywords['function'](_Context(configurations))


def _node_settings(node: _Recorded) -> dict[str, Any]:
    """Return the parameters a node started by this action would read (file, then dicts)."""
    values: dict[str, Any] = {}
    for item in node.keywords['parameters']:
        if isinstance(item, str):
            values.update(_ros_parameters(Path(item)))
        else:
            values.update(item)
    return values


def _of_type(actions: list[_Recorded], name: str) -> list[_Recorded]:
    return [action for action in actions if type(action).__name__ == name]


def test_sensor_bridge_launch_defaults_to_the_polaris_file(
        monkeypatch: pytest.MonkeyPatch) -> None:
    [node] = _run_launch('sensor_bridge.launch.py', {}, monkeypatch)
    assert (node.keywords['executable'], node.keywords['namespace']) == (
        'sensor_bridge', 'polaris')
    settings = _node_settings(node)
    assert settings['use_sim_time'] is False
    parameters = _parameters_module()
    bridge = parameters.sensor_bridge_parameters_from_values(
        {key: value for key, value in settings.items() if key not in BUILTIN_PARAMETERS})
    assert (bridge.port, bridge.publish_clock) == (5601, True)


def test_sensor_bridge_launch_arguments_override_the_file_with_typed_values(
        monkeypatch: pytest.MonkeyPatch) -> None:
    [node] = _run_launch('sensor_bridge.launch.py', {
        'namespace': 'maxxum', 'port': '5611', 'publish_tf': 'truth', 'use_sim_time': 'true'},
        monkeypatch)
    settings = _node_settings(node)
    assert node.keywords['parameters'][0] == str(ROOT / 'config' / 'maxxum.yaml')
    assert (settings['port'], settings['publish_tf'], settings['publish_clock']) == (
        5611, 'truth', False)
    assert settings['use_sim_time'] is True
    assert node.keywords['namespace'] == 'maxxum'


@pytest.mark.parametrize('launch_file', ['sensor_bridge.launch.py', 'acres_session.launch.py'])
def test_point_fields_and_compressed_reach_the_bridges_parameters(
        launch_file: str, monkeypatch: pytest.MonkeyPatch) -> None:
    nodes = _of_type(_run_launch(launch_file, {'point_fields': 'autoware', 'compressed': 'png'},
                                 monkeypatch), 'Node')
    settings = _node_settings(nodes[0])
    assert (settings['point_fields'], settings['compressed.format']) == ('autoware', 'png')
    parameters = _parameters_module()
    values = {key: value for key, value in settings.items() if key not in BUILTIN_PARAMETERS}
    bridge = (parameters.sensor_bridge_parameters_from_values(values)
              if launch_file == 'sensor_bridge.launch.py'
              else parameters.bridge_parameters_from_values(values))
    assert (bridge.point_fields, bridge.point_time_origin, bridge.compressed_format) == (
        'autoware', 'start', 'png')


def test_session_launch_starts_acres_bridge_only_by_default(
        monkeypatch: pytest.MonkeyPatch) -> None:
    actions = _run_launch('acres_session.launch.py', {}, monkeypatch)
    [node] = _of_type(actions, 'Node')
    assert node.keywords['executable'] == 'acres_bridge'
    # name= would become -r __node:=NAME and give both nodes of the process one name.
    assert 'name' not in node.keywords
    assert not _of_type(actions, 'SetEnvironmentVariable')
    settings = _node_settings(node)
    assert 'use_sim_time' not in settings       # the bridge keeps the system clock
    parameters = _parameters_module()
    session = parameters.bridge_parameters_from_values(
        {key: value for key, value in settings.items() if key not in BUILTIN_PARAMETERS})
    assert (session.port, session.sensor_ports, session.publish_tf,
            session.sensor_processes) == (5600, (), 'ins', 'auto')


def test_session_launch_ports_profile_and_rviz(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv('ROS_DISTRO', 'humble')
    profile = str(ROOT / 'config' / 'fastdds_large_data.xml')
    actions = _run_launch('acres_session.launch.py', {
        'port': '5700', 'sensor_ports': '5701, 5702', 'dds_profile': profile,
        'rviz': 'true', 'use_sim_time': 'true', 'sensor_processes': 'per_agent'}, monkeypatch)
    bridge, rviz = _of_type(actions, 'Node')
    settings = _node_settings(bridge)
    assert (settings['port'], settings['sensor_ports'], settings['sensor_processes']) == (
        5700, [5701, 5702], 'per_agent')
    environment = {action.args[0]: action.args[1]
                   for action in _of_type(actions, 'SetEnvironmentVariable')}
    assert environment['FASTDDS_DEFAULT_PROFILES_FILE'] == profile
    assert environment['FASTRTPS_DEFAULT_PROFILES_FILE'] == profile     # Fast DDS 2 reads it
    assert actions.index(_of_type(actions, 'SetEnvironmentVariable')[0]) < actions.index(bridge)
    assert rviz.keywords['arguments'] == ['-d', str(ROOT / 'config' / 'acres.rviz')]
    assert rviz.keywords['parameters'] == [{'use_sim_time': True}]


def test_emulator_launch_starts_the_emulator_and_includes_the_session(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from acres_bridge.emulator import server
    actions = _run_launch('emulator_session.launch.py', {
        'vehicles': 'polaris,maxxum', 'lockstep': 'true', 'port': '5700',
        'sensor_ports': '5701,5702', 'rviz': 'true'}, monkeypatch)
    [emulator] = _of_type(actions, 'ExecuteProcess')
    [include] = _of_type(actions, 'IncludeLaunchDescription')
    command = [_perform(part, _Context({})) for part in emulator.keywords['cmd']]
    assert command[0] == f'<{PACKAGE}/acres_sim_emulator>'
    options = server._parser().parse_args(command[1:])
    assert (options.control_port, options.sensor_ports, options.lockstep) == (
        5700, [5701, 5702], True)
    assert options.vehicles == 'polaris,maxxum'
    passed = dict(include.keywords['launch_arguments'])
    assert (passed['port'], passed['sensor_ports'], passed['rviz']) == ('5700', '5701,5702',
                                                                        'true')
    source = include.args[0]
    assert _perform(source.args[0], _Context({})) == str(
        ROOT / 'launch' / 'acres_session.launch.py')


def test_session_launch_clients_follow_the_clock_by_default(
        monkeypatch: pytest.MonkeyPatch) -> None:
    actions = _run_launch('acres_session.launch.py', {'rviz': 'true'}, monkeypatch)
    bridge, rviz = _of_type(actions, 'Node')
    assert rviz.keywords['parameters'] == [{'use_sim_time': True}]
    assert 'use_sim_time' not in _node_settings(bridge)


@pytest.mark.parametrize('name', ['acres_session.launch.py', 'emulator_session.launch.py'])
def test_rviz_without_rviz2_fails_before_anything_starts(
        name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(RuntimeError, match=r'rviz:=true needs the executable rviz2 .*'
                       r"package 'rviz2' not found"):
        _run_launch(name, {'rviz': 'true'}, monkeypatch, missing=frozenset({'rviz2'}))
    # Without rviz the missing package does not matter.
    assert _run_launch(name, {}, monkeypatch, missing=frozenset({'rviz2'}))


def test_session_launch_records_each_agent_under_its_namespace(
        monkeypatch: pytest.MonkeyPatch) -> None:
    actions = _run_launch('acres_session.launch.py', {
        'record_dataset': 'true', 'dataset_agents': 'polaris, maxxum', 'dataset_set': 'field_a',
        'dataset_sequence': 'run1', 'dataset_split': 'val', 'namespace': 'farm'}, monkeypatch)
    bridge, *recorders = _of_type(actions, 'Node')
    assert bridge.keywords['executable'] == 'acres_bridge'
    assert [(node.keywords['executable'], node.keywords['namespace'], node.keywords['name'])
            for node in recorders] == [('lidar_recorder', 'farm/polaris', 'lidar_recorder'),
                                       ('lidar_recorder', 'farm/maxxum', 'lidar_recorder')]
    settings = [_node_settings(node) for node in recorders]
    assert [item['sequence'] for item in settings] == ['run1-polaris', 'run1-maxxum']
    for item in settings:
        assert set(item) - BUILTIN_PARAMETERS <= _declared('lidar_recorder')
        assert (item['set'], item['split'], item['use_sim_time']) == ('field_a', 'val', True)
        _recorder_parameters_module().lidar_recorder_parameters_from_values(
            {key: value for key, value in item.items() if key not in BUILTIN_PARAMETERS})


def test_session_launch_records_nothing_by_default_and_leaves_the_recorder_its_defaults(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert len(_of_type(_run_launch('acres_session.launch.py', {}, monkeypatch), 'Node')) == 1
    actions = _run_launch('acres_session.launch.py', {'record_dataset': 'true'}, monkeypatch)
    [recorder] = _of_type(actions, 'Node')[1:]
    settings = _node_settings(recorder)
    assert recorder.keywords['namespace'] == 'polaris'
    # The recorder names the sequence (start time and agent), the set and the split itself.
    assert settings == {'use_sim_time': True}
    with pytest.raises(RuntimeError, match='record_dataset:=true needs the executable '
                       'lidar_recorder'):
        _run_launch('acres_session.launch.py', {'record_dataset': 'true'}, monkeypatch,
                    missing=frozenset({PACKAGE}))


def test_emulator_launch_records_every_vehicle(monkeypatch: pytest.MonkeyPatch) -> None:
    actions = _run_launch('emulator_session.launch.py', {
        'vehicles': 'polaris,maxxum', 'record_dataset': 'true', 'dataset_set': 'emu'},
        monkeypatch)
    [include] = _of_type(actions, 'IncludeLaunchDescription')
    passed = dict(include.keywords['launch_arguments'])
    assert (passed['dataset_agents'], passed['record_dataset'], passed['dataset_set']) == (
        'polaris,maxxum', 'true', 'emu')
    assert passed['use_sim_time'] == 'true'


@pytest.mark.parametrize('launch_file', ['acres_session.launch.py', 'sensor_bridge.launch.py'])
def test_view_foxglove_starts_the_view_on_simulation_time(
        launch_file: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from acres_bridge.foxglove.parameters import foxglove_view_parameters_from_values
    actions = _run_launch(launch_file, {'view': 'foxglove', 'view_port': '8790'}, monkeypatch)
    views = [node for node in _of_type(actions, 'Node')
             if node.keywords['executable'] == 'foxglove_view']
    assert len(views) == 1
    settings = _node_settings(views[0])
    assert settings.pop('use_sim_time') is True
    assert foxglove_view_parameters_from_values(settings).port == 8790
    assert not [node for node in _of_type(_run_launch(launch_file, {}, monkeypatch), 'Node')
                if node.keywords['executable'] == 'foxglove_view']


@pytest.mark.parametrize('launch_file', ['acres_session.launch.py', 'sensor_bridge.launch.py'])
def test_an_unknown_view_stops_the_launch(launch_file: str,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(RuntimeError, match='view:=rviz3 is not one of none, foxglove'):
        _run_launch(launch_file, {'view': 'rviz3'}, monkeypatch)
