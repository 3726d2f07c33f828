"""Writes the fuzz targets' seed corpora, tests/fuzz/corpus/TARGET/, from the files the
repository ships and the tests' bad-input fixtures:

    python3 tests/fuzz/make_corpus.py

Also writes tests/fuzz/dict/TARGET.dict for the YAML targets: libFuzzer dictionaries of
the words their parsers know (keys, choices, units; every short lowercase string literal
in the sources that read them) and YAML's punctuation.

Seeds are named after where they came from (topologies/two-dc.yaml ->
topologies_two-dc.yaml). Every YAML input is parsed as experiments/fuzz-input.yaml
(tests/fuzz/fuzz_input.h), so a seed's relative file paths are rewritten to resolve from
experiments/ as they did from the seed's own folder. Files already in a corpus (the
crash fixtures, the seeds written by hand) are kept; seeds are added or updated.
"""

import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
CORPUS = os.path.join(ROOT, "tests", "fuzz", "corpus")
LABEL_DIR = os.path.join(ROOT, "experiments")

# A relative path to a file a YAML document names: a scalar ending in one of these.
PATH_RE = re.compile(r"(?<=[\s\[{,:])([A-Za-z0-9_.][A-Za-z0-9_./-]*\.(?:yaml|csv|mahi))\b")


def rebase(text, src_dir):
    """TEXT with each relative path that exists from SRC_DIR made relative to LABEL_DIR."""
    def repl(m):
        path = m.group(1)
        full = os.path.normpath(os.path.join(src_dir, path))
        if not os.path.exists(full):
            return path
        return os.path.relpath(full, LABEL_DIR)
    return PATH_RE.sub(repl, text)


def kind_of(path, text):
    """The target a shipped YAML file belongs to, by folder, else by its top-level keys."""
    rel = os.path.relpath(path, ROOT)
    if rel.startswith("tests/topology/"):
        return "topology"
    if rel.startswith("tests/sweep/"):
        return "sweep"
    keys = set(re.findall(r"^([a-z_]+):", text, re.M))
    if keys & {"grid", "zip"}:
        return "sweep"
    if "machines" in keys:
        return "lab"
    if keys & {"pipeline", "schedules", "topology"}:
        return "experiment"
    if "dcs" in keys:
        return "topology"
    return None


def seed_name(path):
    return os.path.relpath(path, ROOT).replace(os.sep, "_")


def write(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def files(*patterns):
    out = []
    for top, exts in patterns:
        for dirpath, _, names in os.walk(os.path.join(ROOT, top)):
            if "/corpus" in dirpath:
                continue
            out += [os.path.join(dirpath, n) for n in sorted(names) if n.endswith(exts)]
    return sorted(out)


# ---- C++ string expressions of tests/run/experiment_test.cpp's bad-input table --------

TOKEN_RE = re.compile(r'\s*(R"\((.*?)\)"|"((?:[^"\\]|\\.)*)"|[A-Za-z_]\w*|[(),+])', re.S)


def cpp_string(body):
    return bytes(body, "utf-8").decode("unicode_escape")


def tokens(src):
    pos, out = 0, []
    while pos < len(src):
        m = TOKEN_RE.match(src, pos)
        if not m:
            break
        if m.group(2) is not None:
            out.append(("str", m.group(2)))
        elif m.group(3) is not None:
            out.append(("str", cpp_string(m.group(3))))
        else:
            out.append(("tok", m.group(1).strip()))
        pos = m.end()
    return out, pos


def eval_expr(toks, i, env):
    """Evaluates a sum of literals, kGood and with(a, b) from toks[i]; (value, next i)."""
    value = ""
    while True:
        kind, t = toks[i]
        if kind == "str":
            part, i = t, i + 1
            while i < len(toks) and toks[i][0] == "str":  # adjacent literals concatenate
                part, i = part + toks[i][1], i + 1
        elif t == "with":
            a, i = eval_expr(toks, i + 2, env)
            b, i = eval_expr(toks, i + 1, env)
            i += 1
            part = env["kGood"].replace(a, b, 1)
        else:
            part, i = env[t], i + 1
        value += part
        if i < len(toks) and toks[i] == ("tok", "+"):
            i += 1
            continue
        return value, i


def experiment_table(path):
    """(name, text) of each Bad{...} case in the experiment test's table."""
    src = open(path).read()
    good = re.search(r'const std::string kGood = R"\((.*?)\)";', src, re.S).group(1)
    env = {"kGood": good}
    out = []
    for m in re.finditer(r'Bad\{"([a-z0-9_]+)",', src):
        toks, _ = tokens(src[m.end():m.end() + 2000])
        try:
            text, _ = eval_expr(toks, 0, env)
        except (KeyError, IndexError):
            continue
        out.append((m.group(1), text))
    return out


# The sources whose string literals make each YAML target's dictionary.
COMMON_SOURCES = ["harness/common/units.cpp", "harness/common/yaml_reader.cpp"]
TOPOLOGY_SOURCES = ["harness/topology/" + f for f in
                    ("parse_topology.cpp", "link_yaml.cpp", "changes_yaml.cpp", "trace_csv.cpp",
                     "tcp_yaml.cpp")]
EXPERIMENT_SOURCES = TOPOLOGY_SOURCES + [
    "harness/experiment/experiment_parser.cpp", "harness/sim/cost_model.cpp",
    "workloads/model/config.cpp", "workloads/schedule/generators.cpp"]
DICT_SOURCES = {
    "topology": TOPOLOGY_SOURCES,
    "changes": ["harness/topology/changes_yaml.cpp"],
    "experiment": EXPERIMENT_SOURCES,
    "sweep": EXPERIMENT_SOURCES + ["harness/sweep/sweep.cpp"],
    "lab": ["harness/lab/lab.cpp"],
}
YAML_TOKENS = [": ", "- ", "\n", "\n  ", "\n- ", "{", "}", "[", "]", ", ", "#", "'", '"', "&a ",
               "*a", "!!str ", "|\n", ">\n", "---\n", "...\n", "? ", "~", "null", "true", "1e9"]


def dict_entry(token):
    """TOKEN as a libFuzzer dictionary line: quoted, with \\, \\" and \\xNN escapes."""
    out = ""
    for c in token:
        if c in "\\\"":
            out += "\\" + c
        elif " " <= c <= "~":
            out += c
        else:
            out += "\\x%02X" % ord(c)
    return '"' + out + '"'


def dictionary(sources):
    words = set()
    for src in COMMON_SOURCES + sources:
        text = open(os.path.join(ROOT, src)).read()
        words |= set(re.findall(r'"([a-z0-9][a-z0-9_.%-]{0,30})"', text))
    tokens = YAML_TOKENS + sorted(words) + [w + ": " for w in sorted(words)]
    return "# Generated by tests/fuzz/make_corpus.py.\n" + "\n".join(map(dict_entry, tokens)) + "\n"


def main():
    os.makedirs(os.path.join(ROOT, "tests", "fuzz", "dict"), exist_ok=True)
    for target, sources in DICT_SOURCES.items():
        with open(os.path.join(ROOT, "tests", "fuzz", "dict", target + ".dict"), "w") as f:
            f.write(dictionary(sources))
    n = 0
    for path in files(("topologies", ".yaml"), ("experiments", ".yaml"), ("tests", ".yaml")):
        text = open(path).read()
        kind = kind_of(path, text)
        if kind:
            write(kind, seed_name(path), rebase(text, os.path.dirname(path)))
            n += 1
    run_dir = os.path.join(ROOT, "tests", "run")
    for name, text in experiment_table(os.path.join(run_dir, "experiment_test.cpp")):
        write("experiment", "experiment_test_" + name + ".yaml", rebase(text, run_dir))
        n += 1
    for path in files(("experiments/traces", ".csv")):
        write("trace_csv", seed_name(path), open(path, "rb").read())
        n += 1
    for path in files(("experiments/traces", ".mahi")):
        write("mahimahi", seed_name(path), open(path, "rb").read())
        n += 1
    for path in files(("experiments/profiles", ".csv")):
        write("profile_csv", seed_name(path), open(path, "rb").read())
        n += 1
    for path in files(("tests/schedule", ".csv")):
        write("schedule_csv", seed_name(path), open(path, "rb").read())
        n += 1
    print("make_corpus: %d seeds written under %s" % (n, os.path.relpath(CORPUS, ROOT)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
