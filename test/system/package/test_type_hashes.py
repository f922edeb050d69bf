# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The interface packages the set-up builds have the type hashes of the real releases.

simulation_interfaces (tools/interfaces/simulation_interfaces-1 and -2), tf2_msgs and
composition_interfaces (tools/interfaces/) are our own definitions of packages PyPI lacks.
Clients of a ROS distribution only talk to us if every type hash (RIHS01) equals the release's,
so the expectations below were computed from the upstream releases (simulation_interfaces
1.6.1, which Jazzy's 1.5.1 equals, and 2.1.0; tf2_msgs and composition_interfaces of Kilted)
with the Kilted rosidl generators; a Jazzy prefix's builds must give the same. Type hashes
leave out default values and constants, which clients also rely on, so those are checked too.
acres_interfaces has no upstream: its hashes are recorded so that a change of the interface is
a deliberate one (update ACRES_INTERFACES with python -m acres_devkit.type_hashes).

The packages are read where the set-up installed them: the prefixes of AMENT_PREFIX_PATH (else
this interpreter's prefix) for tf2_msgs, composition_interfaces, acres_interfaces and
simulation_interfaces of either shape, and ACRES_SIMIF2_PREFIX for a second prefix holding the
2.x shape.
"""

import functools
import os
from pathlib import Path
import xml.etree.ElementTree as ElementTree

import pytest

from acres_devkit import type_hashes
from acres_devkit.environment import claim_domain_id

SIMIF2_PREFIX_VARIABLE = 'ACRES_SIMIF2_PREFIX'


# simulation_interfaces 1.6.1 (Kilted) and 1.5.1 (Jazzy); the action's feedback topic type too.
SIMULATION_INTERFACES_1 = {
    'simulation_interfaces/action/SimulateSteps':
        'RIHS01_f0837c898e1219cd73bf4c041feab41e8c533e8e1057e982744dba7b093467eb',
    'simulation_interfaces/action/SimulateSteps_FeedbackMessage':
        'RIHS01_a30dee7ee7380769e616406ec5067b238aa2b27e1dbd7a5957fba1d908d7754d',
    'simulation_interfaces/msg/Bounds':
        'RIHS01_e8624fe51f0f5548197542697d924c5699ac7198f1e4c68e50c3ca2af73f5b3f',
    'simulation_interfaces/msg/EntityCategory':
        'RIHS01_43bdf7933fddf75f6970f7a8fe7078524355d821d390b3954bb46ac36c03dfe1',
    'simulation_interfaces/msg/EntityFilters':
        'RIHS01_8e7b12e8ea062f14c55de4877221fe1b7cd9749665a7ad8a4ab855fc4b148303',
    'simulation_interfaces/msg/EntityInfo':
        'RIHS01_3b9a2e7fa00f9a59d325b6e47904044c421561a385682027c7fc06c359806319',
    'simulation_interfaces/msg/EntityState':
        'RIHS01_2e0464a85eb80a939025075d6c20761eca6a4cb9d6baf2c0ba373467c8b598d0',
    'simulation_interfaces/msg/NamedPose':
        'RIHS01_b32da2a039b1840f605ec025b7991a18efacac662fac272818d1ae6e2b12bc27',
    'simulation_interfaces/msg/Resource':
        'RIHS01_2bb1939cf80f8d2f284afba53cbec60b5ff33759bd39b714128ea8867a34c51a',
    'simulation_interfaces/msg/Result':
        'RIHS01_cf43a306adff3337a0a47143d8f5689933bc70a30478f13b077dc1fe3bc5ad17',
    'simulation_interfaces/msg/SimulationState':
        'RIHS01_bb9f87ccdd98fba113052a512d9801e84ce732d0a2b3c2b0cb281828de36e415',
    'simulation_interfaces/msg/SimulatorFeatures':
        'RIHS01_8b101c8529bc0ea3dcf056078254768f39832b9ef0adaf93bd5cea96c0de3305',
    'simulation_interfaces/msg/SpawnEntity':
        'RIHS01_94a349a865ccf673c18c080520299c88c3d8d5f4842ecf1482d6c997ac4b69f9',
    'simulation_interfaces/msg/SpawnResult':
        'RIHS01_dbc277304b6c24bfb2a631cea8f52e2b005d583ec0a6c86b11613f5ce6486da1',
    'simulation_interfaces/msg/Spawnable':
        'RIHS01_8c22025d840e7a05ab31ba56f998b06458b549a9744b4695be25b778829fc176',
    'simulation_interfaces/msg/TagsFilter':
        'RIHS01_5c3efc51e8ed04c266c09cb4691ec95b964cd410558e01d8c83646b038826b45',
    'simulation_interfaces/msg/WorldResource':
        'RIHS01_e3b65ecf904b9b115673e4a343c6aa3d28c19e185a71228faa64b783afcf2403',
    'simulation_interfaces/srv/DeleteEntity':
        'RIHS01_ff7e96a5b83dc8e2bb34b8b034480028b3a24d9f8376b2c0590bac3704be3e28',
    'simulation_interfaces/srv/GetAvailableWorlds':
        'RIHS01_ce5589b5523f2732d1969a3c5a7e6b17a387091df8190c62f78d7fdd1109e3e3',
    'simulation_interfaces/srv/GetCurrentWorld':
        'RIHS01_79ed4e910e1b7a1c9f7950ff758bfba3535bf0dec669054e8af115a099724ddd',
    'simulation_interfaces/srv/GetEntities':
        'RIHS01_cb90004c48cd50f37732fb008e22c34c261dd680a723bf0f85d8437ea4498bf7',
    'simulation_interfaces/srv/GetEntitiesStates':
        'RIHS01_0a76170d0c1c90e1eaf805cfab78ea801d1f82df309a28c1f0fae4b570f19754',
    'simulation_interfaces/srv/GetEntityBounds':
        'RIHS01_17be8d36231178a5eed0de0344b55c19975581627a9aec30a4fee9926a35deed',
    'simulation_interfaces/srv/GetEntityInfo':
        'RIHS01_953b7ab6bfc35063f5c9a72463c6ce489baa10249a7fa510926d342a34b0d29e',
    'simulation_interfaces/srv/GetEntityState':
        'RIHS01_749c91f2a2353d98367b64f2995a0f5842ce92a08ec1ffb3e185540a91557fb5',
    'simulation_interfaces/srv/GetNamedPoseBounds':
        'RIHS01_59fa8dd2c68ba6771160cc66a628ac99fa95e2748fa0a43c2cc62a2e5f3f6fdc',
    'simulation_interfaces/srv/GetNamedPoses':
        'RIHS01_c3d12ab920115bfd4733f6d20516adc3968fb438538540997c37e200e02b04e3',
    'simulation_interfaces/srv/GetSimulationState':
        'RIHS01_3362dcebee4b1afebbf9c4beee5c79c1455385aded62092a892d61fde8644f30',
    'simulation_interfaces/srv/GetSimulatorFeatures':
        'RIHS01_abb9439c8cf196722a469fb6c68b44b484f198c2a1356ac38849a29c2a20a794',
    'simulation_interfaces/srv/GetSpawnables':
        'RIHS01_3bc0266bf8236058ff589c44512e013afe4f295427c39d44cff363d1c956bf36',
    'simulation_interfaces/srv/LoadWorld':
        'RIHS01_f210682338f195f6f06191b46b20ec4992bddf485d33e2cffab2dd15341b4e3e',
    'simulation_interfaces/srv/ResetSimulation':
        'RIHS01_4ce285d7ff9b8ac70dcc95161f32bf54c05a6f4b13427990e41ab40c36c39646',
    'simulation_interfaces/srv/SetEntityInfo':
        'RIHS01_867fe2b6812f3e021859171f9b788560d66bb7079d640030baf6c0bb2dd2631e',
    'simulation_interfaces/srv/SetEntityState':
        'RIHS01_ca210e7d2b66629ae133c8e1edf5246e618106d75c78ed0556c0e7a33c59ee5e',
    'simulation_interfaces/srv/SetSimulationState':
        'RIHS01_a868b916dce49974f637ba252141258c4b07b0c06858b88af560e3eb6bfbcb30',
    'simulation_interfaces/srv/SpawnEntities':
        'RIHS01_41703a359ee032bf4fc230f144f531705ba039a2e97edeae1f7997dd83b04857',
    'simulation_interfaces/srv/SpawnEntity':
        'RIHS01_d4c086345d4194a5fc4c9ae45095736ca4062b5cdac4d06a42dec93d683e03cf',
    'simulation_interfaces/srv/StepSimulation':
        'RIHS01_913fe0653690ce6bf8f09f316e6a626747012e9fca31e26719910d417aa8565c',
    'simulation_interfaces/srv/UnloadWorld':
        'RIHS01_ac7f9a73df1b5b15015d854c5ac552b7726506e22f886c6792804f0b7f88b30b',
}

# simulation_interfaces 2.1.0: resources as a Resource message, SetEntityState's set_* flags.
SIMULATION_INTERFACES_2 = {
    **SIMULATION_INTERFACES_1,
    'simulation_interfaces/msg/Spawnable':
        'RIHS01_8675aa686f0df1ed7874a6ec210fdce1ac1c07f4e49fc26ec7fb6fe729f6772e',
    'simulation_interfaces/srv/GetSpawnables':
        'RIHS01_3e25fd827d8bcbd9db5e36ccb190efa22d6f6313897861268ab923bf091a992a',
    'simulation_interfaces/srv/LoadWorld':
        'RIHS01_87d0ded1bfddb40a74d0bedb963fdd592fbedb14d0057d597850404b73c338af',
    'simulation_interfaces/srv/SetEntityState':
        'RIHS01_fba636c91d38832dbd4f6896ffce54ff98fd9929962b0533546b56ce00f988ac',
    'simulation_interfaces/srv/SpawnEntity':
        'RIHS01_66860313e11009faddbfc8568e5d410d1a11607fe75eeb1308671dc0406fe3a7',
}

SIMULATION_INTERFACES_RELEASES = {
    '1.6.1': SIMULATION_INTERFACES_1,
    '2.1.0': SIMULATION_INTERFACES_2,
}

# The same in both shapes; every constant is a uint8.
SIMULATION_INTERFACES_CONSTANTS = {
    'simulation_interfaces/msg/Bounds': {
        'TYPE_EMPTY': 0, 'TYPE_BOX': 1, 'TYPE_CONVEX_HULL': 2, 'TYPE_SPHERE': 3},
    'simulation_interfaces/msg/EntityCategory': {
        'CATEGORY_OBJECT': 0, 'CATEGORY_ROBOT': 1, 'CATEGORY_HUMAN': 2,
        'CATEGORY_DYNAMIC_OBJECT': 4, 'CATEGORY_STATIC_OBJECT': 5},
    'simulation_interfaces/msg/Result': {
        'RESULT_FEATURE_UNSUPPORTED': 0, 'RESULT_OK': 1, 'RESULT_NOT_FOUND': 2,
        'RESULT_INCORRECT_STATE': 3, 'RESULT_OPERATION_FAILED': 4},
    'simulation_interfaces/msg/SimulationState': {
        'STATE_STOPPED': 0, 'STATE_PLAYING': 1, 'STATE_PAUSED': 2, 'STATE_QUITTING': 3,
        'STATE_NO_WORLD': 4, 'STATE_LOADING_WORLD': 5},
    'simulation_interfaces/msg/SimulatorFeatures': {
        'SPAWNING': 0, 'DELETING': 1, 'NAMED_POSES': 2, 'POSE_BOUNDS': 3, 'ENTITY_TAGS': 4,
        'ENTITY_BOUNDS': 5, 'ENTITY_BOUNDS_BOX': 6, 'ENTITY_BOUNDS_CONVEX': 7,
        'ENTITY_CATEGORIES': 8, 'SPAWNING_RESOURCE_STRING': 9, 'ENTITY_STATE_GETTING': 10,
        'ENTITY_STATE_SETTING': 11, 'ENTITY_INFO_GETTING': 12, 'ENTITY_INFO_SETTING': 13,
        'SPAWNABLES': 14, 'SIMULATION_RESET': 20, 'SIMULATION_RESET_TIME': 21,
        'SIMULATION_RESET_STATE': 22, 'SIMULATION_RESET_SPAWNED': 23,
        'SIMULATION_STATE_GETTING': 24, 'SIMULATION_STATE_SETTING': 25,
        'SIMULATION_STATE_PAUSE': 26, 'STEP_SIMULATION_SINGLE': 31,
        'STEP_SIMULATION_MULTIPLE': 32, 'STEP_SIMULATION_ACTION': 33, 'WORLD_LOADING': 40,
        'WORLD_RESOURCE_STRING': 41, 'WORLD_TAGS': 42, 'WORLD_UNLOADING': 43,
        'WORLD_INFO_GETTING': 44, 'AVAILABLE_WORLDS': 45, 'SPAWNING_ENTITIES': 50},
    'simulation_interfaces/msg/SpawnResult': {
        'NAME_NOT_UNIQUE': 101, 'NAME_INVALID': 102, 'UNSUPPORTED_FORMAT': 103,
        'NO_RESOURCE': 104, 'NAMESPACE_INVALID': 105, 'RESOURCE_PARSE_ERROR': 106,
        'MISSING_ASSETS': 107, 'UNSUPPORTED_ASSETS': 108, 'INVALID_POSE': 109},
    'simulation_interfaces/msg/TagsFilter': {'FILTER_MODE_ANY': 0, 'FILTER_MODE_ALL': 1},
    'simulation_interfaces/srv/GetAvailableWorlds_Response': {'DEFAULT_SOURCES_FAILED': 101},
    'simulation_interfaces/srv/GetCurrentWorld_Response': {'NO_WORLD_LOADED': 101},
    'simulation_interfaces/srv/LoadWorld_Response': {
        'UNSUPPORTED_FORMAT': 101, 'NO_RESOURCE': 102, 'RESOURCE_PARSE_ERROR': 103,
        'MISSING_ASSETS': 104, 'UNSUPPORTED_ASSETS': 105, 'UNSUPPORTED_ELEMENTS': 106},
    'simulation_interfaces/srv/ResetSimulation_Request': {
        'SCOPE_DEFAULT': 0, 'SCOPE_TIME': 1, 'SCOPE_STATE': 2, 'SCOPE_SPAWNED': 4,
        'SCOPE_ALL': 255},
    'simulation_interfaces/srv/SetEntityState_Response': {'INVALID_POSE': 101},
    'simulation_interfaces/srv/SetSimulationState_Response': {
        'ALREADY_IN_TARGET_STATE': 101, 'STATE_TRANSITION_ERROR': 102,
        'INCORRECT_TRANSITION': 103},
    'simulation_interfaces/srv/SpawnEntities_Response': {'ENTITIES_SPAWN_FAILED': 150},
    'simulation_interfaces/srv/SpawnEntity_Response': {
        'NAME_NOT_UNIQUE': 101, 'NAME_INVALID': 102, 'UNSUPPORTED_FORMAT': 103,
        'NO_RESOURCE': 104, 'NAMESPACE_INVALID': 105, 'RESOURCE_PARSE_ERROR': 106,
        'MISSING_ASSETS': 107, 'UNSUPPORTED_ASSETS': 108, 'INVALID_POSE': 109},
    'simulation_interfaces/srv/UnloadWorld_Response': {'NO_WORLD_LOADED': 101},
}
SIMULATION_INTERFACES_DEFAULTS = {
    'simulation_interfaces/srv/StepSimulation_Request': {'steps': '1'},
}

# tf2_msgs of Kilted (geometry2 0.41.x; the definitions have not changed since 2019).
TF2_MSGS = {
    'tf2_msgs/action/LookupTransform':
        'RIHS01_0b8adf6bc0b5958879e3265b41a457e03558fe523890a81252c70eba97a82c5d',
    'tf2_msgs/msg/TF2Error':
        'RIHS01_db2485e7d6a0ec75bf087e058ee45df682acc3a621ca7780503d10aac141809a',
    'tf2_msgs/msg/TFMessage':
        'RIHS01_e369d0f05a23ae52508854b66f6aa0437f3449d652e8cbf22d5abe85d020f087',
    'tf2_msgs/srv/FrameGraph':
        'RIHS01_0d1fbc6222c018ba5f33822904a2fdd4063705289956d3fdde07cd8c50fe8067',
}
TF2_MSGS_CONSTANTS = {
    'tf2_msgs/msg/TF2Error': {
        'NO_ERROR': 0, 'LOOKUP_ERROR': 1, 'CONNECTIVITY_ERROR': 2, 'EXTRAPOLATION_ERROR': 3,
        'INVALID_ARGUMENT_ERROR': 4, 'TIMEOUT_ERROR': 5, 'TRANSFORM_ERROR': 6},
}

# composition_interfaces of Kilted (rcl_interfaces 2.3) and Jazzy (2.0): the services of a
# component container, which launch_ros imports. Computed from the upstream definitions, which
# have not changed since 2019, with python -m acres_devkit.type_hashes --compare.
COMPOSITION_INTERFACES = {
    'composition_interfaces/srv/ListNodes':
        'RIHS01_13f30d73a74c844ee4bacf78f3680f08777cad137f10fbd6a648544cc7b59d2a',
    'composition_interfaces/srv/ListNodes_Request':
        'RIHS01_57c879a1825b3fa15fd58e70d2e73223af6b9c45c7ae104cc107e73464d3a724',
    'composition_interfaces/srv/ListNodes_Response':
        'RIHS01_b7cd8401aedcd85c4cedce384944001d5c1ab611e0164a8207045cfcaf4a2584',
    'composition_interfaces/srv/LoadNode':
        'RIHS01_2e521ef6066fba6d7fc3a3b175d486709f01b4d738d9a59188858546fc8e5acd',
    'composition_interfaces/srv/LoadNode_Request':
        'RIHS01_7d3496175f54f92d652547e144c9b2a3b22afd604f84ed70adfcd1cfe35801b5',
    'composition_interfaces/srv/LoadNode_Response':
        'RIHS01_08cdf942efabec2448fd03c131f3627a33ed05376400612425f871feb87ca9fd',
    'composition_interfaces/srv/UnloadNode':
        'RIHS01_dce562f83adc735ddcfe9dfb927b89293d4dd0fe2b8fc91e772fb83e970a43b0',
    'composition_interfaces/srv/UnloadNode_Request':
        'RIHS01_95d5cfc357956740190c7685ac868d9c7c98dcb8c1416aae8eaa351422074e12',
    'composition_interfaces/srv/UnloadNode_Response':
        'RIHS01_fa7fc38f9206220a6bc1558a3c019269e5aa592f7fae01dffbd19f56eb86d599',
}

# acres_interfaces as designed (msg/); the same against either shape of simulation_interfaces,
# whose Result differs in neither.
ACRES_INTERFACES = {
    'acres_interfaces/msg/AgentInfo':
        'RIHS01_9e25df8b8db0f99204897fcf35737ba747fdb4f6a4fd6f76caa97fc5683c0ecd',
    'acres_interfaces/msg/Episode':
        'RIHS01_82553a66ceef886d370f3e6f6c911c5e3277e19f411648ca1e076b1dcb4b4ffd',
    'acres_interfaces/msg/FieldState':
        'RIHS01_1a734fd783ba50b8e512beafa93e55c1a750978b0dd1b7938f811e965bb94c35',
    'acres_interfaces/msg/StepBarrier':
        'RIHS01_e2313892fb6e225104c53d55c69cf90353b5212a9941f212a9eb650fba412129',
    'acres_interfaces/msg/VehicleShift':
        'RIHS01_5abd01fbaec8763705c30338e3a69162cbd7aa1af2633db041f175351280f763',
    'acres_interfaces/srv/FarmState':
        'RIHS01_e3d9b6e3a1753818ceabd7f4c5ca1e72953178d747509551dffabf1fb7022df8',
    'acres_interfaces/srv/FieldQuery':
        'RIHS01_ec25e74ece38cb5cbf230ad252cc4c5384422ea2b6981b42c88109ba51175660',
    'acres_interfaces/srv/GetVehicleShifts':
        'RIHS01_36c27b1d85dce8ef29a4333f03fe8726f31b8a5c09864c0a9ac5c7ff731ea60d',
    'acres_interfaces/srv/Hello':
        'RIHS01_bbe75fc5c89d3651a35a0b07769afec517ad9ca82cfdc9a50a7b666eafc746a9',
    'acres_interfaces/srv/Record':
        'RIHS01_331de079b0638944274026804b28dea792e52602c406345b4b7bb589534ccef0',
    'acres_interfaces/srv/Screenshot':
        'RIHS01_bf064ebe87162a49ce62e6bf5b121e4669a9d47d20349c08ed4d84c0aa65d2b5',
    'acres_interfaces/srv/SetConditions':
        'RIHS01_ff9fabb6258497fcc6ccd4915674e11d797f2dbd144b2f0389a0ea0958f1f5da',
    'acres_interfaces/srv/SetVehicleShift':
        'RIHS01_7df6f1143bbc7f90e7deb93dc996871e97c7b2f3868638c50f7d84e4e191f59b',
}
ACRES_INTERFACES_DEFAULTS = {
    'acres_interfaces/srv/FieldQuery_Request': {'frame': 'world'},
    'acres_interfaces/srv/SetConditions_Request': {
        'clock_hour': '12.0', 'weather_rain_mm_h': '-1.0'},
}


def _installed(package: str, prefixes: list[Path]) -> Path:
    """Return share/<package> of the first prefix that has it; fail the test if none has."""
    for prefix in prefixes:
        share = prefix / 'share' / package
        if (share / 'package.xml').is_file():
            return share
    pytest.fail(f'{package} is not installed in {", ".join(map(str, prefixes))}; run '
                'tools/bootstrap.py, which builds it from tools/interfaces/ or msg/')


def _version(share: Path) -> str:
    return ElementTree.parse(share / 'package.xml').getroot().findtext('version').strip()


def _mismatches(share: Path, package: str, hashes: dict[str, str], *,
                constants: dict[str, dict[str, object]] | None = None,
                defaults: dict[str, dict[str, str]]) -> list[str]:
    """Compare an installed package with its expectations; return one line per difference."""
    problems = []
    interfaces = {name for name in hashes if '_' not in name.rsplit('/', 1)[1]}
    installed_interfaces = set(type_hashes.interface_types(share, package))
    for name in sorted(interfaces ^ installed_interfaces):
        where = 'installed' if name in installed_interfaces else 'expected'
        problems.append(f'{name}: only {where}')
    built = type_hashes.read_type_hashes(share, package)
    for name, expected in sorted(hashes.items()):
        if built.get(name) != expected:
            problems.append(f'{name}: hash {built.get(name)}, expected {expected}')
    built_defaults = type_hashes.read_defaults(share, package)
    if built_defaults != defaults:
        problems.append(f'defaults {built_defaults}, expected {defaults}')
    if constants is not None:
        built_constants = type_hashes.read_constants(share, package)
        values = {name: {constant: value for constant, (_, value) in members.items()}
                  for name, members in built_constants.items()}
        if values != constants:
            problems.append(f'constants {values}, expected {constants}')
        kinds = {kind for members in built_constants.values() for kind, _ in members.values()}
        if kinds != {'uint8'}:
            problems.append(f'constant types {kinds}, expected only uint8')
    return problems


def _simulation_interfaces_prefixes(shape: str) -> list[Path]:
    if shape == 'default':
        return type_hashes.default_prefixes()
    prefix = os.environ.get(SIMIF2_PREFIX_VARIABLE, '')
    if not prefix:
        pytest.skip(f'{SIMIF2_PREFIX_VARIABLE} is unset: no prefix with the 2.x shape of '
                    'simulation_interfaces to check')
    return [Path(prefix)]


@pytest.mark.parametrize('shape', ['default', SIMIF2_PREFIX_VARIABLE])
def test_simulation_interfaces_has_the_type_hashes_of_its_release(shape):
    share = _installed('simulation_interfaces', _simulation_interfaces_prefixes(shape))
    version = _version(share)
    assert version in SIMULATION_INTERFACES_RELEASES, f'{share}: unknown release {version}'
    if shape == SIMIF2_PREFIX_VARIABLE:
        assert version.startswith('2.'), f'{share} holds {version}, not the 2.x shape'
    problems = _mismatches(share, 'simulation_interfaces', SIMULATION_INTERFACES_RELEASES[version],
                           constants=SIMULATION_INTERFACES_CONSTANTS,
                           defaults=SIMULATION_INTERFACES_DEFAULTS)
    assert not problems, f'{share} ({version}):\n' + '\n'.join(problems)


def test_tf2_msgs_has_the_type_hashes_of_kilted():
    share = _installed('tf2_msgs', type_hashes.default_prefixes())
    problems = _mismatches(share, 'tf2_msgs', TF2_MSGS, constants=TF2_MSGS_CONSTANTS,
                           defaults={})
    assert not problems, f'{share}:\n' + '\n'.join(problems)


def test_composition_interfaces_has_the_type_hashes_of_its_release():
    share = _installed('composition_interfaces', type_hashes.default_prefixes())
    problems = _mismatches(share, 'composition_interfaces', COMPOSITION_INTERFACES,
                           defaults={})
    constants = type_hashes.read_constants(share, 'composition_interfaces')
    if constants:
        problems.append(f'constants {constants}, expected none')
    assert not problems, f'{share}:\n' + '\n'.join(problems)


def test_acres_interfaces_has_the_recorded_type_hashes():
    share = _installed('acres_interfaces', type_hashes.default_prefixes())
    problems = _mismatches(share, 'acres_interfaces', ACRES_INTERFACES,
                           defaults=ACRES_INTERFACES_DEFAULTS)
    assert not problems, (
        f'{share}:\n' + '\n'.join(problems) + '\nAn interface of msg/ changed: if that is '
        'intended, record the new hashes (python -m acres_devkit.type_hashes '
        f'{share} --json) and tell the users of acres_interfaces')


def test_the_shapes_differ_only_where_the_releases_differ():
    changed = {name for name in SIMULATION_INTERFACES_1
               if SIMULATION_INTERFACES_1[name] != SIMULATION_INTERFACES_2[name]}
    assert changed == {
        'simulation_interfaces/msg/Spawnable', 'simulation_interfaces/srv/GetSpawnables',
        'simulation_interfaces/srv/LoadWorld', 'simulation_interfaces/srv/SetEntityState',
        'simulation_interfaces/srv/SpawnEntity'}


@functools.cache
def _own_domain_id() -> int:
    """A domain of this module's own, beside the run's: only its own endpoints are in it."""
    return claim_domain_id()


@pytest.fixture
def ros_context(monkeypatch):
    """Yield an rclpy Context in this test's domain (conftest.py keeps DDS on this host)."""
    import rclpy

    domain_id = _own_domain_id()
    monkeypatch.setenv('ROS_DOMAIN_ID', str(domain_id))
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=domain_id)
    try:
        yield context
    finally:
        rclpy.try_shutdown(context=context)


@pytest.mark.ros
def test_the_ros_graph_reports_the_release_type_hashes(ros_context):
    import rclpy
    from rclpy.action import ActionServer
    from simulation_interfaces.action import SimulateSteps
    from simulation_interfaces.msg import SimulationState
    from tf2_msgs.msg import TFMessage

    node = rclpy.create_node('type_hash_probe', context=ros_context)
    try:
        node.create_publisher(SimulationState, 'probe/simulation_state', 1)
        node.create_publisher(TFMessage, 'probe/tf', 1)
        action = ActionServer(node, SimulateSteps, 'probe/simulate_steps',
                              lambda goal: SimulateSteps.Result())
        expected = {
            '/probe/simulation_state': SIMULATION_INTERFACES_1[
                'simulation_interfaces/msg/SimulationState'],
            '/probe/tf': TF2_MSGS['tf2_msgs/msg/TFMessage'],
            '/probe/simulate_steps/_action/feedback': SIMULATION_INTERFACES_1[
                'simulation_interfaces/action/SimulateSteps_FeedbackMessage'],
        }
        # The node's own publishers are in its graph as soon as they exist.
        seen = {topic: [str(info.topic_type_hash)
                        for info in node.get_publishers_info_by_topic(topic)]
                for topic in expected}
        assert seen == {topic: [value] for topic, value in expected.items()}
        action.destroy()
    finally:
        node.destroy_node()
