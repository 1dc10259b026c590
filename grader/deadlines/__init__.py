"""Due dates and late penalties, from `[deadline]` in autograde.toml to a penalty on the score.

    config.py   the [deadline] table, validated (DeadlinePolicy); every error names the key and the fix
    times.py    when a submission was handed in, from what the platform recorded: nbgrader's
                timestamp.txt, Gradescope's submission_metadata.json, the committer time of a git
                repository's HEAD, or the instructor's CSV; never a file's modification time
    tables.py   the instructor's CSVs: per-student extensions and submission times
    policy.py   the verdict (Lateness): on time, within grace, late, past the cut-off, or no time
                recorded, with the raw score, the penalty and the final score

Nothing here regrades anything: the penalty is applied to a graded result's score. The batch
(grader.frontends.batch.late) assesses every row on every run, so a changed due date or a new
extension takes effect without regrading.
"""
from grader.deadlines.config import DeadlinePolicy, parse_section
from grader.deadlines.policy import Lateness, LateStatus, assess

__all__ = ["DeadlinePolicy", "LateStatus", "Lateness", "assess", "parse_section"]
