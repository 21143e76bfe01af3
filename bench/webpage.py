"""A large documentation-style HTML page, the same bytes on every run (seeded).

Shaped like the pages agents fetch: a head with styles and scripts, a navigation
sidebar of hundreds of links, then sections of headings, paragraphs with inline
markup and links, nested lists, tables, code blocks, images and asides, with
analytics scripts and a footer. ``page(2_800_000)`` is the 2.8 MB page of the
webfetch benchmark.
"""

from __future__ import annotations

import random

_TEXT = (
    "the of and to in is for on that by with this as are be from at or an it "
    "request response server client handler buffer stream config option value "
    "module function method class object return error timeout cache index query "
    "token session worker thread process signal socket event parser render layout"
)
WORDS = _TEXT.split()


def _sentence(rng: random.Random, words: int) -> str:
    text = " ".join(rng.choice(WORDS) for _ in range(words))
    return text[0].upper() + text[1:] + "."


def _inline(rng: random.Random) -> str:
    parts = []
    for _ in range(rng.randint(2, 5)):
        roll = rng.random()
        sentence = _sentence(rng, rng.randint(6, 18))
        if roll < 0.15:
            parts.append(
                f'<a href="/docs/{rng.choice(WORDS)}/{rng.randint(1, 999)}">{sentence}</a>'
            )
        elif roll < 0.25:
            parts.append(f"<code>{rng.choice(WORDS)}_{rng.choice(WORDS)}()</code> {sentence}")
        elif roll < 0.32:
            parts.append(f"<strong>{sentence}</strong>")
        elif roll < 0.38:
            parts.append(f"<em>{sentence}</em>")
        else:
            parts.append(sentence)
    return " ".join(parts)


def _section(rng: random.Random, index: int) -> str:
    out = [f'<section id="s{index}"><h2>{_sentence(rng, 4)}</h2>']
    for _ in range(rng.randint(2, 4)):
        out.append(f"<p>{_inline(rng)}</p>")
    if rng.random() < 0.6:
        items = "".join(
            f"<li>{_inline(rng)}"
            + (
                "<ul>" + "".join(f"<li>{_sentence(rng, 8)}</li>" for _ in range(3)) + "</ul>"
                if rng.random() < 0.3
                else ""
            )
            + "</li>"
            for _ in range(rng.randint(3, 7))
        )
        out.append(f"<ul>{items}</ul>")
    if rng.random() < 0.35:
        code = "\n".join(
            f"    {rng.choice(WORDS)} = {rng.choice(WORDS)}({rng.randint(0, 99)}) &lt;= x"
            for _ in range(rng.randint(4, 12))
        )
        out.append(f'<pre><code class="language-python">def f():\n{code}\n</code></pre>')
    if rng.random() < 0.25:
        rows = "".join(
            "<tr>" + "".join(f"<td>{rng.choice(WORDS)}</td>" for _ in range(4)) + "</tr>"
            for _ in range(rng.randint(3, 8))
        )
        out.append(
            "<table><thead><tr><th>Name</th><th>Type</th><th>Default</th><th>Notes</th></tr>"
            f"</thead><tbody>{rows}</tbody></table>"
        )
    if rng.random() < 0.2:
        out.append(f'<figure><img src="/img/{index}.png" alt="{_sentence(rng, 3)}"></figure>')
    if rng.random() < 0.15:
        out.append(
            f'<div class="note"><div class="inner"><p>{_inline(rng)}</p></div></div>'
            f'<script>window.track&&track("s{index}",{{v:{rng.randint(0, 9)}}});</script>'
        )
    out.append("</section>")
    return "".join(out)


def page(size: int, seed: int = 1) -> str:
    rng = random.Random(seed)
    style = "".join(f".c{i}{{margin:{i}px;color:#{i:06x}}}" for i in range(800))
    script = "".join(f"var v{i}=function(a){{return a*{i}}};" for i in range(800))
    nav = "".join(
        f'<li><a href="/docs/{rng.choice(WORDS)}-{i}">{_sentence(rng, 3)}</a></li>'
        for i in range(600)
    )
    head = (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>Reference manual</title><style>{style}</style>"
        f'<link rel="stylesheet" href="/a.css"><script>{script}</script></head><body>'
        f'<header><nav><ul class="sidebar">{nav}</ul></nav></header><main><h1>Reference</h1>'
    )
    foot = "</main><footer><p>Copyright.</p></footer><script>init()</script></body></html>"
    body: list[str] = []
    length = len(head) + len(foot)
    index = 0
    while length < size:
        section = _section(rng, index)
        body.append(section)
        length += len(section)
        index += 1
    return head + "".join(body) + foot
