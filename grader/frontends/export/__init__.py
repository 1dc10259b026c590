"""Grades into the learning-management system, from a batch's output folder.

    source.py   the batch's gradebook rows (final scores, after late penalties) and the roster CSV
                that maps the grader's student ids to the LMS's people (SIS id, login, email)
    lms_csv.py  the gradebook import file Canvas, Moodle or Blackboard Learn accepts
    canvas.py   Canvas's REST API through `canvasapi`: bulk update, the Progress polled to the end,
                then every grade read back; a grade that did not arrive is named

Only final scores of graded rows leave: a row the grader failed on (grader_error) is no grade and
is never sent as a 0. Feedback sent along is the student's view the batch wrote (hidden cases
redacted). The token comes from the environment only (CANVAS_API_TOKEN), never a flag or a file.
"""
