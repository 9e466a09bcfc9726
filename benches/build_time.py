#!/usr/bin/env python3
"""Build time of 100 tools: harnessx `#[tool]` functions beside rmcp `#[tool_router]` methods.

What a user waits for after touching a file of 100 `#[tool]`s, beside rmcp on the same machine,
with the features a typical user enables. This script writes a scratch Cargo workspace
with two binaries that do the same thing — define 100 two-argument async tools with doc strings,
register them all, print how many there are — one on harnessx (default features), one on rmcp
(default features: `server`, `macros`, `base64`), both with cargo's default `dev` profile. It
builds both once, then in interleaved rounds touches each side's `tools.rs` and times

  * `cargo build` (what the issue measures: macro expansion, type checking, code generation
    and linking of the binary), and
  * `cargo check` (the front end alone: macro expansion and type checking),

and prints the medians, their ratio, and the binaries' sizes. The default features are
`providers` alone. Three more harnessx sides show what features cost a binary that uses none of
them: `hx100-integrations` adds the opt-in `knowledge`, `okf` and `skills` (the defaults until
they were made opt-in), `hx100-mcp` adds the opt-in `mcp`, `hx100-bare` has
`default-features = false`; with `--each-feature`, `hx100-<feature>` has each of `providers`,
`knowledge`, `okf` and `skills` alone, to see what each costs.

    python3 benches/build_time.py            # 7 rounds, scratch dir $TMPDIR/harnessx-build-time-bench
    python3 benches/build_time.py --rounds 3 --dir /tmp/bt
    python3 benches/build_time.py --rounds 9 --each-feature   # and each feature alone

The scratch workspace must lie outside this checkout: cargo reads the checkout's
`.cargo/config.toml` (its lighter debug information) for any workspace below it, and a user's
crate builds with cargo's default `dev` profile.

The repository's `Cargo.lock` is copied in so both sides build the same dependency versions as
the workspace. Needs network access to crates.io only if a dependency is not yet downloaded.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parent.parent
TOOLS = 100


def harnessx_tools() -> str:
    out = ["//! 100 tools, each a documented `#[tool]` function.", "", "use harnessx::tool;", ""]
    for i in range(TOOLS):
        out += [
            f"/// Adds two numbers and {i}.",
            "///",
            "/// Args:",
            "///     left: The first number.",
            "///     right: The second number.",
            "#[tool]",
            f"pub async fn add_{i}(left: i64, right: i64) -> i64 {{",
            f"    left + right + {i}",
            "}",
            "",
        ]
    out.append("/// Registers every tool.")
    out.append("pub fn register(registry: &harnessx::ToolRegistry) {")
    for i in range(TOOLS):
        out.append(f"    registry.register_tool(add_{i}).expect(\"add_{i}\");")
    out.append("}")
    return "\n".join(out) + "\n"


HARNESSX_MAIN = """mod tools;

fn main() {
    let registry = harnessx::ToolRegistry::new();
    tools::register(&registry);
    println!("{} tools", registry.len());
}
"""


def rmcp_tools() -> str:
    out = [
        "//! 100 tools, each a documented method of one `#[tool_router]` impl.",
        "",
        "use rmcp::handler::server::router::tool::ToolRouter;",
        "use rmcp::handler::server::wrapper::Parameters;",
        "use rmcp::{schemars, tool, tool_router};",
        "",
    ]
    for i in range(TOOLS):
        out += [
            f"/// The arguments of `add_{i}`.",
            "#[derive(serde::Deserialize, schemars::JsonSchema)]",
            f"pub struct Add{i} {{",
            "    /// The first number.",
            "    pub left: i64,",
            "    /// The second number.",
            "    pub right: i64,",
            "}",
            "",
        ]
    out += [
        "/// The server holding the tools.",
        "pub struct Server {",
        "    /// Its tools.",
        "    pub tool_router: ToolRouter<Server>,",
        "}",
        "",
        "#[tool_router]",
        "impl Server {",
    ]
    for i in range(TOOLS):
        out += [
            f"    /// Adds two numbers and {i}.",
            "    #[tool]",
            f"    async fn add_{i}(&self, Parameters(Add{i} {{ left, right }}): Parameters<Add{i}>) -> String {{",
            f"        (left + right + {i}).to_string()",
            "    }",
            "",
        ]
    out += [
        "}",
        "",
        "impl Server {",
        "    /// The server with every tool.",
        "    pub fn new() -> Self {",
        "        Self { tool_router: Self::tool_router() }",
        "    }",
        "}",
    ]
    return "\n".join(out) + "\n"


RMCP_MAIN = """mod tools;

fn main() {
    let server = tools::Server::new();
    println!("{} tools", server.tool_router.list_all().len());
}
"""


# The harnessx sides: (package, what its `harnessx` dependency adds to the path, label).
HARNESSX_SIDES = [
    ("hx100", "", "harnessx (default features: `providers`)"),
    ("hx100-integrations", ', features = ["knowledge", "okf", "skills"]',
     "harnessx + `knowledge`, `okf`, `skills`"),
    ("hx100-mcp", ', features = ["mcp"]', "harnessx + `mcp`"),
    ("hx100-bare", ", default-features = false", "harnessx, no default features"),
]

# Features, each alone (`--each-feature`): what each one costs the link.
FEATURES = ["providers", "knowledge", "okf", "skills"]


def each_feature_sides() -> list[tuple[str, str, str]]:
    return [
        (f"hx100-{feature}", f', default-features = false, features = ["{feature}"]',
         f"harnessx, `{feature}` alone")
        for feature in FEATURES
    ]


def write_workspace(root: pathlib.Path, harnessx: pathlib.Path, sides: list[tuple[str, str, str]]) -> None:
    root.mkdir(parents=True, exist_ok=True)
    members = ", ".join(f'"{package}"' for package, _, _ in sides)
    (root / "Cargo.toml").write_text(
        f'[workspace]\nresolver = "3"\nmembers = [{members}, "rmcp100"]\n'
    )
    shutil.copy(REPO / "Cargo.lock", root / "Cargo.lock")
    common = 'schemars = "1"\nserde = { version = "1", features = ["derive"] }\n'
    crates = {
        package: (f'harnessx = {{ path = "{harnessx}"{extra} }}\n' + common, harnessx_tools(), HARNESSX_MAIN)
        for package, extra, _ in sides
    }
    crates["rmcp100"] = ('rmcp = "3.11"\n' + common, rmcp_tools(), RMCP_MAIN)
    for name, (deps, tools, main) in crates.items():
        src = root / name / "src"
        src.mkdir(parents=True, exist_ok=True)
        (root / name / "Cargo.toml").write_text(
            f'[package]\nname = "{name}"\nversion = "0.1.0"\nedition = "2024"\npublish = false\n\n'
            f"[dependencies]\n{deps}"
        )
        (src / "tools.rs").write_text(tools)
        (src / "main.rs").write_text(main)


def cargo(root: pathlib.Path, verb: str, package: str) -> float:
    env = dict(os.environ)
    env.pop("CARGO_TARGET_DIR", None)  # the scratch workspace's own target dir
    start = time.perf_counter()
    subprocess.run(
        ["cargo", verb, "--quiet", "-p", package],
        cwd=root,
        env=env,
        check=True,
    )
    return time.perf_counter() - start


def touch(root: pathlib.Path, package: str) -> None:
    (root / package / "src" / "tools.rs").touch()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument(
        "--dir",
        default=str(pathlib.Path(tempfile.gettempdir()) / "harnessx-build-time-bench"),
        help="the scratch workspace, outside this checkout",
    )
    parser.add_argument(
        "--harnessx",
        default=str(REPO / "harnessx"),
        help="the harnessx crate to build (a snapshot, e.g. a `git worktree`, keeps edits to this "
        "checkout out of the run)",
    )
    parser.add_argument(
        "--each-feature",
        action="store_true",
        help="also time each feature alone (`default-features = false, features = [..]`)",
    )
    args = parser.parse_args()
    root = pathlib.Path(args.dir).resolve()
    if root == REPO or REPO in root.parents:
        parser.error(
            f"--dir {root} is inside the checkout {REPO}, whose .cargo/config.toml would change "
            "the profile both sides build with; give a directory outside it"
        )
    sides = HARNESSX_SIDES + (each_feature_sides() if args.each_feature else [])
    write_workspace(root, pathlib.Path(args.harnessx).resolve(), sides)
    packages = [package for package, _, _ in sides] + ["rmcp100"]
    print("warming: building both sides once (dependencies included)...", flush=True)
    for package in packages:
        cargo(root, "build", package)
        cargo(root, "check", package)
    times: dict[tuple[str, str], list[float]] = {(p, v): [] for p in packages for v in ("build", "check")}
    for r in range(args.rounds):
        # Alternate which side goes first, so drift in machine load falls on both.
        order = packages[r % len(packages):] + packages[: r % len(packages)]
        for package in order:
            for verb in ("build", "check"):
                touch(root, package)
                times[(package, verb)].append(cargo(root, verb, package))
        print(f"round {r + 1}/{args.rounds} done", flush=True)
    print(f"\n| after touching tools.rs (100 tools), median of {args.rounds} | `cargo build` | ratio to rmcp "
          "| `cargo check` | ratio to rmcp | binary |\n|---|---|---|---|---|---|")
    for package, _, label in sides + [("rmcp100", "", "rmcp")]:
        build = statistics.median(times[(package, "build")])
        check = statistics.median(times[(package, "check")])
        rm_build = statistics.median(times[("rmcp100", "build")])
        rm_check = statistics.median(times[("rmcp100", "check")])
        size = (root / "target" / "debug" / package).stat().st_size / 1e6
        print(f"| {label} | {build:.2f} s | {build / rm_build:.2f}x | {check:.2f} s "
              f"| {check / rm_check:.2f}x | {size:.0f} MB |")
    print("raw:", {f"{p} {v}": [round(t, 2) for t in ts] for (p, v), ts in times.items()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
