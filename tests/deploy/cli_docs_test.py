#!/usr/bin/env python3
"""Man pages and bash completions describe the CLI that exists (stdlib, bash, man):

  cli_docs_test.py SOURCE_ROOT TWINLANE TWINLANECTL TWINLANE_XDP_CONFIG

For twinlane and twinlanectl, every subcommand and option their `--help` lists (recursively)
is in the man page and offered by the completion at that point, and every option the
completion offers exists; twinlane-xdp-config's options are in its man page; every key of
conf/README.md's key tables is in twinlane-policy(5), whose example passes `twinlane check`; every
man page renders without a groff warning.
"""
import os
import re
import subprocess
import sys
import tempfile

root, twinlane, twinlanectl, xdp_config = sys.argv[1:5]
man_dir = os.path.join(root, "deploy", "man")
completion_dir = os.path.join(root, "deploy", "bash-completion")
problems = []


def run(*argv):
    return subprocess.run(argv, capture_output=True, text=True, timeout=30)


def parse_help(text):
    """(options, subcommands, positional choices) of one CLI11 help text."""
    options, subcommands, choices = set(), [], []
    section = None
    for line in text.splitlines():
        if re.match(r"^(Options|Subcommands|Positionals):$", line):
            section = line[:-1]
            continue
        if section == "Options":
            match = re.match(r"^  (-\w)?,?(--[\w-]+)?", line)
            if match:
                options |= {o for o in match.groups() if o}
        elif section == "Subcommands":
            match = re.match(r"^  (\w+)\s", line)
            if match:
                subcommands.append(match[1])
        elif section == "Positionals":
            match = re.match(r"^  \w+ TEXT:\{([^}]*)\}", line)
            if match:
                choices += match[1].split(",")
    return options, subcommands, choices


def man_text(name):
    """The page's source with roff hyphens and font escapes (\\fB, \\fR, ...) removed."""
    text = open(os.path.join(man_dir, name)).read().replace("\\-", "-")
    return re.sub(r"\\f[BIRP]|\\c", "", text)


def complete(program, words):
    """COMPREPLY for `program words... <TAB>` (the last word being completed)."""
    script = (f"source {os.path.join(completion_dir, program)}\n"
              f"COMP_WORDS=({program} {' '.join(repr(w) for w in words)})\n"
              f"COMP_CWORD={len(words)}\n_{program}\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n")
    env = dict(os.environ, PATH=os.path.dirname(os.path.abspath(twinlanectl)) + ":" +
               os.environ["PATH"])
    out = subprocess.run(["bash", "--norc", "-c", script], capture_output=True, text=True,
                         timeout=30, env=env)
    if out.returncode != 0:
        problems.append(f"completion {program} {words}: {out.stderr.strip()}")
    return set(out.stdout.split())


def check_tree(program, binary, man, path):
    """Walks `binary path... --help`; returns the number of commands checked."""
    options, subcommands, choices = parse_help(run(binary, *path, "--help").stdout)
    where = " ".join([program] + path)
    for option in options:
        if not re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", man):
            problems.append(f"{where}: {option} is not in the man page")
    for sub in subcommands:
        if not re.search(rf"\b{sub}\b", man):
            problems.append(f"{where}: subcommand {sub} is not in the man page")
    offered = complete(program, path + [""])
    # Options are offered when the word typed so far starts with '-'.
    offered_options = complete(program, path + ["-"])
    for option in options:
        if option not in offered_options:
            problems.append(f"{where}: completion does not offer {option}")
    for option in offered_options:
        if option != "--" and option not in options:
            problems.append(f"{where}: completion offers {option}, which --help does not list")
    for word in subcommands + choices:
        if word not in offered:
            problems.append(f"{where}: completion does not offer {word}")
    return 1 + sum(check_tree(program, binary, man, path + [sub]) for sub in subcommands)


commands = check_tree("twinlane", twinlane, man_text("twinlane.8"), [])
commands += check_tree("twinlanectl", twinlanectl, man_text("twinlanectl.8"), [])

usage = run(xdp_config, "--help").stdout
xdp_man = man_text("twinlane-xdp-config.8")
xdp_options = set(re.findall(r"--[\w-]+", usage))
if len(xdp_options) < 5:
    problems.append(f"twinlane-xdp-config --help lists only {xdp_options}")
for option in xdp_options:
    if option not in xdp_man:
        problems.append(f"twinlane-xdp-config: {option} is not in its man page")

policy_man = man_text("twinlane-policy.5")
keys = set()
in_key_table = False  # the tables whose first column is "Key" (not the file or unit tables)
for line in open(os.path.join(root, "conf", "README.md")):
    if not line.startswith("|"):
        in_key_table = False
    elif line.startswith("| Key |"):
        in_key_table = True
    elif in_key_table:
        keys |= set(re.findall(r"`([a-z_.]+)`", line.split("|")[1]))
if len(keys) < 40:
    problems.append(f"conf/README.md: only {len(keys)} keys found in its tables")
for key in sorted(keys):
    if not re.search(rf"\b{re.escape(key.split('.')[-1])}\b", policy_man):
        problems.append(f"twinlane-policy(5): key {key} of conf/README.md is not described")
example = re.search(r"^\.SH EXAMPLE\n\.EX\n(.*?)^\.EE", open(os.path.join(man_dir, "twinlane-policy.5")).read(),
                    re.M | re.S)
if not example:
    problems.append("twinlane-policy(5) has no EXAMPLE")
else:
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
        f.write(example[1].replace("\\-", "-"))
        f.flush()
        checked = run(twinlane, "check", "-c", f.name)
        if checked.returncode != 0:
            problems.append(f"twinlane-policy(5) EXAMPLE: {checked.stdout}{checked.stderr}")

pages = sorted(os.listdir(man_dir))
for page in pages:
    for width in ("60", "80"):
        rendered = subprocess.run(["man", "--warnings", "-E", "UTF-8", "-l", "-Tutf8", "-Z",
                                   os.path.join(man_dir, page)], capture_output=True, text=True,
                                  timeout=30, env=dict(os.environ, LC_ALL="C.UTF-8",
                                                       MANWIDTH=width))
        if rendered.returncode != 0 or rendered.stderr.strip():
            problems.append(f"{page} at width {width}: {rendered.stderr.strip()}")

for problem in problems:
    print(f"FAIL: {problem}", file=sys.stderr)
if not problems:
    print(f"PASS: {commands} commands' options in the man pages and completions, "
          f"{len(xdp_options)} twinlane-xdp-config options, {len(keys)} policy keys, "
          f"{len(pages)} pages render cleanly")
sys.exit(1 if problems else 0)
