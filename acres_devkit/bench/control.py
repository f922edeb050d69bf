# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Print round-trip figures of sim_control (not a test: run it by hand).

    ROS_DOMAIN_ID=20 .venv/bin/python tools/bench_control.py [--calls 500]

Three processes, as in use: the emulator (lockstep, vehicles holding still, no sensor client),
the ``sim_control`` executable, and this one, which calls through ROS: sequential
get_simulation_state and step_simulation(1), eight concurrent callers, and simulate_steps.
Then two floors: an rclpy service in its own process that answers at once (what ROS costs),
and the emulator called directly with a ControlClient (what the channel costs).
"""

import argparse
import os
import subprocess
import sys
import threading
import time

import rclpy
from rclpy.action import ActionClient
from rclpy.executors import MultiThreadedExecutor
from rclpy.executors import SingleThreadedExecutor
from simulation_interfaces.action import SimulateSteps
from simulation_interfaces.srv import GetSimulationState
from simulation_interfaces.srv import StepSimulation

from acres_bridge.protocol.control_client import ControlClient
from acres_bridge.runtime import dds
from acres_devkit import dds_environment


_ECHO_SERVICE = '''
import rclpy
from rclpy.executors import ExternalShutdownException
from simulation_interfaces.srv import GetSimulationState
rclpy.init()
node = rclpy.create_node('echo_simulation_state')
node.create_service(GetSimulationState, 'echo_simulation_state',
                    lambda request, response: response)
try:
    rclpy.spin(node)
except (KeyboardInterrupt, ExternalShutdownException):
    pass
'''


def _percentiles(samples_s: list[float]) -> str:
    ordered = sorted(samples_s)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1e3  # noqa: E731
    return (f'p50 {pick(0.5):6.2f} ms  p90 {pick(0.9):6.2f} ms  p99 {pick(0.99):6.2f} ms  '
            f'max {ordered[-1] * 1e3:6.2f} ms  (n={len(ordered)})')


def _wait(future, timeout_s: float = 30.0):
    done = threading.Event()
    future.add_done_callback(lambda _: done.set())
    if not done.wait(timeout_s):
        raise TimeoutError('no answer')
    return future.result()


def _timed(calls: int, call) -> list[float]:
    samples = []
    for _ in range(calls):
        start = time.perf_counter()
        call()
        samples.append(time.perf_counter() - start)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--calls', type=int, default=500)
    args = parser.parse_args()
    # DDS stays on this machine, for this process and the ones it starts.
    dds_environment.keep_discovery_local(os.environ, dds.find_fast_dds())
    os.environ.setdefault('ROS_DOMAIN_ID', '20')
    emulator = subprocess.Popen(
        [sys.executable, '-m', 'acres_bridge.emulator.server', '--control-port', '0',
         '--lockstep', '--drive', 'hold'], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        text=True)
    ready = emulator.stdout.readline().split()
    port = int(dict(item.split('=') for item in ready[1:])['control'])
    node_process = subprocess.Popen(
        [sys.executable, '-m', 'acres_bridge.nodes.sim_control', '--ros-args', '-p',
         f'port:={port}', '--log-level', 'warn'], stderr=subprocess.DEVNULL)
    rclpy.init()
    node = rclpy.create_node('benchmark_control')
    executor = MultiThreadedExecutor(num_threads=4)
    executor.add_node(node)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()
    try:
        state = node.create_client(GetSimulationState, 'get_simulation_state')
        step = node.create_client(StepSimulation, 'step_simulation')
        for client in (state, step):
            assert client.wait_for_service(timeout_sec=30.0)
        for _ in range(20):
            _wait(state.call_async(GetSimulationState.Request()))
        print(f'ROS get_simulation_state        {_percentiles(_timed(args.calls, lambda: _wait(state.call_async(GetSimulationState.Request()))))}')  # noqa: E501
        print(f'ROS step_simulation(1)          {_percentiles(_timed(args.calls, lambda: _wait(step.call_async(StepSimulation.Request(steps=1)))))}')  # noqa: E501
        clients = [node.create_client(GetSimulationState, 'get_simulation_state')
                   for _ in range(8)]
        for client in clients:
            assert client.wait_for_service(timeout_sec=30.0)
        rounds = max(1, args.calls // 8)
        start = time.perf_counter()
        for _ in range(rounds):
            futures = [client.call_async(GetSimulationState.Request()) for client in clients]
            for future in futures:
                _wait(future)
        elapsed = time.perf_counter() - start
        print(f'ROS 8 concurrent callers        {rounds * 8 / elapsed:7.0f} calls/s '
              f'({rounds} rounds of 8)')
        # The action client gets a node and an executor of its own, spun by the thread that
        # sends: Jazzy's ActionClient records a request's future only after sending it, so a
        # response taken by another thread in between would be dropped.
        action_node = rclpy.create_node('benchmark_control_action')
        action = ActionClient(action_node, SimulateSteps, 'simulate_steps')
        action_executor = SingleThreadedExecutor()
        action_executor.add_node(action_node)
        assert action.wait_for_server(timeout_sec=30.0)

        def spun(future, timeout_s: float = 30.0):
            action_executor.spin_until_future_complete(future, timeout_sec=timeout_s)
            if not future.done():
                raise TimeoutError('no answer')
            return future.result()

        def goal() -> None:
            handle = spun(action.send_goal_async(SimulateSteps.Goal(steps=36)))
            spun(handle.get_result_async())

        print(f'ROS simulate_steps(36)          '
              f'{_percentiles(_timed(max(10, args.calls // 10), goal))}')
        action_executor.shutdown()
        action.destroy()        # before the context: not at exit, by the garbage collector
        action_node.destroy_node()
        node_process.terminate()
        node_process.wait(timeout=30)
        node_process = subprocess.Popen([sys.executable, '-c', _ECHO_SERVICE])
        echo = node.create_client(GetSimulationState, 'echo_simulation_state')
        assert echo.wait_for_service(timeout_sec=30.0)
        for _ in range(20):
            _wait(echo.call_async(GetSimulationState.Request()))
        print(f'floor: rclpy service at once   {_percentiles(_timed(args.calls, lambda: _wait(echo.call_async(GetSimulationState.Request()))))}')  # noqa: E501
    finally:
        node_process.terminate()
        node_process.wait(timeout=30)
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()
    control = ControlClient('127.0.0.1', port)
    control.start()
    try:
        deadline = time.monotonic() + 30.0
        while not control.connected and time.monotonic() < deadline:
            time.sleep(0.01)
        for _ in range(20):
            control.request('get_state')
        print(f'floor: ControlClient get_state '
              f'{_percentiles(_timed(args.calls, lambda: control.request("get_state")))}')
        print(f'floor: ControlClient step(1)   '
              f'{_percentiles(_timed(args.calls, lambda: control.request("step", steps=1)))}')
    finally:
        control.stop()
        emulator.terminate()
        emulator.wait(timeout=30)


if __name__ == '__main__':
    main()
