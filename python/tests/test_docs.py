"""docs/: every measured figure comes from results/bench/*.json through docs/figures.md or
sits on a page of docs/history/ that says it is a record of a past run. A date
(YYYY-MM-DD) on any other page is the mark of a figure quoted from one run; and as
mkdocs 1.4 does not check the #anchor of a link, the heading each one names is checked
here."""

import html
import os
import re
import unicodedata
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCS = os.path.join(ROOT, "docs")
DATE = re.compile(r"(?<![0-9])[0-9]{4}-[0-9]{2}-[0-9]{2}(?![0-9])")
LINK = re.compile(r"\]\(([^()\s]*)\)")


def pages(top):
    """Every .md file under TOP, as paths relative to ROOT, in a stable order."""
    found = []
    for d, dirs, files in os.walk(top):
        dirs.sort()
        found += [os.path.relpath(os.path.join(d, f), ROOT) for f in sorted(files)
                  if f.endswith(".md")]
    return found


def may_carry_dates(page):
    """figures.md is generated with each benchmark's date; docs/history/ is the record."""
    return page in ("docs/figures.md",) or page.startswith("docs/history/")


def prose_lines(path):
    """(line number, line) of PATH outside fenced code blocks."""
    fenced = False
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if line.lstrip().startswith("```"):
                fenced = not fenced
            elif not fenced:
                yield number, line


def slug(heading):
    """The id Python-Markdown's toc extension (mkdocs' default) gives a heading."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = html.unescape(text.replace("`", "").replace("*", ""))
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(path):
    """The ids of PATH's headings, the second of a name suffixed _1 as the toc does."""
    ids = set()
    for _, line in prose_lines(path):
        m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            base = slug(m.group(1))
            name, n = base, 0
            while name in ids:
                n += 1
                name = "%s_%d" % (base, n)
            ids.add(name)
    return ids


class HowToPages(unittest.TestCase):
    def test_only_figures_md_and_history_carry_dates(self):
        found = []
        for page in pages(DOCS):
            if may_carry_dates(page):
                continue
            with open(os.path.join(ROOT, page), encoding="utf-8") as f:
                for number, line in enumerate(f, 1):
                    if DATE.search(line):
                        found.append("%s:%d: %s" % (page, number, line.strip()))
        if found:
            self.fail("a dated figure belongs in docs/history/figures.md (a record of a past "
                      "run), or in results/bench/*.json rendered into docs/figures.md; the "
                      "page can link to it:\n" + "\n".join(found))

    def test_the_date_pattern(self):
        self.assertTrue(DATE.search("measured 2026-11-27:"))
        self.assertFalse(DATE.search("results/<date>-<name>/, 10.0.0.0/8, 1-2-3"))
        self.assertFalse(DATE.search("id 12026-11-270"))


class Links(unittest.TestCase):
    def test_every_anchor_names_a_heading_of_its_page(self):
        sources = pages(DOCS) + ["README.md", os.path.join("experiments", "README.md")]
        cache, broken = {}, []
        for page in sources:
            path = os.path.join(ROOT, page)
            for number, line in prose_lines(path):
                for target in LINK.findall(line):
                    if "#" not in target or "://" in target:
                        continue
                    file, anchor = target.split("#", 1)
                    dest = os.path.normpath(os.path.join(os.path.dirname(path), file)) \
                        if file else path
                    if not dest.startswith(DOCS + os.sep) or not dest.endswith(".md"):
                        continue
                    if dest not in cache:
                        cache[dest] = anchors(dest) if os.path.exists(dest) else set()
                    if anchor not in cache[dest]:
                        broken.append("%s:%d: %s" % (page, number, target))
        if broken:
            self.fail("no heading of that page has the anchor:\n" + "\n".join(broken))

    def test_slugs_as_the_toc_extension_makes_them(self):
        self.assertEqual(slug("`xdc check` of the two-DC WAN"), "xdc-check-of-the-two-dc-wan")
        self.assertEqual(slug("Native vs Mininet backend: a run and `xdc check`"),
                         "native-vs-mininet-backend-a-run-and-xdc-check")
        self.assertEqual(slug("Several connections per transfer (Atlas)"),
                         "several-connections-per-transfer-atlas")


if __name__ == "__main__":
    unittest.main()
