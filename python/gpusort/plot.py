"""Figures of a benchmark CSV (the columns of `gpusort bench --csv`), drawn with matplotlib.

    python -m gpusort.plot CSV DIR

writes PNG files into DIR (created if missing) and prints the path of each:

  rate_<key>_<values>_<distribution>[_seg<S>].png: keys/s against n on a log2 axis, one line
      per algorithm, for each (key type, value type, distribution, segment size) measured at
      2 or more sizes;
  spread_<key>_<values>_n<N>[_seg<S>].png: a box per algorithm of its keys/s over the
      distributions (whiskers min to max, box 25-75 %, bar median), for each (key type, value
      type, n, segment size) where an algorithm was measured on 2 or more distributions.

A later row for the same measurement replaces an earlier one. When the rows come from more
than one GPU, file names carry the GPU's name too. `gpusort plot` and `gpusort bench --plot`
run this module; its messages speak as `gpusort plot` for that reason.

Exit status: 0 (also when no figure qualifies; stderr says so), 2 for bad input or a missing
matplotlib, 3 when a file cannot be written. Needs nothing of gpusort's compiled module.
"""

import csv
import math
import os
import re
import sys

PROG = "gpusort plot"
NEEDED = ("algorithm", "key_type", "value_type", "distribution", "n", "segment_size", "keys_per_s")
NO_FIGURE = "no figure: no point set has 2 sizes or 2 distributions"


class UsageError(Exception):
    """Bad input: exit status 2, as the tool's usage errors."""


class Row:
    __slots__ = ("algorithm", "key_type", "value_type", "distribution", "n", "segment_size",
                 "gpu", "keys_per_s")

    def __init__(self, **fields):
        for name, value in fields.items():
            setattr(self, name, value)

    def measurement(self):
        return (self.algorithm, self.key_type, self.value_type, self.distribution, self.n,
                self.segment_size, self.gpu)


def _count(text):
    # Plain decimal digits only, as the C++ reader took them ("2^10" is not a count here).
    return int(text) if re.fullmatch(r"[0-9]+", text) else None


def read_rows(path):
    """The rows with a finite keys/s, in order of first appearance; a later row for the same
    measurement takes the earlier one's place."""
    try:
        with open(path, newline="", encoding="utf-8", errors="replace") as f:
            reader = csv.reader(f)
            records, last = [], 0
            for fields in reader:  # with the line where each record starts, for messages
                records.append((last + 1, fields))
                last = reader.line_num
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise UsageError(f"{path}: a directory, not a benchmark CSV") from None
    except (OSError, csv.Error) as e:
        raise UsageError(f"{path}: cannot read: {e}") from None
    records = [(line, r) for line, r in records if any(field for field in r)]
    if not records:
        raise UsageError(f"{path}: empty, not a benchmark CSV")

    header = records[0][1]
    at = {}
    for name in NEEDED:
        if name not in header:
            raise UsageError(
                f"{path}: no column '{name}' (a CSV of gpusort bench --csv has algorithm,"
                "key_type,value_type,distribution,n,segment_size,...,keys_per_s)")
        at[name] = header.index(name)
    gpu_at = header.index("gpu") if "gpu" in header else None  # titles and file names only

    rows = {}
    for line, fields in records[1:]:
        where = f"{path}:{line}: "
        if len(fields) < len(header):
            raise UsageError(f"{where}{len(fields)} fields, the header has {len(header)}")
        n = _count(fields[at["n"]])
        if n is None:
            raise UsageError(f"{where}n '{fields[at['n']]}' is not a count")
        try:
            rate = float(fields[at["keys_per_s"]])
        except ValueError:
            raise UsageError(
                f"{where}keys_per_s '{fields[at['keys_per_s']]}' is not a number") from None
        # inf or nan (a run too short to time) has no place on the axes.
        if not math.isfinite(rate) or rate < 0:
            continue
        row = Row(algorithm=fields[at["algorithm"]], key_type=fields[at["key_type"]],
                  value_type=fields[at["value_type"]], distribution=fields[at["distribution"]],
                  n=n, segment_size=fields[at["segment_size"]],
                  gpu=fields[gpu_at] if gpu_at is not None else "", keys_per_s=rate)
        # A dict keeps a key's first position when its value is replaced.
        rows[row.measurement()] = row
    if not rows:
        raise UsageError(f"{path}: no rows with a keys_per_s to draw")
    return list(rows.values())


def _groups(rows, key_of):
    groups = {}
    for row in rows:
        groups.setdefault(key_of(row), []).append(row)
    return list(groups.values())


def _quantile(ascending, p):
    """Linear interpolation between the nearest ranks (numpy's default)."""
    position = p * (len(ascending) - 1)
    below = int(position)
    above = min(below + 1, len(ascending) - 1)
    return ascending[below] + (ascending[above] - ascending[below]) * (position - below)


def plan(rows):
    """The figures the rows give, without drawing them: (kind, file stem, rows) with kind
    "rate" (the group's rows with n > 0) or "spread" (a list of (algorithm, rates))."""
    numbers = {}
    for row in rows:
        numbers.setdefault(row.algorithm, len(numbers))
    several_gpus = any(row.gpu != rows[0].gpu for row in rows)

    def stem(kind, row, what):
        name = f"{kind}_{row.key_type}_{row.value_type}_{what}"
        if row.segment_size != "0":
            name += f"_seg{row.segment_size}"
        if several_gpus:
            name += f"_{row.gpu}"
        return re.sub(r"[^A-Za-z0-9._-]", "-", name)

    figures = []
    for group in _groups(rows, lambda r: (r.key_type, r.value_type, r.distribution,
                                          r.segment_size, r.gpu)):
        sized = [r for r in group if r.n > 0]  # 0 has no place on a log axis
        if len({r.n for r in sized}) >= 2:
            figures.append(("rate", stem("rate", sized[0], sized[0].distribution), sized))
    for group in _groups(rows, lambda r: (r.key_type, r.value_type, r.n, r.segment_size,
                                          r.gpu)):
        by_algorithm = {}
        for r in sorted(group, key=lambda r: numbers[r.algorithm]):
            by_algorithm.setdefault(r.algorithm, []).append(r)
        candles = [(name, measured) for name, measured in by_algorithm.items()
                   if len(measured) >= 2]
        if candles:
            figures.append(("spread", stem("spread", group[0], f"n{group[0].n}"), candles))
    return figures, numbers


# ---- drawing ---------------------------------------------------------------------------------

FIGSIZE, DPI = (10, 6.5), 100  # 1000 x 650 pixels
MARKERS = "osD^vP*Xph"


def _describe_types(row):
    values = " keys only" if row.value_type == "none" else f" keys, {row.value_type} values"
    return row.key_type + values


def _describe_segments(row):
    if row.segment_size == "0":
        return ""
    if row.segment_size == "powerlaw":
        return ", power-law segments"
    return f", segments of {row.segment_size} keys"


def _describe_count(n):
    return f"2^{n.bit_length() - 1}" if n > 0 and n & (n - 1) == 0 else str(n)


def _subtitle(row):
    return (row.gpu + ", " if row.gpu else "") + "median of the timed runs"


def _style(number):
    import matplotlib

    colors = matplotlib.colormaps["tab10"].colors
    # Past ten algorithms the colors repeat, with another marker.
    return colors[number % len(colors)], MARKERS[(number // len(colors)) % len(MARKERS)]


def _rate_figure(rows, numbers):
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    first = rows[0]
    fig = Figure(figsize=FIGSIZE, dpi=DPI, layout="constrained")
    ax = fig.add_subplot()
    ax.set_title(f"Sorting rate vs n: {_describe_types(first)}, {first.distribution}"
                 f"{_describe_segments(first)}\n{_subtitle(first)}")
    series = {}
    for r in rows:
        series.setdefault(numbers[r.algorithm], []).append(r)
    for number in sorted(series):
        points = sorted(series[number], key=lambda r: r.n)
        color, marker = _style(number)
        ax.plot([r.n for r in points], [r.keys_per_s * 1e-9 for r in points], color=color,
                marker=marker, label=points[0].algorithm)
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(LogLocator(base=2))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"$2^{{{math.log2(x):.0f}}}$"))
    ax.set_xlabel("n (keys, log2 scale)")
    ax.set_ylabel("Gkeys/s")
    ax.set_ylim(bottom=0)
    ax.grid(True, color="0.9")
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1), borderaxespad=0)
    return fig


def _spread_figure(candles, first, numbers):
    from matplotlib.figure import Figure

    fig = Figure(figsize=FIGSIZE, dpi=DPI, layout="constrained")
    ax = fig.add_subplot()
    ax.set_title(f"Keys/s across distributions: {_describe_types(first)}, "
                 f"n = {_describe_count(first.n)}{_describe_segments(first)}\n"
                 f"{_subtitle(first)}\n"
                 "box: 25-75 %, bar: median, whiskers: min to max over the (count) "
                 "distributions", fontsize="medium")
    # The statistics are ours (whiskers at the extremes, no outliers), so bxp draws them as given.
    stats = []
    for name, measured in candles:
        rates = sorted(r.keys_per_s * 1e-9 for r in measured)
        stats.append({"label": f"{name} ({len(rates)})", "whislo": rates[0],
                      "q1": _quantile(rates, 0.25), "med": _quantile(rates, 0.5),
                      "q3": _quantile(rates, 0.75), "whishi": rates[-1], "fliers": []})
    artists = ax.bxp(stats, patch_artist=True, showfliers=False,
                     medianprops={"color": "0.1", "linewidth": 2})
    for box, (name, _) in zip(artists["boxes"], candles):
        color, _marker = _style(numbers[name])
        box.set_facecolor(color)
        box.set_alpha(0.6)
        box.set_edgecolor(color)
    ax.set_ylabel("Gkeys/s")
    ax.set_ylim(bottom=0)
    ax.grid(True, axis="y", color="0.9")
    ax.tick_params(axis="x", labelrotation=30)
    for label in ax.get_xticklabels():
        label.set_horizontalalignment("right")
    return fig


def write_plots(csv_path, out_dir):
    """Draws the figures of `csv_path` into `out_dir`; returns the paths written. Raises
    UsageError for bad input, OSError when the directory or a file cannot be written, and
    ImportError when matplotlib is missing."""
    rows = read_rows(csv_path)
    import matplotlib

    matplotlib.use("Agg")  # files only: never a display
    figures, numbers = plan(rows)
    os.makedirs(out_dir, exist_ok=True)
    written = []
    for kind, stem, content in figures:
        if kind == "rate":
            fig = _rate_figure(content, numbers)
        else:
            fig = _spread_figure(content, content[0][1][0], numbers)
        path = os.path.join(out_dir, stem + ".png")
        # A figure appears whole under its name, or not at all.
        pending = path + ".partial"
        try:
            fig.savefig(pending, format="png")
            os.replace(pending, path)
        finally:
            if os.path.exists(pending):
                os.remove(pending)
        written.append(path)
    return written


def main(argv=None):
    args = sys.argv[1:] if argv is None else argv
    if len(args) == 1 and args[0] in ("-h", "--help", "help"):
        print(__doc__.strip())
        return 0
    if len(args) != 2:
        print(f"{PROG}: needs CSV and DIR (got {len(args)} arguments)", file=sys.stderr)
        return 2
    try:
        written = write_plots(args[0], args[1])
    except UsageError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2
    except ImportError as e:
        print(f"{PROG}: matplotlib is not available to {sys.executable} ({e}); Debian: "
              "apt-get install python3-matplotlib, or set GPUSORT_PYTHON to a Python that has it",
              file=sys.stderr)
        return 2
    except OSError as e:
        where = f"{e.filename}: " if e.filename else ""
        print(f"{PROG}: {where}{e.strerror or e}", file=sys.stderr)
        return 3
    for path in written:
        print(path)
    if not written:
        print(f"{PROG}: {NO_FIGURE}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
