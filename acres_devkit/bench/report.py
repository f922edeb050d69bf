# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""The sensor benchmark's report: the lines it prints, the Markdown tables and the plot."""

from collections.abc import Sequence
import os
import re
import tempfile
from typing import Any

from acres_devkit.bench import perf_split
from acres_devkit.bench.topics import DEFAULT_CONFIGS
from acres_devkit.bench.topics import label_order
from acres_devkit.bench.topics import label_topic
from acres_devkit.bench.topics import LARGE_TOPICS
from acres_devkit.bench.topics import LOCKSTEP_STEPS
from acres_devkit.bench.topics import SMALL_TOPICS
from acres_devkit.bench.topics import SUBSCRIBER_DEPTH
from acres_devkit.bench.topics import SUBSCRIBER_LARGE_DEPTH
from acres_devkit.bench.topics import TOPICS
from acres_devkit.bench.topics import TWO_HOST_TOPICS


# the groups of the latency targets (added latency p50 in ms over the floor at 1x)
TARGET_ADDED_P50_MS = {'lidar/points': 1.0, 'camera/image_raw': 1.0, '/clock': 0.3,
                       'ins/imu': 0.3}
TARGET_CPU_FRACTION_1X = 0.10
TARGET_RSS_MB = 250.0
NOTES_MARKER = '<!-- notes: kept by tools/benchmark.py -->'


def _two_host_line(result: dict[str, Any]) -> str:
    """One line: where, what; delivery and p50 of clouds, images, clock and IMU; CPU A and B."""
    parts = [f"{result['hosts']} host{'s' if result['hosts'] > 1 else ''} {result['mode']:6} "
             f"{result['config']:17} {result['rate']:g}x, {result['fast_dds']} -> "
             f"{result.get('subscriber_fast_dds')}"]
    for topic in TWO_HOST_TOPICS:
        item = result['topics'][topic]
        parts.append(f"{topic.split('/')[-1]} {item['delivered']}/{item['sent']} p50 "
                     f"{item['latency_p50_ms']} p99 {item['latency_p99_ms']} ms (taken p50 "
                     f"{item.get('take_latency_p50_ms')})")
    parts.append(f"cpu publisher {result['cpu_core_fraction']} subscriber "
                 f"{result['subscriber_cpu_core_fraction']} core")
    drops = result.get('subscriber_receive_drops')
    if drops:
        parts.append(f"host B dropped {drops['udp_receive_buffer_errors']} UDP datagrams "
                     '(socket buffer full)')
    return ' | '.join(parts)


def two_host_comparison(runs: Sequence[dict[str, Any]]) -> list[str]:
    """
    Lines per two-host bridge run: loss, cloud p50 over the floor and over one host.

    The cloud's p50 is its take latency, when the subscriber had the whole message: the
    reception stamp of a fragmented message means its first fragment on Fast DDS 3.x and its
    last on 2.x (it is shown too, as "stamped").
    """
    lines = []
    for run in runs:
        if run['hosts'] != 2 or run['mode'] != 'bridge':
            continue
        lost = {topic: item['lost'] for topic, item in run['topics'].items()
                if '@' not in topic and item['lost']}
        floor = run.get('vs_floor', {}).get('lidar/points', {})
        one = run.get('vs_one_host', {}).get('lidar/points', {})
        cloud = run['topics']['lidar/points']
        over_floor = (f", +{floor['take_added_p50_ms']} over the floor across the link"
                      if 'take_added_p50_ms' in floor else '')
        lines.append(
            f"{run['config']:17} {run['rate']:g}x: lost {lost or 'none'}; cloud p50 taken "
            f"{cloud.get('take_latency_p50_ms')} ms{over_floor}, "
            f"x{one.get('take_latency_p50_ratio')} the one-host bridge's (stamped "
            f"{cloud['latency_p50_ms']} ms, x{one.get('latency_p50_ratio')})")
    return lines


def _summary_line(result: dict[str, Any]) -> str:
    parts = [f"{result['mode']:6} {result['config']:7} {result.get('drive', 'play'):8} "
             f"{result['rate']:g}x sim {result['sim_s']:.1f} s (x{result['achieved_rate']})"]
    shown = ['/clock', 'ins/imu', 'lidar/points', 'camera/image_raw']
    if result.get('drive') == 'lockstep':
        shown.append('step_barrier')
    for topic in shown:
        t = result['topics'][topic]
        at_source = (f" ({t['dropped_at_source']} dropped by the simulator's queue)"
                     if t.get('dropped_at_source') else '')
        parts.append(f"{topic.split('/')[-1]} {t['delivered']}/{t['sent']}{at_source} "
                     f"p50 {t['latency_p50_ms']} ms")
    parts.append(f"cpu {result['cpu_core_fraction']} core, "
                 f"{result.get('cpu_us_per_message')} us/message, "
                 f"{result.get('cpu_ms_per_mb')} ms/MB, rss max {result['rss_mb_max']} MB")
    if result.get('perf'):
        counts = result['perf'].get('counts', {})
        messages = result.get('messages') or 0
        per_message = ', '.join(f'{name} {count / messages:.2f}'
                                for name, count in counts.items()) if messages else ''
        parts.append('perf: ' + perf_split.format_split(result['perf'])
                     + (f'; per message: {per_message}' if per_message else ''))
    beside = result.get('floor_beside')
    if beside:
        shown = ['/clock', 'ins/imu'] + (['step_barrier'] if result.get('drive') == 'lockstep'
                                         else [])
        parts.append('floor beside: ' + ', '.join(
            f"{topic.split('/')[-1]} {beside['topics'][topic]['delivered']}/"
            f"{beside['topics'][topic]['sent']} p50 {beside['topics'][topic]['latency_p50_ms']} ms"
            for topic in shown))
    return ' | '.join(parts)


def _subscriber_name(label: str) -> str:
    topic, _, variant = label.partition('@')
    if topic in LARGE_TOPICS and not variant:
        return f'reliable {SUBSCRIBER_LARGE_DEPTH}'
    if not variant:
        return f'reliable {SUBSCRIBER_DEPTH}'
    kind = 'best effort' if variant.startswith('be') else 'reliable'
    return f"{kind} {variant.lstrip('bre')}"


def comparison_lines(report: dict[str, Any]) -> list[str]:
    """
    Return the stock-against-profile table: per drive, rate, topic and subscriber.

    Each configuration shows the bridge's p50, the floor's p50 (of the floor beside the
    bridge in the same run where there is one, else of the floor's own run), the difference,
    and the bridge's losses; ``<= 0.3`` says whether stock met the issue-11 target (clock, INS
    and barrier within 0.3 ms of the floor).
    """
    runs: dict[tuple[str, float, str, str], dict[str, Any]] = {}
    for run in report['runs']:
        runs[(run.get('drive', 'play'), run['rate'], run['config'], run['mode'])] = run
    configs = [config for config in DEFAULT_CONFIGS
               if any(key[2] == config for key in runs)]
    header = ['drive', 'rate', 'topic', 'subscriber']
    for config in configs:
        header += [f'{config} bridge p50', f'{config} floor p50', f'{config} added',
                   f'{config} lost (floor) of sent']
    header.append('stock <= 0.3')
    lines = ['| ' + ' | '.join(header) + ' |', '|' + '---|' * len(header)]
    for drive, rate in sorted({(key[0], key[1]) for key in runs}):
        labels = []
        for config in configs:
            for run in (runs.get((drive, rate, config, 'bridge')),
                        runs.get((drive, rate, config, 'floor'))):
                if run is not None:
                    labels += [label for label in run['topics'] if label not in labels]
        for label in sorted(labels, key=label_order):
            topic = label_topic(label)
            if drive == 'play' and topic == 'step_barrier':
                continue
            cells = [drive, f'{rate:g}', topic, _subscriber_name(label)]
            met = ''
            for config in configs:
                bridge_run = runs.get((drive, rate, config, 'bridge'), {})
                bridge = bridge_run.get('topics', {}).get(label)
                floor = (bridge_run.get('floor_beside', {}).get('topics', {}).get(label)
                         or runs.get((drive, rate, config, 'floor'), {}).get('topics', {}).get(
                             label))
                b50 = bridge['latency_p50_ms'] if bridge else None
                f50 = floor['latency_p50_ms'] if floor else None
                added = round(b50 - f50, 3) if b50 is not None and f50 is not None else None
                floor_lost = floor['lost'] if floor else '-'
                lost = f"{bridge['lost']} ({floor_lost}) of {bridge['sent']}" if bridge else ''
                cells += [_cell(b50), _cell(f50), _cell(added), lost]
                if config == 'stock' and topic in SMALL_TOPICS and added is not None:
                    met = 'yes' if added <= TARGET_ADDED_P50_MS['/clock'] else 'no'
            cells.append(met)
            lines.append('| ' + ' | '.join(cells) + ' |')
    return lines


def headline_lines(report: dict[str, Any]) -> list[str]:
    """
    Return the headline: the bridge against the floor, as ratios and differences, per run pair.

    CPU per message of the bridge over the floor's; p50 and p99 over the floor's (worst topic
    of the plain subscriptions); messages lost by each.
    """
    pairs: dict[tuple[str, str, float], dict[str, dict[str, Any]]] = {}
    for run in report['runs']:
        pairs.setdefault((run['config'], run.get('drive', 'play'), run['rate']), {})[
            run['mode']] = run
    lines = ['## The bridge against the floor', '',
             '| DDS | drive | rate | sim x bridge (floor) | CPU us/message bridge (floor) | '
             'ratio | ms/MB bridge (floor) | p50 over floor, ms, worst topic | '
             'p99 over floor, ms, worst topic | lost bridge (floor) |',
             '|---|---|---|---|---|---|---|---|---|---|']
    for (config, drive, rate), pair in sorted(pairs.items()):
        bridge, floor = pair.get('bridge'), pair.get('floor')
        if bridge is None or floor is None:
            continue
        plain = [topic for topic in TOPICS if topic != 'step_barrier' or drive == 'lockstep']
        ratios = bridge.get('vs_floor', {})

        def worst(name: str) -> str:
            values = [(ratios[topic][name], topic) for topic in plain
                      if ratios.get(topic, {}).get(name) is not None]
            if not values:
                return ''
            value, topic = max(values)
            return f'{value:g} ({topic})'

        lost = sum(bridge['topics'][topic]['lost'] for topic in plain)
        floor_lost = sum(floor['topics'][topic]['lost'] for topic in plain)
        lines.append(
            f"| {config} | {drive} | {rate:g} | {bridge['achieved_rate']} "
            f"({floor['achieved_rate']}) | {_cell(bridge.get('cpu_us_per_message'))} "
            f"({_cell(floor.get('cpu_us_per_message'))}) | "
            f"{_cell(ratios.get('cpu_per_message_ratio'))} | "
            f"{_cell(bridge.get('cpu_ms_per_mb'))} ({_cell(floor.get('cpu_ms_per_mb'))}) | "
            f"{worst('added_p50_ms')} | {worst('added_p99_ms')} | {lost} ({floor_lost}) |")
    return lines + ['']


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TEMPORARY = re.compile(re.escape(tempfile.gettempdir()) + r'/acres_bridge-[^/]+/')


def portable(text: str) -> str:
    """Return ``text`` with this checkout's and this machine's paths made relative or named."""
    return TEMPORARY.sub('$TMPDIR/acres_bridge-$UID/', text.replace(ROOT + os.sep, ''))


def write_markdown(report: dict[str, Any], path: str, png_name: str | None) -> None:
    """Write the report as markdown tables; paths of this machine do not go into it."""
    machine = report['machine']
    settings = report['settings']
    lines = [
        '# Sensor bridge benchmark', '',
        f"Measured {report['date']} UTC with `tools/benchmark.py` on {machine['cores']} cores "
        f"({machine['platform']}, Python {machine['python']}, "
        f"{settings.get('fast_dds', 'Fast DDS')} from {settings.get('prefix', 'the prefix')}); "
        f"{settings['seconds']:g} wall seconds per run (other rates: "
        f"{settings.get('rate_seconds') or 'none'}); the emulator renders every "
        f"{settings['emulator_render_every']}th LiDAR and camera frame afresh"
        + (f" and runs at nice {settings['emulator_nice']}" if settings.get('emulator_nice')
           else '') + '.', '',
        'Two configurations. `stock`: no Fast DDS variable in any process, as a new user has '
        'it; the bridge applies its own writer settings (acres_bridge/runtime/dds.py), the floor '
        'and the subscriber run Fast DDS as it ships. `profile`: every process loads the '
        f"package's profile ({os.path.basename(settings.get('profile') or '')}, with "
        '`RMW_FASTRTPS_USE_QOS_FROM_XML=1`). Two drives. `play`: the emulator plays at the '
        f'rate. `lockstep`: {LOCKSTEP_STEPS}-step requests paced at the rate, each ending with '
        'a step barrier; the floor publishes the same bursts and barriers.', '',
        'Latency is receive time in the subscriber (the middleware\'s reception time) minus '
        'the publish time of the frame (CLOCK_MONOTONIC; for the bridge the time the emulator '
        'queued the frame, so it includes the TCP hop, decoding, conversion and DDS). `floor` '
        'is a plain rclpy publisher of ready-made messages with the bridge\'s QoS (in lockstep '
        'its publish time is the release of the burst: a message waits for those before it, '
        'as in the bridge); `added` is '
        "bridge minus floor; `own` is added minus the bridge's transport latency (its "
        "/diagnostics: its receive time minus the frame's publish time, i.e. the emulator's "
        'queue and the TCP hop). `sim x` is the real-time factor the emulator reached. Lost = '
        'sent by the emulator (or the floor) and never received by that subscription; a '
        'keep-last 1 or 10 reader drops what it has not taken before newer samples arrive, '
        'by design.', '',
        f"Subscriptions: {settings['qos']}.", '']
    if settings.get('floor_beside'):
        lines += [
            'Floor beside the bridge (`--floor-beside`): in each bridge run a plain rclpy '
            'publisher also published clock, INS and barrier on `/floor/...` topics, read by '
            'the same subscriber, playing at the rate or releasing one burst with each step '
            'request; for those topics the comparison takes it as the floor (same run, same '
            'load), and `lost (floor)` is its loss.', '']
    lines += headline_lines(report)
    lines += ['## Stock against profile', '']
    lines += comparison_lines(report)
    lines.append('')
    if png_name:
        lines += [f'![latency and loss against the real-time factor]({png_name})', '']
    lines += ['## Every run (reliable subscriber, depth %d; clouds and images %d)'
              % (SUBSCRIBER_DEPTH, SUBSCRIBER_LARGE_DEPTH), '',
              '| DDS | drive | rate | run | sim x | topic | delivered/sent | p50 ms | p99 ms '
              '| max ms | added p50 ms | own p50 ms | CPU core | CPU s / sim s | RSS max MB |',
              '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|']
    for run in report['runs']:
        ratios = run.get('vs_floor', {})
        shown = [topic for topic in TOPICS
                 if topic != 'step_barrier' or run.get('drive') == 'lockstep']
        for index, topic in enumerate(shown):
            t = run['topics'][topic]
            added = ratios.get(topic, {}).get('added_p50_ms')
            own = ratios.get(topic, {}).get('own_p50_ms')
            cells = [run['config'], run.get('drive', 'play'), f"{run['rate']:g}", run['mode'],
                     f"{run['achieved_rate']}"]
            tail = [_cell(run['cpu_core_fraction']), _cell(run['cpu_s_per_sim_s']),
                    _cell(run['rss_mb_max'])]
            if index:
                cells, tail = [''] * len(cells), [''] * len(tail)
            cells += [topic, f"{t['delivered']}/{t['sent']}", _cell(t['latency_p50_ms']),
                      _cell(t['latency_p99_ms']), _cell(t['latency_max_ms']), _cell(added),
                      _cell(own)]
            lines.append('| ' + ' | '.join(cells + tail) + ' |')
    lines.append('')
    lines += ['The bridge said, in each configuration:', '']
    for line in sorted({run['dds_line'] for run in report['runs'] if run.get('dds_line')}):
        lines.append(f'- `{line}`')
    lines.append('')
    text = portable('\n'.join(lines))
    # Hand-written findings below the marker survive a new run.
    if os.path.exists(path):
        with open(path, encoding='utf-8') as stream:
            previous = stream.read()
        if NOTES_MARKER in previous:
            text += '\n' + previous[previous.index(NOTES_MARKER):]
    with open(path, 'w', encoding='utf-8') as stream:
        stream.write(text)


def _cell(value: Any) -> str:
    return '' if value is None else f'{value}'


def write_plot(report: dict[str, Any], path: str) -> None:
    """Plot p50/p99 latency and loss against the real-time factor, per topic and run."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    shown = ('/clock', 'ins/imu', 'lidar/points', 'camera/image_raw')
    figure, axes = plt.subplots(1, 3, figsize=(16, 5))
    styles = {('bridge', 'stock'): '-', ('bridge', 'profile'): '-.',
              ('floor', 'stock'): ':', ('floor', 'profile'): '--'}
    colours = dict(zip(shown, ('tab:blue', 'tab:orange', 'tab:green', 'tab:red')))
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for run in report['runs']:
        if run.get('drive', 'play') == 'play':
            groups.setdefault((run['mode'], run['config']), []).append(run)
    for (mode, config), runs in groups.items():
        runs = sorted(runs, key=lambda run: run['rate'])
        rates = [run['rate'] for run in runs]
        for topic in shown:
            label = f'{topic} {mode} {config}'
            style = styles.get((mode, config), '-')
            p50 = [run['topics'][topic]['latency_p50_ms'] for run in runs]
            p99 = [run['topics'][topic]['latency_p99_ms'] for run in runs]
            loss = [run['topics'][topic]['loss_pct'] for run in runs]
            axes[0].plot(rates, p50, style, marker='o', color=colours[topic], label=label)
            axes[1].plot(rates, p99, style, marker='o', color=colours[topic], label=label)
            axes[2].plot(rates, loss, style, marker='o', color=colours[topic], label=label)
    for axis, title in zip(axes, ('latency p50 (ms)', 'latency p99 (ms)', 'lost (%)')):
        axis.set_xlabel('real-time factor')
        axis.set_title(title)
        axis.grid(True, alpha=0.3)
    axes[0].set_yscale('log')
    axes[1].set_yscale('log')
    axes[2].legend(fontsize=6, loc='upper left')
    figure.suptitle(f"acres_bridge sensor_bridge vs rclpy floor, {report['machine']['cores']} "
                    'cores')
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
