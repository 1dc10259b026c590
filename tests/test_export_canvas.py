"""`grader export canvas` against a local Canvas: an HTTP server on 127.0.0.1 that implements the
endpoints the export calls as Instructure documents them (https://canvas.instructure.com/doc/api/):
course and assignment lookups, the course's users and the assignment's submissions paginated by
the Link header, the bulk update (form-encoded grade_data[<user_id>][posted_grade]) answering with a
Progress object polled at /api/v1/progress/:id, and submission comment files (request an upload,
POST the file, PUT the comment). Bearer tokens are checked; a bad one gets 401 with WWW-Authenticate."""
import json
import os
import re
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlparse

import pytest

from conftest import ROOT
from fixtures.lms.graded import FINAL, make_graded

TOKEN = "good-token"
COURSE, ASSIGNMENT = 7, 12
USERS = [{"id": 101, "name": "Ada Lovelace", "sortable_name": "Lovelace, Ada", "sis_user_id": "S001",
          "login_id": "ada"},
         {"id": 102, "name": "Bob Babbage", "sortable_name": "Babbage, Bob", "login_id": "bob.b"},
         {"id": 103, "name": "Cy Young", "sortable_name": "Young, Cy", "login_id": "cyoung", "email": "cy@uni.example"},
         {"id": 104, "name": "Dee Dee", "sortable_name": "Dee, Dee", "login_id": "dee"},
         {"id": 105, "name": "Zed Zeta", "sortable_name": "Zeta, Zed", "login_id": "zed"}]
PAGE = 2          # the server's page size, whatever per_page asks: every list takes several pages


class Canvas:
    """What the fake Canvas knows and what it was asked."""

    def __init__(self):
        self.reset()

    def reset(self):
        self.requests = []            # (method, path, query, form)
        self.scores = {}              # user id -> score
        self.comments = {}            # user id -> text
        self.files = {}               # user id -> uploaded bytes
        self.drop = set()             # user ids whose grades the bulk update loses
        self.jobs = {}                # progress id -> [polls, pending grade_data]


class Handler(BaseHTTPRequestHandler):
    canvas: Canvas = None
    base = ""

    def log_message(self, *args):
        pass

    def _send(self, status, body, headers=()):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _page(self, items, url, query):
        page = int(query.get("page", ["1"])[0])
        chunk = items[(page - 1) * PAGE: page * PAGE]

        def link(n, rel):       # Canvas keeps the request's parameters in its page links
            params = urlencode({**query, "page": [n], "per_page": [PAGE]}, doseq=True)
            return f'<{self.base}{url}?{params}>; rel="{rel}"'
        links = [link(page, "current"), link(1, "first")]
        if page * PAGE < len(items):
            links.append(link(page + 1, "next"))
        self._send(200, chunk, [("Link", ", ".join(links))])

    def _handle(self, method):
        url = urlparse(self.path)
        query = parse_qs(url.query)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        ctype = self.headers.get("Content-Type", "")
        form = parse_qs(body.decode()) if "x-www-form-urlencoded" in ctype else {}
        c = self.canvas
        c.requests.append((method, url.path, query, form))
        if url.path.startswith("/files/upload/"):          # the upload URL: no token (canvasapi sends none)
            uid = int(url.path.rsplit("/", 1)[1])
            assert b'filename="feedback.html"' in body
            c.files[uid] = body
            return self._send(201, {"id": 9000 + uid, "url": f"{self.base}/files/{9000 + uid}/download",
                                    "display_name": "feedback.html", "size": len(body)})
        if url.path.startswith("/login/"):              # a --url that is not Canvas's API: a sign-in page
            page = b"<!DOCTYPE html><html><body>Sign in</body></html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            return self.wfile.write(page)
        if self.headers.get("Authorization") != f"Bearer {TOKEN}":
            return self._send(401, {"errors": [{"message": "Invalid access token."}]},
                              [("WWW-Authenticate", 'Bearer realm="canvas-lms"')])
        a = f"/api/v1/courses/{COURSE}/assignments/{ASSIGNMENT}"
        if method == "GET" and url.path == f"/api/v1/courses/{COURSE}":
            return self._send(200, {"id": COURSE, "name": "Neural networks", "course_code": "NN101"})
        if method == "GET" and url.path == a:
            return self._send(200, {"id": ASSIGNMENT, "course_id": COURSE, "name": "Problem set 1",
                                    "points_possible": 10.0})
        if method == "GET" and url.path == f"/api/v1/courses/{COURSE}/users":
            assert query.get("enrollment_type[]") == ["student"]
            return self._page(USERS, url.path, query)
        if method == "POST" and url.path == f"{a}/submissions/update_grades":
            grades = {int(m.group(1)): v[0] for k, v in form.items()
                      if (m := re.fullmatch(r"grade_data\[(\d+)\]\[posted_grade\]", k))}
            for k, v in form.items():
                if m := re.fullmatch(r"grade_data\[(\d+)\]\[text_comment\]", k):
                    c.comments[int(m.group(1))] = v[0]
            job = len(c.jobs) + 1
            c.jobs[job] = [0, grades]
            return self._send(200, self._progress(job, "queued", 0))
        if method == "GET" and (m := re.fullmatch(r"/api/v1/progress/(\d+)", url.path)):
            job = c.jobs[int(m.group(1))]
            job[0] += 1
            if job[0] < 2:
                return self._send(200, self._progress(int(m.group(1)), "running", 50))
            for uid, grade in job[1].items():
                if uid not in c.drop:
                    c.scores[uid] = float(grade)
            return self._send(200, self._progress(int(m.group(1)), "completed", 100))
        if method == "GET" and url.path == f"{a}/submissions":
            subs = [{"id": 500 + u["id"], "assignment_id": ASSIGNMENT, "user_id": u["id"],
                     "score": c.scores.get(u["id"]), "grade": None if u["id"] not in c.scores else
                     str(c.scores[u["id"]]), "workflow_state": "graded" if u["id"] in c.scores else "unsubmitted"}
                    for u in USERS]
            return self._page(subs, url.path, query)
        if method == "POST" and (m := re.fullmatch(rf"{a}/submissions/(\d+)/comments/files", url.path)):
            assert form["name"] == ["feedback.html"]
            return self._send(200, {"upload_url": f"{self.base}/files/upload/{m.group(1)}",
                                    "upload_params": {"filename": "feedback.html", "content_type": "text/html"}})
        if method == "PUT" and (m := re.fullmatch(rf"{a}/submissions/(\d+)", url.path)):
            assert form["comment[file_ids][]"] == [str(9000 + int(m.group(1)))]
            return self._send(200, {"id": 1, "user_id": int(m.group(1)), "assignment_id": ASSIGNMENT})
        return self._send(404, {"errors": [{"message": "The specified resource does not exist."}]})

    def _progress(self, job, state, completion):
        return {"id": job, "context_id": ASSIGNMENT, "context_type": "Assignment", "user_id": 1,
                "tag": "submissions_update", "completion": completion, "workflow_state": state,
                "created_at": "2026-03-05T10:00:00Z", "updated_at": "2026-03-05T10:00:01Z", "message": None,
                "url": f"{self.base}/api/v1/progress/{job}"}

    def do_GET(self):
        self._handle("GET")

    def do_POST(self):
        self._handle("POST")

    def do_PUT(self):
        self._handle("PUT")


@pytest.fixture(scope="module")
def server():
    canvas = Canvas()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    Handler.canvas, Handler.base = canvas, f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield canvas, Handler.base
    httpd.shutdown()
    httpd.server_close()
    thread.join(5)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    return make_graded(tmp_path_factory.mktemp("lms") / "graded")


@pytest.fixture
def canvas(server):
    server[0].reset()
    return server


def export(graded, url, *args, token=TOKEN, roster=True):
    env = {k: v for k, v in os.environ.items() if not k.startswith("CANVAS_")}
    if token is not None:
        env["CANVAS_API_TOKEN"] = token
    command = [sys.executable, "-m", "grader", "export", "canvas", str(graded), "--course", str(COURSE),
               "--assignment", str(ASSIGNMENT), "--url", url, *args]
    if roster:
        command += ["--roster", str(graded.parent / "roster.csv")]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=env, timeout=120)


BY_ID = {"ada": 101, "bob": 102, "cy": 103, "dee": 104}


def test_final_scores_and_comments_arrive_and_are_read_back(graded, canvas):
    fake, url = canvas
    proc = export(graded, url, "--feedback", "comment")
    assert proc.returncode == 1, proc.stderr        # eve has no grade: not sent, and said
    assert fake.scores == {BY_ID[s]: score for s, score in FINAL.items()}      # bob: 10 raw, 8 after -20 %
    assert "canvas: 4 of 4 grades sent to course 7, assignment 12 read back as sent" in proc.stdout
    assert "not sent, the grader failed on them (no grade; run grader batch again): eve" in proc.stderr
    assert fake.comments[102].startswith("Score: 8 / 10 points (raw 10, late penalty 2)\nsubmitted 2026-03-04")
    assert "- attention.causal_mask: 4 / 4 (passed)" in fake.comments[102]
    paths = [(m, p) for m, p, _, _ in fake.requests]
    assert paths.count(("GET", "/api/v1/courses/7/users")) == 3                 # 5 users, 2 a page
    assert paths.count(("GET", "/api/v1/courses/7/assignments/12/submissions")) == 3
    assert paths.count(("GET", "/api/v1/progress/1")) == 2                      # running, then completed
    assert paths.index(("GET", "/api/v1/progress/1")) < paths.index(("GET", "/api/v1/courses/7/assignments/12/"
                                                                            "submissions"))
    (update,) = [f for m, p, _, f in fake.requests if p.endswith("/update_grades")]
    assert update["grade_data[102][posted_grade]"] == ["8"] and "grade_data[105][posted_grade]" not in update


def test_two_grades_that_do_not_arrive_are_named(graded, canvas):
    fake, url = canvas
    fake.drop = {102, 103}
    proc = export(graded, url)
    assert proc.returncode == 1
    assert "grade did not arrive: Bob Babbage (bob): sent 8, Canvas has no score" in proc.stderr
    assert "grade did not arrive: Cy Young (cy): sent 5, Canvas has no score" in proc.stderr
    assert fake.scores == {101: 8.0, 104: 7.5}
    assert "these students' grades did not arrive: Bob Babbage (bob), Cy Young (cy)" in proc.stderr
    assert "canvas: 2 of 4 grades sent" in proc.stdout


def test_a_bad_token_is_a_clear_error(graded, canvas):
    fake, url = canvas
    proc = export(graded, url, token="expired")
    assert proc.returncode == 2
    assert "refused the token (401 Unauthorized): check CANVAS_API_TOKEN" in proc.stderr
    assert "Traceback" not in proc.stderr and fake.scores == {}


def test_a_url_that_answers_with_a_web_page_says_so(graded, canvas):
    """A sign-in page (or another site) was 'cannot reach Canvas at URL: Expecting value: line 1 column 1'."""
    fake, url = canvas
    proc = export(graded, url + "/login")
    assert proc.returncode == 2, proc.stderr
    assert (f"{url}/login answered, but not with Canvas's API (JSON): a web page, such as a sign-in page or "
            "another site") in proc.stderr
    assert "cannot reach" not in proc.stderr and "Traceback" not in proc.stderr and fake.scores == {}


def test_a_dry_run_makes_no_request(graded, canvas):
    fake, url = canvas
    proc = export(graded, url, "--dry-run", "--feedback", "comment", token=None)
    assert fake.requests == []
    assert "dry run: nothing sent. Would post 4 grades to" in proc.stdout
    assert "Bob Babbage (bob): 8 (login bob.b, comment of" in proc.stdout


def test_feedback_files_are_attached_as_submission_comments(graded, canvas):
    fake, url = canvas
    proc = export(graded, url, "--feedback", "attachment")
    assert "read back as sent" in proc.stdout, proc.stderr
    assert set(fake.files) == set(BY_ID.values())
    bob, ada = fake.files[102].decode(), fake.files[101].decode()
    assert "1 day 23 h late" in bob and "late penalty 2 = <b>8</b> / 10" in bob and "late penalty" not in ada


def test_students_canvas_does_not_know_are_named(graded, canvas, tmp_path):
    fake, url = canvas
    proc = export(graded, url, roster=False)          # grader ids as logins: ada and dee match, bob and cy do not
    assert proc.returncode == 1
    assert set(fake.scores) == {101, 104}
    assert ("not matched to a Canvas user: bob: no student of course 7 has login_id 'bob' or sis_user_id 'bob' or "
            "email 'bob' (not in the roster: pass --roster") in proc.stderr


@pytest.mark.parametrize("args,token,fragment", [
    (("--token", "abc"), TOKEN, "--token is refused: a token on the command line is kept in the shell's history"),
    ((), None, "CANVAS_API_TOKEN is not set"),
])
def test_the_token_comes_only_from_the_environment(graded, canvas, args, token, fragment):
    proc = export(graded, canvas[1], *args, token=token)
    assert proc.returncode == 2 and fragment in proc.stderr and canvas[0].requests == []


def test_plain_http_is_refused_beyond_this_machine(graded):
    proc = export(graded, "http://canvas.example.edu")
    assert proc.returncode == 2 and "plain http would send the token unencrypted; use https://" in proc.stderr


def test_two_students_matched_to_one_canvas_user_stop_the_export_before_anything_is_sent(graded, canvas, tmp_path):
    fake, url = canvas
    roster = tmp_path / "roster.csv"        # ada by her SIS id, bob by the login that is also ada's: user 101
    roster.write_text("student,sis_user_id,login_id\nada,S001,\nbob,,ada\n")
    proc = export(graded, url, "--roster", str(roster), roster=False)
    assert proc.returncode == 2, proc.stderr
    assert ("grader: error: students matched to one Canvas user: ada and bob (Canvas user 101); nothing was sent"
            in proc.stderr) and "Traceback" not in proc.stderr
    assert not [p for m, p, _, _ in fake.requests if m == "POST"] and fake.scores == {}


def test_a_dry_run_refuses_two_students_the_roster_gives_one_login(graded, canvas, tmp_path):
    fake, url = canvas
    roster = tmp_path / "roster.csv"
    roster.write_text("student,login_id\nada,al\nbob,AL\ncy,cy\ndee,dee\n")
    proc = export(graded, url, "--dry-run", "--roster", str(roster), token=None, roster=False)
    assert proc.returncode == 2 and "Would post" not in proc.stdout and fake.requests == []
    assert "students the LMS would take for one person: ada and bob (both login 'al')" in proc.stderr


def test_a_dry_run_names_roster_students_without_a_submission(graded, canvas, tmp_path):
    fake, url = canvas
    roster = tmp_path / "roster.csv"
    roster.write_text("student,login_id\nada,ada\nbob,bob.b\ncy,cy\ndee,dee\nfay\x1b[2J,fay\n")
    proc = export(graded, url, "--dry-run", "--roster", str(roster), token=None, roster=False)
    assert proc.returncode == 1, proc.stderr                          # eve has no grade, as in every export
    assert fake.requests == [] and "Would post 4 grades" in proc.stdout
    assert "1 student of the roster not in this batch (no submission found), so no grade for them: " \
           "fay\\x1b[2J" in proc.stderr, proc.stderr              # roster text shown, its escape made visible


@pytest.mark.parametrize("wait", ["-5", "0", "soon"])
def test_a_wait_that_is_no_time_is_refused(graded, canvas, wait):
    proc = export(graded, canvas[1], "--wait", wait)
    assert proc.returncode == 2 and canvas[0].requests == []
    assert f"argument --wait: '{wait}': expected a number greater than 0" in proc.stderr
