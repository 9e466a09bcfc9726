#!/usr/bin/env python3
"""The code a call touches: distinct 64-byte lines of machine code run on every call, from two
callgrind profiles of the same binary with different numbers of calls.

Wall time over rmcp is noisy on a shared two-core machine, and a call that runs right after a
reply from a server runs cold: what it costs there follows how many cache lines it touches more
than how many instructions it runs. Instruction addresses under valgrind are the same from run
to run of one binary, so the lines are countable exactly: an instruction run at least 0.9 times
per call more in the longer profile is on every call's path.

Profiles (`--dump-instr=yes --dump-line=yes`; line tables in the bench binary:
`CARGO_PROFILE_BENCH_DEBUG=line-tables-only cargo bench --bench mcp --no-run`):

    for n in 2000 6000; do
      MCP_BENCH_RUNTIME=current MCP_BENCH_SIDES=harnessx,rmcp MCP_BENCH_ONLY=1 \\
        MCP_BENCH_CALLS=$n valgrind --tool=callgrind --dump-instr=yes --dump-line=yes \\
        --callgrind-out-file=hx-$n.out target/release/deps/mcp-<hash>
    done   # and rm-$n.out with MCP_BENCH_SIDES=rmcp,harnessx

Then:

    python3 benches/footprint.py hx-2000.out hx-6000.out 4000
    python3 benches/footprint.py hx-2000.out hx-6000.out 4000 rm-2000.out rm-6000.out

The first prints the lines per call and how they split by source file (inlined code counts
under its own file); the second only the lines the first side runs and the second does not.
The engine bench works the same way (`ENGINE_SIDE=<n> ENGINE_CALLS=<n>`).
"""

import collections
import os
import re
import sys

# A line is on every call's path when it runs at least this many times per call more.
EVERY_CALL = 0.9


def parse(path):
    """Two maps of instruction addresses: to the instructions run there (its own, not those of
    the functions it calls), and to the source file it was compiled from (inlined code: its own
    file)."""
    cost = collections.Counter()
    where = {}
    names = {}
    file = inlined = None
    position = [0, 0]
    skip_call_cost = False

    def name(kind, rest):
        # Callgrind compresses names: "(12) name" the first time, "(12)" after.
        found = re.match(r"\((\d+)\)(?:\s+(.*))?", rest)
        if not found:
            return rest
        table = names.setdefault(kind, {})
        if found.group(2) is not None:
            table[found.group(1)] = found.group(2)
        return table.get(found.group(1), found.group(1))

    def sub(token, previous):
        if token == "*":
            return previous
        if token[0] in "+-":
            return previous + int(token, 0)
        return int(token, 0)

    with open(path, errors="replace") as profile:
        for line in profile:
            if not line.strip() or line[0] == "#":
                continue
            if line[0].isalpha():
                key, _, rest = line.rstrip("\n").partition("=")
                if key == "fl":
                    file, inlined = name("fl", rest), None
                elif key in ("fi", "fe"):
                    inlined = name("fl", rest)
                elif key == "fn":
                    inlined = None
                elif key in ("cfi", "cfl"):
                    name("fl", rest)
                elif key == "calls":
                    # The next cost line is the call's inclusive cost, not this code's own.
                    skip_call_cost = True
                continue
            parts = line.split()
            if len(parts) < 2:
                continue
            address, source_line = sub(parts[0], position[0]), sub(parts[1], position[1])
            position = [address, source_line]
            if skip_call_cost:
                skip_call_cost = False
                continue
            cost[address] += int(parts[2]) if len(parts) > 2 else 0
            where[address] = inlined or file
    return cost, where


def every_call(short, long, calls):
    """Code lines (address // 64) run on every call -> the source files of their instructions."""
    short_cost, _ = parse(short)
    long_cost, where = parse(long)
    lines = collections.defaultdict(set)
    for address, ran in long_cost.items():
        if ran - short_cost.get(address, 0) >= EVERY_CALL * calls:
            lines[address >> 6].add(where[address])
    return lines


def shorten(path):
    path = re.sub(r".*/registry/src/[^/]*/", "", path)
    path = re.sub(r".*/rustc/[0-9a-f]+/", "std: ", path)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + "/"
    return path.replace(root, "")


def main(argv):
    if len(argv) not in (4, 6):
        sys.exit(__doc__)
    calls = int(argv[3])
    lines = every_call(argv[1], argv[2], calls)
    if len(argv) == 6:
        other = every_call(argv[4], argv[5], calls)
        lines = {line: files for line, files in lines.items() if line not in other}
        print(f"{len(lines)} code lines a call that the second side does not run")
    else:
        print(f"{len(lines)} code lines a call")
    by_file = collections.Counter()
    for files in lines.values():
        for file in files:
            by_file[file] += 1 / len(files)
    for file, count in by_file.most_common(40):
        print(f"{count:7.1f}  {shorten(file)}")


if __name__ == "__main__":
    main(sys.argv)
