"""The batch's HTML in a real headless browser (Debian's chromium), at 1280 px: per-student feedback
and the class report render without errors, failures come before passes, every heatmap has its
legend, the class's student x exercise grid is readable (every label at least 10 px, measured in
the page), its links reach the students' feedback, its tables sort, student output cannot run
script, nothing is fetched from the network, and no file a student gets names a folder of the
grading machine.

Each page is checked twice: a copy with a probe script (errors, CSP violations, element boxes,
a click on a sort button) through --dump-dom, and the page itself as a screenshot whose chart,
grid and heatmap areas must hold a picture (pixel variance), not blank space. Chromium runs with
host resolution disabled, so a page that needed the network would show broken images. Skipped
only if chromium cannot be installed (scripts/ensure-chromium).
"""
import html as htmlmod
import json
import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from conftest import ROOT
from fixtures.batch.build import make_class, run_batch

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--force-device-scale-factor=1", "--host-resolver-rules=MAP * ~NOTFOUND",
         "--enable-logging=stderr", "--v=0"]
WIDTH = 1280
XSS = "<script>document.body.setAttribute('data-pwned', '1')</script><img src=x onerror=\"document.body.setAttribute('data-pwned', '2')\">"
# Measured after load; EXTRA (per page) adds fields to `out`. Inserted before the page's own CSP,
# so the page's policy does not apply to it; a violation by the page itself is recorded.
PROBE = """<script>
window.__errors = [];
window.addEventListener('error', function (e) {
  var t = e.target;
  if (t && t !== window && (t.src || t.href)) { window.__errors.push('failed to load ' + String(t.src || t.href).slice(0, 60)); }
  else { window.__errors.push('error: ' + e.message); }
}, true);
window.addEventListener('unhandledrejection', function (e) { window.__errors.push('rejection: ' + e.reason); });
document.addEventListener('securitypolicyviolation', function (e) { window.__errors.push('csp: ' + e.violatedDirective); });
(function () { var ce = console.error; console.error = function () {
  window.__errors.push('console.error: ' + Array.prototype.join.call(arguments, ' ')); ce.apply(console, arguments); }; })();
function box(el) { var r = el.getBoundingClientRect();
  return {x: r.left + window.scrollX, y: r.top + window.scrollY, w: r.width, h: r.height}; }
function all(sel) { return Array.prototype.slice.call(document.querySelectorAll(sel)); }
window.addEventListener('load', function () {
  var out = {errors: window.__errors, height: document.documentElement.scrollHeight,
    width: document.documentElement.clientWidth,
    images: all('img').map(function (i) {
      return {figure: i.closest('figure') ? i.closest('figure').id : '', complete: i.complete, natural: i.naturalWidth, box: box(i)}; }),
    heatmaps: all('table.grid[role=img]').map(box),
    pwned: document.body.getAttribute('data-pwned'), scripts: document.scripts.length};
  /*EXTRA*/
  var pre = document.createElement('pre'); pre.id = '__probe'; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""
# The student report: where failures and passes are, and each heatmap with its legends.
STUDENT = """
  out.cards = all('section.exercise').map(function (s) { return {id: s.id, y: box(s).y}; });
  var passed = document.getElementById('passed');
  out.passed = passed ? {y: box(passed).y, open: passed.open, rows: all('#passed tr').length,
    shown: all('#passed tr').filter(function (r) { return r.checkVisibility(); }).length} : null;
  out.folded = all('.heatmap-set').filter(function (s) { return !s.checkVisibility(); }).length;
  out.sets = all('.heatmap-set').filter(function (s) { return s.checkVisibility(); }).map(function (s) {
    return {grids: Array.prototype.map.call(s.querySelectorAll('table.grid'), box),
            legends: Array.prototype.map.call(s.querySelectorAll('.legend'), function (l) {
              var bar = l.querySelector('.legend-bar');
              return {box: box(l), bar: box(bar), image: getComputedStyle(bar).backgroundImage,
                      ticks: l.querySelector('.legend-ticks').textContent}; }),
            titled: Array.prototype.every.call(s.querySelectorAll('table.grid td'), function (td) { return td.title.length > 0; })}; });
"""
# The class report: every label of the grid, measured; a click on the score column's sort button.
CLASS = """
  out.labels = all('#grid .label').map(function (el) {
    var r = el.getBoundingClientRect(), clip = el.closest('th');
    return {text: el.textContent, w: r.width, h: r.height, font: parseFloat(getComputedStyle(el).fontSize),
            cut: el.scrollWidth > el.clientWidth + 1 || el.scrollHeight > el.clientHeight + 1,
            module: !!el.closest('tr.modules'), link: el.tagName === 'A'}; });
  out.grid = box(document.getElementById('grid'));
  out.cells = all('#grid tbody td:not(.total) a').length;
  function order() { return all('#grid tbody tr').map(function (tr) { return tr.getAttribute('data-student'); }); }
  out.before = order();
  var button = document.querySelector('#grid th[data-col="1"] button.sort');
  out.sortable = !!button;
  if (button) { button.click(); out.up = order(); button.click(); out.down = order(); }
"""


@pytest.fixture(scope="session")
def chromium():
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        setup = subprocess.run([str(ROOT / "scripts" / "ensure-chromium")], capture_output=True, text=True, timeout=900)
        found = shutil.which("chromium") or shutil.which("chromium-browser")
        if not found:
            pytest.skip("chromium is not installed and scripts/ensure-chromium could not install it: "
                        + (setup.stderr or setup.stdout)[-500:].strip())
    return found


@pytest.fixture(scope="module")
def batch_root(tmp_path_factory):
    """A real batch: right, wrong (with heatmaps), printing HTML, a syntax error, a zip, broken and empty ones."""
    root = tmp_path_factory.mktemp("browser")
    subs = make_class(root / "subs", {
        "ok": "correct", "ok2": "correct",
        "bug": {"causal_mask": "inverted", "positional_encoding": "swapped"},
        "bug2": {"causal_mask": "transposed"},
        "xss": {"causal_mask": f"def causal_mask(T):\n    print({XSS!r})\n    import torch\n"
                               "    return torch.tril(torch.ones(T, T, dtype=torch.bool))\n"},
        "syntax": "syntax_error", "zipped": "zip:correct", "broken": "corrupt.zip", "nothing": "empty"})
    env = {k: v for k, v in os.environ.items() if k != "GRADER_SECRET_SEED"}
    proc = run_batch(subs, root / "out", "attention.causal_mask", "attention.positional_encoding", env=env,
                     extra=("--config", str(ROOT / "autograde.toml")))          # named by an absolute path
    assert proc.returncode == 0, proc.stderr[-3000:]
    return root


@pytest.fixture(scope="module")
def batch_out(batch_root):
    return batch_root / "out"


@pytest.fixture(scope="module")
def big_class(tmp_path_factory):
    """60 students x every exercise of the course, with their feedback files, as batch writes them."""
    from test_batch_class_report import course_rows

    from grader.frontends.batch import class_report, outputs

    out = tmp_path_factory.mktemp("class60")
    rows = course_rows(60)
    for r in rows:
        outputs.write_student(str(out), r.student, r.result, "visible")
    (out / "class_report.html").write_text(
        class_report.render(class_report.class_stats(rows), "Course", {"exercises": "61 exercises"}), encoding="utf-8")
    return out, {r.student: r.final for r in rows}


def browse(chromium, page: Path, tmp_path: Path, *args: str, height: int = 1000) -> subprocess.CompletedProcess:
    profile = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"
    cmd = [chromium, *FLAGS, f"--user-data-dir={profile}", f"--window-size={WIDTH},{height}",
           "--virtual-time-budget=10000", *args, page.as_uri()]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def probe(chromium, page: Path, tmp_path: Path, extra: str = "") -> dict:
    text = page.read_text(encoding="utf-8")
    probed = page.parent / f".probed-{page.name}"            # beside the page: its relative links still resolve
    probed.write_text(text.replace("<head>", "<head>" + PROBE.replace("/*EXTRA*/", extra), 1), encoding="utf-8")
    try:
        done = browse(chromium, probed, tmp_path, "--dump-dom")
    finally:
        probed.unlink()
    found = re.search(r'<pre id="__probe">(.*?)</pre>', done.stdout, re.S)
    assert found, f"the probe did not run in {page}: {done.stdout[-500:]}"
    assert not console_errors(done.stderr), console_errors(done.stderr)
    return json.loads(htmlmod.unescape(found.group(1)))


def console_errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines()
            if "CONSOLE" in line and ("Uncaught" in line or "rror" in line or "Refused" in line)]


def visible(chromium, page: Path, tmp_path: Path, boxes: list[dict]) -> list[float]:
    """Screenshot `page` and return the pixel standard deviation inside each box."""
    from PIL import Image, ImageStat

    height = min(int(max(b["y"] + b["h"] for b in boxes)) + 50, 16000)
    shot = tmp_path / f"shot-{page.parent.name}-{page.name}.png"
    done = browse(chromium, page, tmp_path, f"--screenshot={shot}", height=height)
    assert shot.exists(), done.stderr[-1000:]
    assert not console_errors(done.stderr), console_errors(done.stderr)
    image = Image.open(shot).convert("L")
    spreads = []
    for b in boxes:
        region = image.crop((int(b["x"]), int(b["y"]), int(b["x"] + b["w"]), int(b["y"] + b["h"])))
        spreads.append(ImageStat.Stat(region).stddev[0])
    return spreads


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.urls, self.tags = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.urls += [v for k, v in attrs if k in ("src", "href", "srcset", "poster", "data", "action") and v]


def assert_offline(text: str) -> None:
    links = _Links()
    links.feed(text)
    external = [u for u in links.urls if re.match(r"\s*(https?:)?//", u, re.I)]
    assert not external, external
    assert not re.search(r"url\(\s*['\"]?(https?:)?//|@import", text, re.I)


def test_class_report_in_a_browser(chromium, batch_out, tmp_path):
    page = batch_out / "class_report.html"
    assert_offline(page.read_text())
    seen = probe(chromium, page, tmp_path, CLASS)
    assert seen["errors"] == [] and seen["scripts"] == 2            # the probe and the report's sort script
    charts = {i["figure"]: i for i in seen["images"]}
    assert set(charts) == {"chart-histogram"}                        # the rest is HTML
    for name, img in charts.items():
        assert img["complete"] and img["natural"] > 100, name
        assert img["box"]["w"] > 200 and img["box"]["h"] > 100, name
    assert seen["cells"] == 9 * 2 and seen["sortable"]
    spreads = visible(chromium, page, tmp_path, [i["box"] for i in charts.values()] + [seen["grid"]])
    assert all(s > 20 for s in spreads), spreads


def test_every_link_of_the_class_report_reaches_a_students_feedback(batch_out):
    page = BeautifulSoup((batch_out / "class_report.html").read_text(), "html.parser")
    links = [a["href"] for a in page.select("a[href]")]
    cells = [a["href"] for a in page.select("#grid tbody td:not(.total) a")]
    assert len(cells) == 9 * 2 and set(cells) <= set(links)
    targets = {}
    for href in links:
        path, _, anchor = href.partition("#")
        target = (batch_out / path).resolve()
        assert target.is_file() and batch_out.resolve() in target.parents, href      # relative, inside out/
        if anchor:
            if target not in targets:
                targets[target] = {el["id"] for el in BeautifulSoup(target.read_text(), "html.parser").select("[id]")}
            assert anchor in targets[target], href


def test_the_grid_of_a_class_of_60_is_readable_at_1280_px_and_sorts(chromium, big_class, tmp_path):
    out, scores = big_class
    page = out / "class_report.html"
    seen = probe(chromium, page, tmp_path, CLASS)
    assert seen["errors"] == [] and seen["width"] == WIDTH
    labels = seen["labels"]
    students = [x for x in labels if x["link"]]
    exercises = [x for x in labels if not x["link"] and not x["module"]]
    assert len(students) == 60 and len(exercises) == 61 and seen["cells"] == 60 * 61
    for x in labels:                           # a rotated label's width is its letters' height
        assert x["font"] >= 10 and min(x["w"], x["h"]) >= 10, x
    assert not [x["text"] for x in students + exercises if x["cut"]]        # names and exercises shown whole
    assert [scores[s] for s in seen["before"]] == sorted(scores.values())       # lowest total first
    assert [scores[s] for s in seen["up"]] == sorted(scores.values())
    assert [scores[s] for s in seen["down"]] == sorted(scores.values(), reverse=True)
    assert visible(chromium, page, tmp_path, [seen["grid"]])[0] > 20


def test_student_feedback_shows_failures_first_and_every_heatmap_with_its_legend(chromium, batch_out, tmp_path):
    page = batch_out / "students" / "bug2" / "feedback.html"
    assert_offline(page.read_text())
    seen = probe(chromium, page, tmp_path, STUDENT)
    assert seen["errors"] == [] and seen["scripts"] == 1            # the probe: the report has none
    assert [c["id"] for c in seen["cards"]] == ["attention.causal_mask"]
    assert seen["passed"] and not seen["passed"]["open"] and seen["cards"][0]["y"] < seen["passed"]["y"]
    assert seen["passed"]["rows"] == 1 and seen["passed"]["shown"] == 0     # there, collapsed
    assert len(seen["sets"]) == 1 and seen["folded"] >= 1             # the first failing case; the others folded
    for s in seen["sets"]:
        assert len(s["grids"]) == 3 and s["titled"]                  # yours, expected, the difference
        assert len(s["legends"]) == 2
        for legend in s["legends"]:
            assert "gradient" in legend["image"] and legend["bar"]["w"] > 100 and legend["bar"]["h"] >= 8
            assert re.search(r"\d", legend["ticks"])
    grids = [g for s in seen["sets"] for g in s["grids"]]
    assert all(g["w"] > 20 and g["h"] > 20 for g in grids)
    legends = [lg["bar"] for s in seen["sets"] for lg in s["legends"]]
    spreads = visible(chromium, page, tmp_path, grids + legends)
    assert all(s > 20 for s in spreads), spreads


def test_student_output_cannot_run_script_in_the_feedback(chromium, batch_out, tmp_path):
    page = batch_out / "students" / "xss" / "feedback.html"
    text = page.read_text()
    assert "&lt;script&gt;" in text                                  # shown, as text
    seen = probe(chromium, page, tmp_path)
    assert seen["pwned"] is None and seen["scripts"] == 1 and seen["errors"] == []


def test_no_file_a_student_gets_names_a_folder_of_the_grading_machine(batch_root):
    out = batch_root / "out"
    machine = [str(batch_root), os.path.realpath(batch_root), str(ROOT), os.path.dirname(str(batch_root))]
    files = [p for p in (out / "students").rglob("*") if p.is_file()]
    assert len(files) == 9 * 3                                       # results.json, feedback.html, feedback.md each
    for path in files:
        text = path.read_text(encoding="utf-8")
        for folder in machine:
            assert folder not in text and htmlmod.escape(folder) not in text, (path, folder)
    syntax = (out / "students" / "syntax" / "feedback.html").read_text()
    assert "attention.py" in syntax and "Grading report — syntax" in syntax     # named as the student knows it
    assert "broken.zip: not a readable zip archive" in (out / "students" / "broken" / "feedback.md").read_text()


def test_performance_chart_in_a_browser(chromium, tmp_path):
    from test_batch_class_report import klass

    from grader.frontends.batch.class_report import class_stats, render

    page = tmp_path / "perf_report.html"
    page.write_text(render(class_stats(klass()), "Attention", {}), encoding="utf-8")
    seen = probe(chromium, page, tmp_path)
    perf = [i for i in seen["images"] if i["figure"] == "chart-performance"]
    assert seen["errors"] == [] and len(perf) == 1 and perf[0]["natural"] > 100
    assert visible(chromium, page, tmp_path, [perf[0]["box"]])[0] > 20
