# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Every relative link of README.md and docs/*.md leads somewhere: to a file, and to a heading.

Headings become anchors as GitHub makes them: lower case, punctuation dropped, spaces turned
into hyphens, and ``-1``, ``-2`` after a repeated one. Links and headings inside code (fenced
blocks, inline code) are not links. Links with a scheme (https:, mailto:) are not checked.
"""

from pathlib import Path
import re

from support.paths import ROOT

LINK = re.compile(r'!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)')
FENCE = re.compile(r'^\s*(```|~~~)')
HEADING = re.compile(r'^#{1,6}\s+(.*?)\s*#*\s*$')
INLINE_CODE = re.compile(r'`[^`]*`')
SCHEME = re.compile(r'^[a-zA-Z][a-zA-Z0-9+.-]*:')


def documents() -> list[Path]:
    """Return the Markdown files a user reads: the README and the docs."""
    return [ROOT / 'README.md', *sorted((ROOT / 'docs').glob('*.md'))]


def prose_lines(text: str) -> list[str]:
    """Return the lines outside fenced code blocks."""
    lines, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            lines.append(line)
    return lines


def slug(heading: str) -> str:
    """Return GitHub's anchor of a heading's text (before the suffix of a repeated one)."""
    text = re.sub(r'\[([^\]]*)\]\([^)]*\)', r'\1', heading)     # a link keeps its text
    text = re.sub(r'[^\w\- ]', '', text.replace('`', '').lower())
    return text.replace(' ', '-')


def anchors(text: str) -> set[str]:
    """Return every anchor of a Markdown text's headings."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    for line in prose_lines(text):
        match = HEADING.match(line)
        if match:
            base = slug(match.group(1))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f'{base}-{count}')
    return found


def links(text: str) -> list[str]:
    """Return the link targets of a Markdown text, outside code; a link may wrap in a paragraph."""
    paragraphs = '\n'.join(prose_lines(text)).split('\n\n')
    return [target for paragraph in paragraphs
            for target in LINK.findall(INLINE_CODE.sub('', paragraph))]


def broken_links(document: Path) -> list[str]:
    """Return each relative link of ``document`` that names no file or no heading."""
    broken = []
    for target in links(document.read_text(encoding='utf-8')):
        if SCHEME.match(target):
            continue
        path, _, anchor = target.partition('#')
        destination = (document.parent / path).resolve() if path else document
        if not destination.exists():
            broken.append(f'{target}: no such file')
        elif anchor and destination.suffix == '.md' and anchor not in anchors(
                destination.read_text(encoding='utf-8')):
            broken.append(f'{target}: no such heading in {destination.name}')
    return broken


def test_every_relative_link_of_the_readme_and_the_docs_resolves():
    broken = {str(document.relative_to(ROOT)): broken_links(document)
              for document in documents()}
    assert {name: found for name, found in broken.items() if found} == {}


def test_the_check_finds_a_missing_file_a_missing_heading_and_passes_good_links(tmp_path):
    (tmp_path / 'other.md').write_text(
        '# Other\n\n## The view\'s cost (`foxglove_view`, issue 27)\n\n## Soak\n\n### Soak\n'
        '```bash\n# not a heading\n```\n', encoding='utf-8')
    document = tmp_path / 'README.md'
    document.write_text(
        '# Top\n\n[a](other.md) [b](other.md#the-views-cost-foxglove_view-issue-27) '
        '[c](other.md#soak-1) [d](#top) [e](https://example.com/x#y) `[f](nowhere.md)`\n'
        '[g](missing.md) [h](other.md#not-a-heading) [i\nwrapped](other.md#not-a-heading-either)\n'
        '```\n[j](also-missing.md)\n```\n', encoding='utf-8')
    assert broken_links(document) == [
        'missing.md: no such file',
        'other.md#not-a-heading: no such heading in other.md',
        'other.md#not-a-heading-either: no such heading in other.md']
