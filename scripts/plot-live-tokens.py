#!/usr/bin/env python3
"""Plot the context sent per request with and without bonsai's Pi package (the CSVs the test
`live_pi::sixty_turns_cost_less_and_keep_the_cache` writes to target/, or the older
`live-tokens-*.csv`) as an SVG for BENCHMARKS.md. No dependencies.

    python3 scripts/plot-live-tokens.py target/live-bill-0.87.1.csv target/live-bill-1.5.2.csv -o assets/live-steps.svg
"""
import csv
import sys

args = sys.argv[1:]
out = "assets/live-tokens.svg"
if "-o" in args:
    i = args.index("-o")
    out = args[i + 1]
    del args[i : i + 2]
series = []
for path in args:
    with open(path) as f:
        rows = list(csv.DictReader(f))
    version = path.rsplit("-", 1)[-1].removesuffix(".csv")
    # Pi alone's column is "alone" in the bill test's table, "without" in the older one.
    alone = "alone" if "alone" in rows[0] else "without"
    series.append((version, [(int(r["request"]), int(r[alone]), int(r["with"])) for r in rows]))

W, H, L, R, T, B = 760, 380, 70, 20, 40, 50
n = max(len(s) for _, s in series)
ymax = max(max(max(w, x) for _, w, x in s) for _, s in series)
ymax = ((ymax // 20000) + 1) * 20000
X = lambda i: L + (W - L - R) * (i - 1) / max(1, n - 1)
Y = lambda v: T + (H - T - B) * (1 - v / ymax)
colors = {"without": ["#c0392b", "#e67e22"], "with": ["#1e8449", "#2e86c1"]}
parts = [
    f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
    f'<rect width="{W}" height="{H}" fill="white"/>',
    f'<text x="{W/2}" y="20" text-anchor="middle" font-size="14">Context sent per request over 60 turns (Pi\'s estimate, tokens)</text>',
]
for k in range(0, ymax + 1, 20000):
    y = Y(k)
    parts.append(f'<line x1="{L}" y1="{y:.1f}" x2="{W-R}" y2="{y:.1f}" stroke="#ddd"/>')
    parts.append(f'<text x="{L-6}" y="{y+4:.1f}" text-anchor="end">{k:,}</text>')
for t in range(0, 61, 10):
    x = X(max(1, t * 2))
    parts.append(f'<text x="{x:.1f}" y="{H-B+18}" text-anchor="middle">{t}</text>')
parts.append(f'<text x="{(L+W-R)/2}" y="{H-10}" text-anchor="middle">turn</text>')
legend_y = T + 10
for si, (version, s) in enumerate(series):
    for key, idx in (("without", 1), ("with", 2)):
        pts = " ".join(f"{X(r[0]):.1f},{Y(r[idx]):.1f}" for r in s)
        color = colors[key][si % 2]
        dash = ' stroke-dasharray="5,3"' if si else ""
        parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.6"{dash} points="{pts}"/>')
        label = f"Pi {version}, {'without' if key == 'without' else 'with'} the package"
        parts.append(f'<line x1="{L+10}" y1="{legend_y}" x2="{L+40}" y2="{legend_y}" stroke="{color}" stroke-width="2"{dash}/>')
        parts.append(f'<text x="{L+46}" y="{legend_y+4}">{label}</text>')
        legend_y += 16
parts.append("</svg>")
with open(out, "w") as f:
    f.write("\n".join(parts) + "\n")
print(f"wrote {out}")
