"""The batch's HTML in a real headless browser (Debian's chromium): per-student feedback and the
class report render without errors, their charts and heatmaps are visible on screen, student
output cannot run script, and nothing is fetched from the network.

Each page is checked twice: a copy with a probe script (errors, image loading, element boxes)
through --dump-dom, and the page itself as a screenshot whose chart and heatmap areas must hold a
picture (pixel variance), not blank space. Chromium runs with host resolution disabled, so a page
that needed the network would show broken images. Skipped only if chromium cannot be installed
(scripts/ensure-chromium).
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

from conftest import ROOT
from fixtures.batch.build import make_class, run_batch

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--force-device-scale-factor=1", "--host-resolver-rules=MAP * ~NOTFOUND",
         "--enable-logging=stderr", "--v=0"]
WIDTH = 1280
XSS = "<script>document.body.setAttribute('data-pwned', '1')</script><img src=x onerror=\"document.body.setAttribute('data-pwned', '2')\">"
PROBE = """<script>
window.__errors = [];
window.addEventListener('error', function (e) {
  var t = e.target;
  if (t && t !== window && (t.src || t.href)) { window.__errors.push('failed to load ' + String(t.src || t.href).slice(0, 60)); }
  else { window.__errors.push('error: ' + e.message); }
}, true);
window.addEventListener('unhandledrejection', function (e) { window.__errors.push('rejection: ' + e.reason); });
(function () { var ce = console.error; console.error = function () {
  window.__errors.push('console.error: ' + Array.prototype.join.call(arguments, ' ')); ce.apply(console, arguments); }; })();
window.addEventListener('load', function () {
  function box(el) { var r = el.getBoundingClientRect();
    return {x: r.left + window.scrollX, y: r.top + window.scrollY, w: r.width, h: r.height}; }
  var out = {errors: window.__errors, height: document.documentElement.scrollHeight,
    images: Array.prototype.map.call(document.images, function (i) {
      return {figure: i.closest('figure') ? i.closest('figure').id : '', complete: i.complete, natural: i.naturalWidth, box: box(i)}; }),
    heatmaps: Array.prototype.map.call(document.querySelectorAll('table.grid'), box),
    pwned: document.body.getAttribute('data-pwned'), scripts: document.scripts.length};
  var pre = document.createElement('pre'); pre.id = '__probe'; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


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
def batch_out(tmp_path_factory):
    root = tmp_path_factory.mktemp("browser")
    subs = make_class(root / "subs", {
        "ok": "correct", "ok2": "correct",
        "bug": {"causal_mask": "inverted", "positional_encoding": "swapped"},
        "bug2": {"causal_mask": "transposed"},
        "xss": {"causal_mask": f"def causal_mask(T):\n    print({XSS!r})\n    import torch\n"
                               "    return torch.tril(torch.ones(T, T, dtype=torch.bool))\n"}})
    env = {k: v for k, v in os.environ.items() if k != "GRADER_SECRET_SEED"}
    proc = run_batch(subs, root / "out", "attention.causal_mask", "attention.positional_encoding", env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return root / "out"


def browse(chromium, page: Path, tmp_path: Path, *args: str, height: int = 1000) -> subprocess.CompletedProcess:
    profile = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"
    cmd = [chromium, *FLAGS, f"--user-data-dir={profile}", f"--window-size={WIDTH},{height}",
           "--virtual-time-budget=10000", *args, page.as_uri()]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def probe(chromium, page: Path, tmp_path: Path) -> dict:
    text = page.read_text(encoding="utf-8")
    probed = tmp_path / f"probed-{page.parent.name}-{page.name}"
    probed.write_text(text.replace("<head>", "<head>" + PROBE, 1), encoding="utf-8")
    dom = browse(chromium, probed, tmp_path, "--dump-dom").stdout
    found = re.search(r'<pre id="__probe">(.*?)</pre>', dom, re.S)
    assert found, f"the probe did not run in {page}: {dom[-500:]}"
    return json.loads(htmlmod.unescape(found.group(1)))


def console_errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "CONSOLE" in line and ("Uncaught" in line or "rror" in line)]


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
    seen = probe(chromium, page, tmp_path)
    assert seen["errors"] == [] and seen["scripts"] == 1            # the probe is the only script
    charts = {i["figure"]: i for i in seen["images"]}
    assert set(charts) == {"chart-histogram", "chart-pass-rates", "chart-heatmap"}
    for name, img in charts.items():
        assert img["complete"] and img["natural"] > 100, name
        assert img["box"]["w"] > 200 and img["box"]["h"] > 100, name
    spreads = visible(chromium, page, tmp_path, [i["box"] for i in charts.values()])
    assert all(s > 20 for s in spreads), dict(zip(charts, spreads))


def test_student_feedback_with_heatmaps_in_a_browser(chromium, batch_out, tmp_path):
    page = batch_out / "students" / "bug" / "feedback.html"
    assert_offline(page.read_text())
    seen = probe(chromium, page, tmp_path)
    assert seen["errors"] == [] and seen["scripts"] == 1
    assert len(seen["heatmaps"]) >= 2                                # yours and the reference's mask
    assert all(b["w"] > 20 and b["h"] > 20 for b in seen["heatmaps"])
    spreads = visible(chromium, page, tmp_path, seen["heatmaps"])
    assert all(s > 20 for s in spreads), spreads


def test_student_output_cannot_run_script_in_the_feedback(chromium, batch_out, tmp_path):
    page = batch_out / "students" / "xss" / "feedback.html"
    text = page.read_text()
    assert "&lt;script&gt;" in text                                  # shown, as text
    seen = probe(chromium, page, tmp_path)
    assert seen["pwned"] is None and seen["scripts"] == 1 and seen["errors"] == []


def test_performance_chart_in_a_browser(chromium, tmp_path):
    from test_batch_class_report import klass

    from grader.frontends.batch.class_report import class_stats, render

    page = tmp_path / "perf_report.html"
    page.write_text(render(class_stats(klass()), "Attention", {}), encoding="utf-8")
    seen = probe(chromium, page, tmp_path)
    perf = [i for i in seen["images"] if i["figure"] == "chart-performance"]
    assert seen["errors"] == [] and len(perf) == 1 and perf[0]["natural"] > 100
    assert visible(chromium, page, tmp_path, [perf[0]["box"]])[0] > 20

